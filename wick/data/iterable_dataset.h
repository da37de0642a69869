#pragma once
// Iterable datasets: streams of examples (torch.utils.data.IterableDataset), for data that
// is read in order rather than by index. The loader opens one stream per worker and tells
// it which shard it is; the dataset must split itself so that every example of an epoch is
// produced by exactly one (rank, worker) pair, and must make the stream a function of the
// shard (including seed and epoch) only, so that runs repeat.
#include <cstdint>
#include <memory>
#include <optional>

#include <wick/data/example.h>

namespace wick {

// Which part of an epoch a stream produces: worker `worker` of `num_workers` on rank `rank`
// of `world_size`. index() in [0, count()) numbers the parts.
struct Shard {
  int64_t rank = 0, world_size = 1;
  int64_t worker = 0, num_workers = 1;
  uint64_t seed = 0;
  int64_t epoch = 0;
  int64_t index() const { return rank * num_workers + worker; }
  int64_t count() const { return world_size * num_workers; }
};

// One shard's examples, in order; used by one thread at a time.
class ExampleStream {
 public:
  virtual ~ExampleStream() = default;
  // The next example, or nullopt at the end of the shard.
  virtual std::optional<Example> next() = 0;
};

class IterableDataset {
 public:
  virtual ~IterableDataset() = default;
  // Opens the stream of `shard`. Called from each worker thread at once: must be
  // thread-safe; each returned stream is then used by its worker alone.
  virtual std::unique_ptr<ExampleStream> open(const Shard& shard) const = 0;
};

}  // namespace wick
