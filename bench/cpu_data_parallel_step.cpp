// The gradient path of data-parallel training on the CPU: two replicas on threads
// (local_data_parallel_training) train a linear layer of 2048 x 2048 (16 MB of float32
// gradients per replica) on batches of 2 examples, so that the time goes to what happens
// to the gradients between the backward and the step (copies into and out of the buckets,
// the all-reduce, the scaling to means) more than to the arithmetic. One epoch of 8 steps
// per iteration; only the public training API is used, so the same file times any version
// of the library. Bytes: the gradients, once per step per replica.
#include <omp.h>

#include <wick/distributed/data_parallel/distributed_training.h>
#include <wick/wick.h>

#include "bench/bench_support.h"

namespace wick::bench {
namespace {

void data_parallel_epoch(benchmark::State& s) {
  guarded(s, [&] {
    const int64_t features = sized(2048, 8), steps = 8, replicas = 2, batch = 2;
    manual_seed(0);
    auto data = std::make_shared<Dataset>(randn({steps * replicas * batch, features}),
                                          randint(0, features, {steps * replicas * batch}));
    std::vector<std::shared_ptr<Linear>> layers;
    std::vector<std::unique_ptr<BatchStream>> streams;
    std::vector<distributed::LocalReplica> locals;
    for (int64_t r = 0; r < replicas; ++r) {
      layers.push_back(std::make_shared<Linear>(features, features));
      streams.push_back(std::make_unique<BatchStream>(
          data, BatchStreamOptions{.batch_size = batch, .shuffle = false, .rank = r, .world_size = replicas}));
      locals.push_back({classifier(layers.back()), streams.back().get(), nullptr});
    }
    LoopOptions options;
    options.max_epochs = 1;
    options.log_epochs = false;
    options.trainer.progress = Progress::Style::Off;
    auto make_sgd = [](Module& m) -> std::unique_ptr<Optimizer> {
      return std::make_unique<SGD>(m.named_parameters(), SGDOptions{.lr = 1e-3});
    };
    for (auto _ : s) distributed::local_data_parallel_training(locals, make_sgd, options);
    const double gradient_bytes = static_cast<double>(features * (features + 1)) * sizeof(float);
    report_bytes(s, gradient_bytes * static_cast<double>(steps * replicas));
    s.counters["omp_threads"] = omp_get_max_threads();
    s.SetLabel("replicas=2 features=" + std::to_string(features) + " batch=2 steps=8");
  });
}

const bool registered = [] {
  benchmark::RegisterBenchmark("cpu/data_parallel_epoch/linear2048/float32", data_parallel_epoch)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace wick::bench
