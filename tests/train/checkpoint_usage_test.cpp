// The usage example of wick/train/checkpoint.h, compiled and run (issue 49, item 3: it called
// a loader.state_dict() that did not exist): a loop of one's own with a DataLoader (shuffled,
// two workers) and a GradScaler in the Checkpoint, stopped after a save and resumed, trains
// the same batches to the same parameters, bit for bit, as a run that was not stopped. And
// the loader is kept per rank, the scaler once, in rank 0's file.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include <wick/autograd/nn_ops.h>
#include <wick/data/data_loader.h>
#include <wick/data/map_dataset.h>
#include <wick/optim/grad_scaler.h>
#include <wick/optim/lr_scheduler.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/factories.h>
#include <wick/train/checkpoint.h>

#include "tests/support/reference.h"
#include "tests/support/training_fixture.h"

namespace wick::test {
namespace {

struct Outcome {
  std::vector<double> parameters;
  std::vector<std::vector<int64_t>> batches;  // the targets of every batch this run trained on
  std::vector<double> scales;                 // the loss scale after every step
  int64_t growth_tracker = 0;
};

constexpr int64_t kEpochs = 3;

// One run of the header's example. `stop_after`: the run ends after this many steps of its
// own (a job killed after its last save), or runs to the end when negative.
Outcome run(const std::string& path, int rank, int64_t stop_after) {
  static const auto blobs = training_blobs(60, 5);
  auto model = training_mlp(3);
  SGD optimizer(model->named_parameters(), SGDOptions{.lr = 5e-5, .momentum = 0.9});  // for a loss x 1000
  StepLR scheduler(optimizer, 5, 0.7);
  // A scale that overflows the gradients (of a loss in thousandths) every few steps, so the
  // steps skipped and the scale depend on the scaler's state.
  GradScaler scaler(GradScalerOptions{.init_scale = std::ldexp(1.0, 122), .growth_interval = 1});
  DataLoader loader(as_map_dataset(*blobs), {.batch_size = 8, .shuffle = true, .seed = 21, .num_workers = 2});
  default_generator().manual_seed(99);  // the noise below: the same start in every run
  const int64_t epochs = kEpochs, save_every = 5;
  Outcome out;

  // ---- wick/train/checkpoint.h's example, from here ----
  int64_t step = 0;
  Checkpoint ckpt;
  ckpt.add("model", *model).add("optimizer", optimizer).add("scheduler", scheduler)
      .add("step", step).add("rng", default_generator()).add("loader", loader).add("scaler", scaler);
  if (ckpt.load(path, rank)) std::printf("resumed at step %lld\n", (long long)step);
  for (int64_t epoch = loader.state().epoch; epoch < epochs; ++epoch) {
    loader.start_epoch(epoch);  // after a load: the saved epoch goes on where it stopped
    while (std::optional<Example> batch = loader.next()) {
      // ... the step:
      const Tensor noise = mul(randn(batch->at("input").shape()), 0.1);  // default_generator()
      Variable loss =
          cross_entropy(model->forward(Variable(add(batch->at("input"), noise))), batch->at("target")) * 1000.0;
      optimizer.zero_grad();
      scaler.scale(loss).backward();
      scaler.step(optimizer);
      scaler.update();
      scheduler.step();
      out.batches.push_back(batch->at("target").to_vector<int64_t>());
      out.scales.push_back(scaler.get_scale());
      ++step;
      if (step % save_every == 0) ckpt.save(path, rank);  // on every rank
      if (static_cast<int64_t>(out.batches.size()) == stop_after) return out;
    }
  }
  // ---- to here ----

  out.parameters = flat_parameters(*model);
  out.growth_tracker = scaler.growth_tracker();
  return out;
}

TEST(CheckpointUsage, TheHeadersExampleResumesBitForBitWithTheLoaderAndTheScaler) {
  const std::string path = temp_path("ckpt_usage", "run.ckpt");
  std::filesystem::remove(path);
  const Outcome straight = run(path, 0, -1);
  std::filesystem::remove(path);
  ASSERT_EQ(straight.batches.size(), static_cast<size_t>(kEpochs * 8));  // 60 examples in batches of 8

  // Killed at step 13 (epoch 1, batch 5): the last save was at step 10 (epoch 1, batch 2).
  const Outcome killed = run(path, 0, 13);
  ASSERT_EQ(killed.batches.size(), 13u);
  const Outcome resumed = run(path, 0, -1);
  // The resumed run trains exactly the batches after step 10, in the same order...
  EXPECT_EQ(resumed.batches, std::vector<std::vector<int64_t>>(straight.batches.begin() + 10, straight.batches.end()));
  // ... with the same loss scales, to the same parameters.
  EXPECT_EQ(resumed.scales, std::vector<double>(straight.scales.begin() + 10, straight.scales.end()));
  EXPECT_EQ(resumed.parameters, straight.parameters);
  EXPECT_EQ(resumed.growth_tracker, straight.growth_tracker);
  int backoffs = 0;
  for (size_t i = 1; i < straight.scales.size(); ++i) backoffs += straight.scales[i] < straight.scales[i - 1];
  EXPECT_GT(backoffs, 0) << "some steps should have overflowed, so that the scaler's state matters";
  std::filesystem::remove(path);
}

// The loader's part is per rank (each rank is at its own shard's position) and the scaler's
// shared (written once, by rank 0).
TEST(CheckpointUsage, TheLoaderIsKeptPerRankAndTheScalerOnce) {
  const std::string path = temp_path("ckpt_usage", "ranks.ckpt");
  auto data = as_map_dataset(*training_blobs(40, 5));
  std::vector<LoaderState> saved;
  for (int rank = 0; rank < 2; ++rank) {
    DataLoader loader(data, {.batch_size = 4, .shuffle = true, .seed = 3, .rank = rank, .world_size = 2});
    GradScaler scaler(GradScalerOptions{.init_scale = 256});
    loader.start_epoch(1);
    for (int k = 0; k <= rank; ++k) ASSERT_TRUE(loader.next().has_value());  // rank r is at batch r + 1
    saved.push_back(loader.state());
    Checkpoint ckpt;
    ckpt.add("loader", loader).add("scaler", scaler);
    ckpt.save(path, rank);
  }
  const TensorMap rank0 = load_safetensors(path), rank1 = load_safetensors(Checkpoint::rank_path(path, 1));
  EXPECT_TRUE(rank0.count("scaler.scale") && rank0.count("loader.batches"));
  EXPECT_TRUE(rank1.count("loader.batches"));
  EXPECT_FALSE(rank1.count("scaler.scale")) << "the shared scaler is written by rank 0 only";
  for (int rank = 0; rank < 2; ++rank) {
    DataLoader loader(data, {.batch_size = 4, .shuffle = true, .seed = 3, .rank = rank, .world_size = 2});
    GradScaler scaler(GradScalerOptions{.init_scale = 1});
    Checkpoint ckpt;
    ckpt.add("loader", loader).add("scaler", scaler);
    ASSERT_TRUE(ckpt.load(path, rank));
    EXPECT_EQ(loader.state().epoch, saved[rank].epoch);
    EXPECT_EQ(loader.state().batches, saved[rank].batches);
    EXPECT_EQ(scaler.get_scale(), 256);
  }
  std::filesystem::remove(path);
  std::filesystem::remove(Checkpoint::rank_path(path, 1));
}

// A loader of another batch size is refused by name, and Checkpoint::load puts back every
// part it had already loaded.
TEST(CheckpointUsage, ALoaderThatWouldReadOtherExamplesIsRefused) {
  const std::string path = temp_path("ckpt_usage", "refused.ckpt");
  auto data = as_map_dataset(*training_blobs(40, 5));
  {
    DataLoader loader(data, {.batch_size = 4});
    int64_t step = 7;
    loader.start_epoch(2, 3);
    Checkpoint ckpt;
    ckpt.add("step", step).add("loader", loader);
    ckpt.save(path);
  }
  DataLoader other(data, {.batch_size = 5});
  int64_t step = 0;
  Checkpoint ckpt;
  ckpt.add("step", step).add("loader", other);
  expect_error([&] { ckpt.load(path); }, {"part 'loader'", "batch_size 4", "this one has 5"});
  EXPECT_EQ(step, 0);  // put back
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace wick::test
