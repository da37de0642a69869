#pragma once
// Map-style datasets: examples by index, like torch.utils.data.Dataset.
//
// Thread safety: a DataLoader with workers calls get() on one dataset object from several
// threads at once. Implementations must make get() safe to call concurrently (only read
// shared state, or lock what they change); everything here does.
//
// Randomness: the loader calls get(i, seed) with seed = example_seed(loader seed, epoch, i),
// so a random transform or a random crop of example i depends on those three numbers only
// (not on the worker, the batch size or timing). get(i) is get(i, example_seed(0, 0, i)).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <wick/data/dataset.h>
#include <wick/data/example.h>
#include <wick/tensor/tensor.h>

namespace wick {

class MapDataset {
 public:
  virtual ~MapDataset() = default;
  virtual int64_t size() const = 0;
  // Example i in [0, size()). Must be thread-safe (see above).
  virtual Example get(int64_t i) const = 0;
  // Example i for a seeded draw; datasets without randomness ignore the seed. Wrappers
  // (transformed) override it to hand their function the seed.
  virtual Example get(int64_t i, uint64_t /*seed*/) const { return get(i); }
};

// The seed of example `index` in `epoch` for a loader seeded with `seed` (a hash; equal
// inputs give equal seeds on every platform).
uint64_t example_seed(uint64_t seed, int64_t epoch, int64_t index);
// A seed derived from `seed` for a nested stage (so stacked transforms draw independently).
uint64_t derive_seed(uint64_t seed, uint64_t stage);

// Throws "op: index i is out of range for a dataset of n examples" unless 0 <= i < n.
void check_index(const char* op, int64_t i, int64_t n);

// Named in-memory (or memory-mapped) tensors of equal length along dim 0; example i holds
// row i of each as a view (no copy), in the order given.
class TensorDictDataset : public MapDataset {
 public:
  // Throws unless there is at least one field, every tensor is defined, on the CPU, at
  // least 1-d, and all have the same size along dim 0; names must be distinct.
  explicit TensorDictDataset(std::vector<std::pair<std::string, Tensor>> fields);
  using MapDataset::get;
  int64_t size() const override { return size_; }
  Example get(int64_t i) const override;
  const std::vector<std::pair<std::string, Tensor>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, Tensor>> fields_;
  int64_t size_ = 0;
};

// The in-memory Dataset pair as fields "input" and "target".
std::shared_ptr<const MapDataset> as_map_dataset(const Dataset& data);

// Per-example transforms. fn(example, seed) runs inside get(), on the worker thread, with
// the seed of the example (see above). fn must be thread-safe (it is called concurrently).
using ExampleTransform = std::function<Example(Example, uint64_t seed)>;
std::shared_ptr<const MapDataset> transformed(std::shared_ptr<const MapDataset> data, ExampleTransform fn);

// Examples [begin, end) of `data`, renumbered from 0.
std::shared_ptr<const MapDataset> subset(std::shared_ptr<const MapDataset> data, int64_t begin, int64_t end);

}  // namespace wick
