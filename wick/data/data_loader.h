#pragma once
// DataLoader: batches of Examples from a map-style or an iterable dataset, made by worker
// threads, delivered in a deterministic order (torch.utils.data.DataLoader's role).
//
// Map-style datasets (the deterministic, resumable path):
//   - The epoch's index list comes from the sampler (default: SequentialSampler, or
//     RandomSampler(n, seed) when shuffle). Batch k holds sampler positions [kB, (k+1)B);
//     drop_last drops a last batch shorter than B.
//   - Data parallel: with world_size > 1 and no sampler, the loader shards itself with
//     DistributedSampler(n, rank, world_size, shuffle, seed, drop_last), as a PyTorch
//     program would give its loader: rank r of W takes positions r, r + W, ... of the
//     epoch's shared order (the permutation RandomSampler uses, or 0..n-1), padded by
//     repeating its start to a multiple of W, or with drop_last cut to one, so every rank
//     has the same number of batches and, with n divisible by W, the ranks' examples are
//     disjoint and cover the dataset. A sampler given in the options is used as it is (it
//     must shard itself: rank and world_size do not touch it).
//   - Example i of epoch e is get(i, example_seed(seed, e, i)): transforms and random
//     datasets depend on (seed, epoch, index) only.
//   - Batches come out of next() strictly in order 0, 1, 2, ... whatever num_workers is:
//     workers take the next unclaimed batch and a reorder buffer holds finished batches
//     until their turn. So the batches are the same, bit for bit, for 0, 1 or N workers.
//   - At most `prefetch` batches are claimed (being made or made) beyond the ones next()
//     has handed out; a worker waits rather than start batch consumed + prefetch.
//   - Exact resume: state() is {epoch, batches handed out}; resume(state) (or
//     start_epoch(epoch, skip)) continues with batch `skip` without reading the skipped
//     examples. state_dict() / load_state_dict() carry the same position and the seed as
//     tensors, for Checkpoint::add(name, loader) (wick/train/checkpoint.h): after
//     load_state_dict the next start_epoch of the saved epoch without a skip count, or
//     next() without a start_epoch, continues where the saved loader was.
//
// Iterable datasets: each worker w of N (N = max(num_workers, 1)) opens its own stream
// with Shard{rank, world_size, w, N, seed, epoch} and batches it alone (batches do not mix
// workers; drop_last applies to each worker's last batch). next() takes batches round-robin
// by worker: worker 0's first batch, worker 1's first, ..., worker 0's second, ...; a
// worker whose stream has ended leaves the rotation. The order is deterministic for a
// given N but, unlike the map-style path, depends on N (the shards do). Each worker holds
// at most max(1, prefetch / N) finished batches. Resume re-reads the skipped batches (a
// stream cannot seek) and throws them away.
//
// Errors: an exception from get(), a transform, a stream or collate is re-thrown by next()
// as a wick::Error naming the batch and the dataset index (or the worker), after the
// batches before it; the epoch ends there (next() then returns nullopt).
//
// Threads: one DataLoader is driven from one thread (next, start_epoch, state, state_dict
// and load_state_dict are not synchronised with each other). start_epoch, load_state_dict
// and the destructor stop the workers and join them: a worker finishes the get() it is in
// (user code cannot be interrupted) and starts no other; workers waiting for room wake up
// and leave at once.
//
// Devices: batches are collated on the CPU. For a CUDA device the thread that made a batch
// (a worker, or next()'s thread without workers) stages its fields in pooled page-locked
// memory and starts their copy on a copy stream (wick/data/cuda_delivery.h); next() only makes
// the calling thread's current stream wait for that copy, so the host does not block on
// it. Device memory comes from the stream current at start_epoch() (normally the default
// one); a batch taken on another stream is marked as used there. Prefetched batches are
// already on the device: `prefetch` bounds device memory as it bounds host memory.
#include <cstdint>
#include <memory>
#include <optional>

#include <wick/data/collate.h>
#include <wick/data/iterable_dataset.h>
#include <wick/data/map_dataset.h>
#include <wick/data/sampler.h>
#include <wick/tensor/device.h>
#include <wick/tensor/safetensors.h>

namespace wick {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;  // RandomSampler(n, seed) instead of SequentialSampler (map-style)
  uint64_t seed = 0;     // sampler, example seeds, iterable shards
  std::shared_ptr<const Sampler> sampler;  // overrides shuffle (map-style only)
  bool drop_last = false;
  int64_t num_workers = 0;  // 0: batches are made on the thread that calls next()
  int64_t prefetch = 2;     // batches made ahead of next() (>= 1; ignored without workers)
  Collate collate;          // default stack_collate
  Device device = Device::cpu();
  // This process's shard: an iterable dataset's Shard; for a map-style one without a
  // sampler, a DistributedSampler made from these and shuffle, seed and drop_last.
  int64_t rank = 0, world_size = 1;
};

// Where a loader is: `batches` batches of epoch `epoch` have been handed out.
struct LoaderState {
  int64_t epoch = 0;
  int64_t batches = 0;
};

class DataLoader {
 public:
  // Throw wick::Error for bad options (batch_size < 1, num_workers < 0, prefetch < 1 with
  // workers, rank outside [0, world_size), a sampler with an iterable dataset, an absent
  // CUDA device) or a null dataset.
  DataLoader(std::shared_ptr<const MapDataset> data, DataLoaderOptions options);
  DataLoader(std::shared_ptr<const IterableDataset> data, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Map-style: the batches of the current epoch (the first next() starts epoch 0).
  // Iterable: -1 (a stream's length is not known in advance).
  int64_t num_batches() const;
  const DataLoaderOptions& options() const;

  // Starts (or restarts) `epoch`, skipping its first `skip_batches` batches. Stops and joins
  // the workers of the previous epoch first. A loader never started runs epoch 0. Without
  // `skip_batches`: 0, or, for the epoch a load_state_dict() put the loader in, the batches
  // the saved loader had handed out (once: the position is then used up).
  void start_epoch(int64_t epoch, std::optional<int64_t> skip_batches = std::nullopt);
  void resume(const LoaderState& state) { start_epoch(state.epoch, state.batches); }
  // The next batch, or nullopt at the end of the epoch.
  std::optional<Example> next();
  LoaderState state() const;

  // The position for a checkpoint, as 0-d int64 tensors: "epoch" and "batches" (state()),
  // "seed" (options().seed's bits: the loader's randomness is a function of it and the
  // epoch) and, to check a resumed loader against, "batch_size", "world_size", "rank",
  // "dataset_size" (-1 for an iterable dataset), "shuffle", "drop_last" and "num_workers".
  TensorMap state_dict() const;
  // Stops the workers and puts the loader at the saved position (state() returns it) with
  // the saved seed (a sampler made from the options is made again with it; a sampler given
  // in the options keeps its own). Throws wick::Error, changing nothing, for a missing or
  // garbled entry, a position beyond the epoch, or a loader that would read other examples
  // at that position: another batch_size, world_size, rank, dataset size, shuffle or
  // drop_last (or, for an iterable dataset, num_workers, which sets its shards).
  void load_state_dict(const TensorMap& state);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace wick
