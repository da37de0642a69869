// wick_bench_pipeline: how much of the time each pipeline stage works, and the throughput,
// for the naive schedule (the whole batch through one stage after another) and for GPipe
// and 1F1B over micro-batches. Ranks are threads of this process talking over Gloo; each
// stage's compute is an artificial cost (a sleep proportional to the examples, forward and
// backward), so the numbers show the schedules, not this machine's cores.
//
//   wick_bench_pipeline [--stages 3] [--batch 64] [--forward-us 250] [--backward-us 500]
//                       [--steps 5] [--micro-batches 1,2,4,8,16]
//
// Theory for GPipe with p stages, m micro-batches and equal stages: each stage idles
// (p - 1) / (m + p - 1) of the step; the naive schedule is m = 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/distributed/comm/in_process_store.h>
#include <wick/distributed/control/in_process_control.h>
#include <wick/distributed/pipeline/pipeline.h>
#include <wick/optim/sgd.h>
#include <wick/nn/linear.h>
#include <wick/tensor/factories.h>

using namespace wick;
using namespace wick::distributed;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  int stages = 3;
  int64_t batch = 64;
  int64_t forward_us = 250;   // per example, per stage
  int64_t backward_us = 500;  // per example, per stage
  int steps = 5;
  std::vector<int64_t> micro_batches = {1, 2, 4, 8, 16};
};

// Sleeps `us` microseconds per example and adds the time to `busy`.
void work(int64_t examples, int64_t us, double& busy) {
  auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::microseconds(examples * us));
  busy += std::chrono::duration<double>(Clock::now() - start).count();
}

class CostBackward final : public Node {
 public:
  CostBackward(int64_t examples, int64_t us, double* busy) : examples_(examples), us_(us), busy_(busy) {}
  const char* name() const override { return "CostBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    work(examples_, us_, *busy_);
    return {g[0]};
  }

 private:
  int64_t examples_, us_;
  double* busy_;
};

// The identity with an artificial cost forward and backward: one stage's compute.
class Cost final : public UnaryModule {
 public:
  Cost(int64_t forward_us, int64_t backward_us) : forward_us_(forward_us), backward_us_(backward_us) {}
  Variable forward(const Variable& x) override {
    const int64_t n = x.shape()[0];
    work(n, forward_us_, busy);
    Variable out(x.data());
    if (needs_grad({&x})) connect(std::make_shared<CostBackward>(n, backward_us_, &busy), {&x}, {&out});
    return out;
  }
  double busy = 0;  // seconds of compute so far

 private:
  int64_t forward_us_, backward_us_;
};

struct Result {
  std::vector<double> busy, idle;  // by stage
  double seconds_per_step = 0;
};

Result run(const Config& c, int64_t micro_batches, PipelineModel::Schedule schedule) {
  InProcessStore store;
  InProcessControl control(c.stages);
  Result result;
  result.busy.resize(c.stages);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < c.stages; ++rank)
    threads.emplace_back([&, rank] {
      auto comm = make_communicator(store, rank, c.stages, Device::cpu());
      // Per stage: a small Linear (so there is something to step) and the cost.
      std::vector<StagedLayer> layers;
      std::vector<std::shared_ptr<Cost>> costs;
      std::vector<size_t> starts;
      for (int s = 0; s < c.stages; ++s) {
        starts.push_back(layers.size());
        layers.push_back({std::make_shared<Linear>(16, 16)});
        costs.push_back(std::make_shared<Cost>(c.forward_us, c.backward_us));
        layers.push_back({costs.back()});
      }
      InProcessControl::Endpoint end = control.endpoint(rank);
      PipelineModel model(*comm, end.get(), layers, starts, Device::cpu());
      SGD sgd(model.named_parameters(), SGDOptions{.lr = 0.01});
      if (rank != 0) {
        model.serve(sgd);
        result.busy[rank] = costs[rank]->busy;
        return;
      }
      Tensor x = randn({c.batch, 16}), y = randn({c.batch, 16});
      auto mse = [](const Variable& out, const Variable& t) { return mean(mul(sub(out, t), sub(out, t))); };
      auto start = Clock::now();
      for (int s = 0; s < c.steps; ++s) {
        model.train_step(x, y, mse, micro_batches, schedule);
        model.step(sgd);
      }
      result.seconds_per_step = std::chrono::duration<double>(Clock::now() - start).count() / c.steps;
      result.busy[0] = costs[0]->busy;
      model.stop();
    });
  for (auto& t : threads) t.join();
  for (double busy : result.busy) result.idle.push_back(1 - busy / (c.steps * result.seconds_per_step));
  return result;
}

std::vector<int64_t> parse_list(const char* text) {
  std::vector<int64_t> out;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    out.push_back(std::strtoll(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p) break;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--stages") c.stages = std::atoi(v);
    else if (flag == "--batch") c.batch = std::atoll(v);
    else if (flag == "--forward-us") c.forward_us = std::atoll(v);
    else if (flag == "--backward-us") c.backward_us = std::atoll(v);
    else if (flag == "--steps") c.steps = std::atoi(v);
    else if (flag == "--micro-batches") c.micro_batches = parse_list(v);
    else {
      std::fprintf(stderr, "wick_bench_pipeline: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (c.stages < 2 || c.batch < 1 || c.steps < 1) {
    std::fprintf(stderr, "wick_bench_pipeline: needs --stages >= 2, --batch >= 1, --steps >= 1\n");
    return 2;
  }
  std::printf("%d stages, batch %lld, %lld us forward + %lld us backward per example and stage, %d steps\n",
              c.stages, static_cast<long long>(c.batch), static_cast<long long>(c.forward_us),
              static_cast<long long>(c.backward_us), c.steps);
  std::printf("%-9s %4s %12s %10s %8s  idle per stage\n", "schedule", "m", "examples/s", "speed-up", "theory");
  double naive = 0;
  for (auto [schedule, name] : {std::pair{PipelineModel::Schedule::GPipe, "GPipe"},
                                std::pair{PipelineModel::Schedule::OneFOneB, "1F1B"}})
    for (int64_t m : c.micro_batches) {
      Result r = run(c, m, schedule);
      const double throughput = static_cast<double>(c.batch) / r.seconds_per_step;
      if (naive == 0 && m == 1) naive = throughput;
      const double theory = static_cast<double>(c.stages - 1) / static_cast<double>(m + c.stages - 1);
      std::printf("%-9s %4lld %12.1f %9.2fx %8.3f ", m == 1 ? "naive" : name, static_cast<long long>(m), throughput,
                  naive > 0 ? throughput / naive : 0.0, theory);
      for (double idle : r.idle) std::printf(" %.3f", idle);
      std::printf("\n");
    }
  return 0;
}
