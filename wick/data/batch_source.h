#pragma once
// BatchSource: what the training loops (fit, the local and distributed data-parallel loops)
// read batches from. A BatchStream is one (tensor pairs held in memory); a DataLoader over
// any dataset becomes one through DataLoaderBatches (wick/data/loader_batches.h).
#include <cstdint>
#include <optional>

#include <wick/data/example.h>
#include <wick/tensor/tensor.h>

namespace wick {

struct Batch {
  Tensor inputs;   // what a module's forward takes (the supervised form)
  Tensor targets;  // what the loss compares the output with
  Tensor indices;  // int64 [B] on the CPU: the dataset index of each example, when known
  Example fields;  // a DataLoader's batch, every field by name (see DataLoaderBatches)
  // Examples in the batch: dim 0 of `inputs`, else of the first field that has a dim.
  int64_t size() const;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // This epoch's batches on this replica (the loops run every replica for as many rounds as
  // the one with the most has, so replicas may differ by a batch).
  virtual int64_t num_batches() const = 0;
  // Starts (or restarts) `epoch`; the order of a shuffled source is a function of its seed
  // and the epoch.
  virtual void start_epoch(int64_t epoch) = 0;
  // The next batch of the epoch, or nullopt after the last.
  virtual std::optional<Batch> next() = 0;
};

}  // namespace wick
