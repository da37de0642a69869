#pragma once
// Language-model windows from one long 1-d tensor of token ids (uint8, int32 or int64;
// e.g. a memory-mapped .npy of a tokenised corpus): an example is a window of L + 1 tokens
// split into "input" (its first L) and "target" (its last L, i.e. shifted by one), both
// int64 [L].
//
// Two forms, with the same windows:
//   - TokenWindows, map-style (the one to use with samplers, several workers and exact
//     resume: its examples are a function of (loader seed, epoch, index) only). With
//     random_offsets the window of example i starts at a position drawn uniformly from
//     [0, T - L - 1] with the example's seed (example_seed(seed, epoch, i) from the loader),
//     so every epoch sees different windows; without, example i starts at i * L (the
//     windows tile the tokens).
//   - TokenStream, iterable: `windows_per_epoch` windows, window j starting at a position
//     drawn from example_seed(seed, epoch, j); the stream of shard s of S yields windows
//     j = s, s + S, s + 2S, ... in that order, so each window comes from exactly one
//     (rank, worker).
#include <cstdint>
#include <memory>

#include <wick/data/iterable_dataset.h>
#include <wick/data/map_dataset.h>

namespace wick {

class TokenWindows : public MapDataset {
 public:
  // Throws unless tokens is 1-d integer on the CPU with at least L + 1 tokens and L >= 1.
  // size() is (T - 1) / L: the number of whole tiled windows (also the epoch length with
  // random offsets).
  TokenWindows(Tensor tokens, int64_t window, bool random_offsets = true);
  int64_t size() const override { return size_; }
  Example get(int64_t i) const override { return get(i, example_seed(0, 0, i)); }
  Example get(int64_t i, uint64_t seed) const override;

 private:
  Tensor tokens_;
  int64_t window_, size_;
  bool random_offsets_;
};

class TokenStream : public IterableDataset {
 public:
  TokenStream(Tensor tokens, int64_t window, int64_t windows_per_epoch);
  std::unique_ptr<ExampleStream> open(const Shard& shard) const override;

 private:
  Tensor tokens_;
  int64_t window_, windows_per_epoch_;
};

}  // namespace wick
