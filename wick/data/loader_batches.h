#pragma once
// DataLoaderBatches: a DataLoader as a BatchSource, so that fit and the data-parallel loops
// train on any dataset. Each batch's fields are Batch::fields; the field named
// `input_field` (if present) is also Batch::inputs and `target_field` Batch::targets, so a
// dataset with "input" and "target" fields trains a SupervisedModel as it is, and any other
// batch goes to a user step (SupervisedModel::step) whole.
//
//   DataLoader loader(npz_dataset("train.npz"), {.batch_size = 64, .shuffle = true, .num_workers = 4});
//   DataLoaderBatches train(loader);
//   fit(model, optimizer, train, nullptr, options);
//
// Map-style datasets only (an iterable one has no length before it ends, and the loops
// must know each replica's batch count). For data parallelism set each rank's loader's
// rank and world_size (it then shards itself with a DistributedSampler, wick/data/sampler.h).
#include <string>

#include <wick/data/batch_source.h>
#include <wick/data/data_loader.h>

namespace wick {

class DataLoaderBatches final : public BatchSource {
 public:
  // `loader` must outlive this object. Throws wick::Error for a loader over an iterable dataset.
  explicit DataLoaderBatches(DataLoader& loader, std::string input_field = "input", std::string target_field = "target");

  int64_t num_batches() const override { return loader_.num_batches(); }
  void start_epoch(int64_t epoch) override { loader_.start_epoch(epoch); }
  std::optional<Batch> next() override;

 private:
  DataLoader& loader_;
  std::string input_field_, target_field_;
};

}  // namespace wick
