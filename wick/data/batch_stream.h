#pragma once
// BatchStream: one epoch at a time over an in-memory Dataset, in batches, shuffled with a
// seed, sharded over the ranks of a data-parallel job, optionally transformed and prepared
// ahead on a background thread, and delivered on a device.
//
// Order and sharding (the distributed equivalence tests depend on this rule):
//   - Each epoch has one permutation of all N example indices, a function of (seed, epoch)
//     only (std::mt19937_64 seeded from both): every rank computes the same one. Without
//     shuffling it is 0, 1, ..., N-1.
//   - Rank r of W takes positions r, r + W, r + 2W, ... of it; its batch k is its positions
//     [k B, (k + 1) B). So the ranks' shards are disjoint and cover the data, and the union
//     over ranks of batch k is exactly positions [k B W, (k + 1) B W) of the permutation:
//     one process with batch size B W sees the same examples in its batch k.
//   - drop_last drops a rank's last batch when it has fewer than B examples; otherwise that
//     batch is smaller. Ranks may have different numbers of batches (up to one apart).
//   - The transform of batch k gets the seed f(seed, epoch, k): it does not depend on the
//     rank's thread, the prefetch depth or when the batch is made. (Random transforms that
//     draw per position in the batch therefore differ between one batch of B W and W
//     batches of B; use Batch::indices for per-example randomness if that matters.)
//
// Prefetching: with prefetch > 0 a background thread prepares up to `prefetch` batches
// ahead into a bounded queue. start_epoch() and the destructor stop and join it; an
// exception on that thread (in the transform, say) is re-thrown by next() after the batches
// made before it, and the epoch ends there.
//
// CUDA delivery: batches are staged in pinned host memory and copied asynchronously on a
// separate stream; next() makes the calling thread's current stream wait for that copy (no
// host block). The device memory belongs to the stream that was current when start_epoch()
// was called (normally the default one); a batch taken by next() on another stream is marked
// as used there (cuda::record_stream), so its memory is not reused before that stream's work.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <wick/data/batch_source.h>
#include <wick/data/dataset.h>
#include <wick/tensor/device.h>
#include <wick/tensor/tensor.h>

namespace wick {

struct BatchStreamOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
  int64_t rank = 0, world_size = 1;  // shard: disjoint parts covering the data
  Device device = Device::cpu();     // where batches are delivered
  int64_t prefetch = 2;              // batches prepared ahead on a background thread (0: none)
  // Runs on each CPU batch, on the loader thread, before delivery (augmentation,
  // normalisation). Must return CPU tensors with as many examples as it got.
  std::function<Batch(Batch, uint64_t seed)> transform;
};

class BatchStream final : public BatchSource {
 public:
  // `data` must live on the CPU. Throws wick::Error for bad options (batch_size < 1, rank
  // not in [0, world_size), prefetch < 0, a CUDA device that is not there).
  BatchStream(std::shared_ptr<const Dataset> data, BatchStreamOptions options);
  ~BatchStream() override;
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;

  int64_t num_batches() const override;  // per epoch, for this rank
  int64_t num_examples() const;  // per epoch, for this rank (after drop_last)
  const BatchStreamOptions& options() const;

  // Starts (or restarts) epoch `epoch`: its order is a function of (seed, epoch). A stream
  // that is never started runs epoch 0 on the first next().
  void start_epoch(int64_t epoch) override;
  // The next batch of this rank, or nullopt at the end of the epoch.
  std::optional<Batch> next() override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The permutation of [0, n) for (seed, epoch) that BatchStream uses (identity when !shuffle).
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle = true);

}  // namespace wick
