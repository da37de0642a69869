// wick_bench_daso: DASO against plain data parallelism when the link between the nodes is
// slow. 4 ranks (threads over Gloo) as 2 nodes x 2; the traffic that crosses nodes goes
// through a ThrottledCommunicator (a latency plus a bandwidth): all of plain data
// parallelism's gradient all-reduce, DASO's cross-node groups only. Reports time per epoch,
// accuracy after each epoch and the time to reach a target accuracy.
//
//   wick_bench_daso [--latency-us 2000] [--mbytes-per-s 20] [--epochs 6] [--target 0.62]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <wick/distributed/data_parallel/daso.h>
#include <wick/distributed/comm/in_process_store.h>
#include <wick/distributed/comm/throttled_communicator.h>
#include <wick/wick.h>

using namespace wick;
using namespace wick::distributed;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  int64_t latency_us = 2000;
  double mbytes_per_s = 20;
  int epochs = 6;
  double target = 0.62;
};

// Gaussian blobs: 8 classes in 32 dimensions, close enough together that accuracy climbs
// over several epochs.
std::shared_ptr<Dataset> blobs(int64_t n, uint64_t seed) {
  Generator g(seed);
  Generator centres_g(99);
  Tensor centres = mul(randn({8, 32}, {}, &centres_g), 0.3);
  Tensor labels = randint(0, 8, {n}, DType::Int64, &g);
  Tensor x = randn({n, 32}, {}, &g);
  std::vector<int64_t> l = labels.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) x.select(0, i).add_(centres.select(0, l[i]));
  return std::make_shared<Dataset>(x, labels);
}

struct Curve {
  std::vector<double> seconds, accuracy;  // cumulative time, accuracy after each epoch
};

Curve run(const Config& c, bool daso) {
  auto train_set = blobs(16384, 1), test_set = blobs(4096, 2);
  InProcessStore store;
  Curve curve;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 4; ++rank)
    threads.emplace_back([&, rank] {
      auto world = make_communicator(store, rank, 4, Device::cpu());
      Generator init(5);
      auto net = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
          std::make_shared<Linear>(32, 512, true, Options{}, &init), std::make_shared<ReLU>(),
          std::make_shared<Linear>(512, 512, true, Options{}, &init), std::make_shared<ReLU>(),
          std::make_shared<Linear>(512, 8, true, Options{}, &init)});
      SupervisedModel model = classifier(net);
      SGD sgd(net->named_parameters(), SGDOptions{.lr = 0.05, .momentum = 0.9});
      BatchStream train(train_set, {.batch_size = 64, .seed = 3, .rank = rank, .world_size = 4});
      const auto latency = std::chrono::microseconds(c.latency_us);
      const double bandwidth = c.mbytes_per_s * 1e6;
      std::unique_ptr<DistributedSync> sync;
      std::unique_ptr<Communicator> slow_world;
      if (daso) {
        sync = std::make_unique<DasoSync>(
            *world, store, *net, DasoOptions{.total_epochs = c.epochs, .warmup_epochs = 1, .cooldown_epochs = 1},
            node_topology(*world, rank % 2, 2), std::chrono::seconds(60), [&](std::unique_ptr<Communicator> g) {
              return std::make_unique<ThrottledCommunicator>(std::move(g), latency, bandwidth);
            });
      } else {
        slow_world = std::make_unique<ThrottledCommunicator>(std::move(world), latency, bandwidth);
        sync = std::make_unique<DataParallelSync>(*slow_world, *net);
      }
      Trainer trainer(model, &sgd, *sync, {.progress = Progress::Style::Off});
      SingleReplica alone(*net);
      Trainer tester(model, &sgd, alone, {.progress = Progress::Style::Off});  // evaluates only
      BatchStream test(test_set, {.batch_size = 1024, .shuffle = false});
      double total = 0;
      for (int e = 0; e < c.epochs; ++e) {
        auto start = Clock::now();
        trainer.train_epoch(train, e);
        total += std::chrono::duration<double>(Clock::now() - start).count();
        if (rank == 0) {
          EpochStats s = tester.evaluate(test, e);
          curve.seconds.push_back(total);
          curve.accuracy.push_back(static_cast<double>(s.correct) / static_cast<double>(s.examples));
        }
      }
    });
  for (auto& t : threads) t.join();
  return curve;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--latency-us") c.latency_us = std::atoll(v);
    else if (flag == "--mbytes-per-s") c.mbytes_per_s = std::atof(v);
    else if (flag == "--epochs") c.epochs = std::atoi(v);
    else if (flag == "--target") c.target = std::atof(v);
    else {
      std::fprintf(stderr, "wick_bench_daso: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (c.epochs < 3 || c.mbytes_per_s <= 0 || c.latency_us < 0) {
    std::fprintf(stderr, "wick_bench_daso: needs --epochs >= 3, --mbytes-per-s > 0, --latency-us >= 0\n");
    return 2;
  }
  std::printf("4 ranks as 2 nodes x 2; cross-node link: %lld us latency, %.1f MB/s; %d epochs\n",
              static_cast<long long>(c.latency_us), c.mbytes_per_s, c.epochs);
  for (bool daso : {false, true}) {
    Curve curve = run(c, daso);
    std::printf("%-24s", daso ? "DASO" : "plain data parallelism");
    double reached = -1;
    for (size_t e = 0; e < curve.seconds.size(); ++e) {
      std::printf("  e%zu %.1fs %.3f", e + 1, curve.seconds[e], curve.accuracy[e]);
      if (reached < 0 && curve.accuracy[e] >= c.target) reached = curve.seconds[e];
    }
    if (reached >= 0)
      std::printf("  | %.3f reached after %.1f s\n", c.target, reached);
    else
      std::printf("  | %.3f not reached\n", c.target);
  }
  return 0;
}
