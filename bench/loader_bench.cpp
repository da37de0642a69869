// Does the multi-worker DataLoader keep a slow dataset from starving training? (issue 23)
// One CNN training step per iteration (the Fashion-MNIST example's CNN, batch 64, SGD),
// its batch taken from:
//   in_memory      a BatchStream over tensors in memory (the baseline),
//   slow_get/W     a DataLoader with W workers over a dataset whose get() takes 1 ms per
//                  example (a sleep: a decoder or a remote read that leaves the CPU free),
// so a batch costs 64 ms of get() on one thread and about 64 / W ms with W workers. With 4
// workers and prefetch 8 the step should stay within 10% of in_memory wherever the step
// itself takes longer than 16 ms; with 0 workers it pays the 64 ms in full.
// Beside them, mnist_mlp_step: one step of the example's MLP (784-256-128-10, batch 128,
// AdamW as examples/mnist trains it) on batches in memory, the small step whose time is
// the library's own overhead and its elementwise loops more than matrix products (issue 49
// compares it between the portable and the -DWICK_NATIVE=ON builds).
//
//   build/bench/wick_bench_loader --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include <wick/wick.h>

namespace wick::bench {
namespace {

constexpr int64_t kBatch = 64, kExamples = 64 * 64;

std::shared_ptr<UnaryModule> cnn(Generator& g) {
  Conv2dOptions same{.padding = 1};
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Conv2d>(1, 32, 3, same, Options{}, &g), std::make_shared<BatchNorm2d>(32),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
      std::make_shared<Conv2d>(32, 64, 3, same, Options{}, &g), std::make_shared<BatchNorm2d>(64),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
      std::make_shared<Linear>(64 * 7 * 7, 128, true, Options{}, &g), std::make_shared<ReLU>(),
      std::make_shared<Linear>(128, 10, true, Options{}, &g)});
}

// Images and labels in memory, as the examples hold Fashion-MNIST.
std::shared_ptr<Dataset> images() {
  manual_seed(1);
  return std::make_shared<Dataset>(rand({kExamples, 1, 28, 28}), randint(0, 10, {kExamples}));
}

// The same examples, each get() taking 1 ms.
class SlowImages : public MapDataset {
 public:
  explicit SlowImages(std::shared_ptr<Dataset> data) : data_(std::move(data)) {}
  using MapDataset::get;
  int64_t size() const override { return data_->size(); }
  Example get(int64_t i) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Example{{"input", data_->inputs[i]}, {"target", data_->targets[i]}};
  }

 private:
  std::shared_ptr<Dataset> data_;
};

// Training steps of `net` on batches of `batch` examples from `source`, starting its epoch
// again whenever it ends.
void train_steps(benchmark::State& s, BatchSource& source, UnaryModule& net, Optimizer& opt, int64_t batch) {
  net.train();
  for (auto _ : s) {
    std::optional<Batch> b = source.next();
    if (!b) {
      source.start_epoch(0);
      b = source.next();
    }
    opt.zero_grad();
    cross_entropy(net.forward(Variable(b->inputs)), b->targets).backward();
    opt.step();
  }
  s.counters["examples_per_second"] =
      benchmark::Counter(static_cast<double>(s.iterations() * batch), benchmark::Counter::kIsRate);
}

// The CNN's steps (SGD with momentum).
void train_steps(benchmark::State& s, BatchSource& source) {
  Generator g(2);
  auto net = cnn(g);
  SGD opt(net->named_parameters(), SGDOptions{.lr = 0.01, .momentum = 0.9});
  train_steps(s, source, *net, opt, kBatch);
}

void in_memory(benchmark::State& s) {
  BatchStream stream(images(), {.batch_size = kBatch, .seed = 3, .drop_last = true});
  train_steps(s, stream);
}

void slow_get(benchmark::State& s) {
  auto data = std::make_shared<SlowImages>(images());
  DataLoader loader(
      data,
      {.batch_size = kBatch, .shuffle = true, .seed = 3, .drop_last = true, .num_workers = s.range(0), .prefetch = 8});
  DataLoaderBatches batches(loader);
  train_steps(s, batches);
}

void mnist_mlp_step(benchmark::State& s) {
  constexpr int64_t batch = 128;
  BatchStream stream(images(), {.batch_size = batch, .seed = 3, .drop_last = true});
  Generator g(2);
  auto net = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(784, 256, true, Options{}, &g), std::make_shared<ReLU>(),
      std::make_shared<Linear>(256, 128, true, Options{}, &g), std::make_shared<ReLU>(),
      std::make_shared<Linear>(128, 10, true, Options{}, &g)});
  AdamW opt(net->named_parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 1e-4});
  train_steps(s, stream, *net, opt, batch);
}

BENCHMARK(mnist_mlp_step)->Name("cpu/mnist_mlp_step")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(in_memory)->Name("cpu/loader_cnn_step/in_memory")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(slow_get)
    ->Name("cpu/loader_cnn_step/slow_get")
    ->Arg(0)
    ->Arg(4)
    ->ArgName("workers")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wick::bench

BENCHMARK_MAIN();
