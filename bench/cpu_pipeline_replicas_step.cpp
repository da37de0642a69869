// The gradient path of pipeline x data parallelism on the CPU: 2 stages x 2 replicas on 4
// threads over Gloo, each stage two linear layers of 1024 x 1024 (8 MB of float32 gradients
// per stage), batches of 2 examples, so that the time goes to what happens to the gradients
// between the backward and the step (the sum over the replicas, the division to means) more
// than to the arithmetic. One epoch of 8 steps per iteration through fit_pipeline, timed on
// replica 0's rank 0 from the first step to the last (the communicators and links are set
// up outside the time). Only the public API is used, so the same file times any version.
#include <chrono>
#include <thread>

#include <wick/distributed/comm/in_process_store.h>
#include <wick/distributed/control/in_process_control.h>
#include <wick/distributed/comm/subgroup.h>
#include <wick/distributed/pipeline/pipeline.h>
#include <wick/wick.h>

#include "bench/bench_support.h"

namespace wick::bench {
namespace {

using namespace wick::distributed;

void pipeline_replicas_epoch(benchmark::State& s) {
  guarded(s, [&] {
    const int64_t features = sized(1024, 8), steps = 8, replicas = 2, batch = 2;
    manual_seed(0);
    auto data = std::make_shared<Dataset>(randn({steps * replicas * batch, features}),
                                          randn({steps * replicas * batch, features}));
    auto mse = [](const Variable& y, const Tensor& t) { return mse_loss(y, Variable(t)); };
    for (auto _ : s) {
      InProcessStore store;
      InProcessControl controls[2] = {InProcessControl(2), InProcessControl(2)};  // one per replica
      double seconds = 0;
      std::vector<std::thread> threads;
      for (int rank = 0; rank < 4; ++rank)
        threads.emplace_back([&, rank] {
          const int replica = rank / 2, stage = rank % 2;
          std::unique_ptr<Communicator> pipelines[2], stages[2];
          for (int r = 0; r < 2; ++r) pipelines[r] = new_group(store, rank, 4, {2 * r, 2 * r + 1}, Device::cpu());
          for (int g = 0; g < 2; ++g) stages[g] = new_group(store, rank, 4, {g, 2 + g}, Device::cpu());
          InProcessControl::Endpoint control = controls[replica].endpoint(stage);
          Generator g(3);
          std::vector<StagedLayer> layers;
          for (int i = 0; i < 4; ++i) layers.push_back({std::make_shared<Linear>(features, features, true, Options(), &g)});
          auto model = std::make_shared<PipelineModel>(*pipelines[replica], control.get(), layers,
                                                       std::vector<size_t>{0, 2}, Device::cpu());
          model->set_replicas(stages[stage].get());
          SGD sgd(model->named_parameters(), SGDOptions{.lr = 1e-3});
          if (stage != 0) {
            fit_pipeline(model, {}, sgd, nullptr, nullptr, {});
            return;
          }
          BatchStream shard(data, {.batch_size = batch, .shuffle = false, .rank = replica, .world_size = replicas});
          LoopOptions o;
          o.max_epochs = 1;
          o.log_epochs = false;
          o.trainer.progress = Progress::Style::Off;
          const auto start = std::chrono::steady_clock::now();
          fit_pipeline(model, mse, sgd, &shard, nullptr, o);
          if (replica == 0) seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          model->stop();
        });
      for (auto& t : threads) t.join();
      s.SetIterationTime(seconds);
    }
    const double stage_gradient_bytes = 2.0 * static_cast<double>(features * (features + 1)) * sizeof(float);
    report_bytes(s, stage_gradient_bytes * 2 * static_cast<double>(steps * replicas));
    s.SetLabel("stages=2 replicas=2 features=" + std::to_string(features) + " batch=2 steps=8");
  });
}

const bool registered = [] {
  benchmark::RegisterBenchmark("cpu/pipeline_replicas_epoch/linear1024x4/float32", pipeline_replicas_epoch)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace wick::bench
