#pragma once
// Samplers: the order in which a DataLoader visits dataset indices, one list per epoch.
// Every sampler is a pure function of its settings and the epoch (no hidden state), so
// any process or thread that asks for epoch e gets the same list, and asking twice is
// safe from several threads.
#include <cstdint>
#include <memory>
#include <vector>

namespace wick {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The dataset indices of `epoch`, in visiting order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

// 0, 1, ..., n - 1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

// A permutation of [0, n) per epoch: epoch_order(n, seed, epoch), the same one BatchStream
// uses, so a loader with batch_size B over this sampler visits examples in BatchStream's
// order for one rank.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, uint64_t seed);
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
  uint64_t seed_;
};

// torch.utils.data.WeightedRandomSampler: num_samples indices drawn with probability
// proportional to `weights` (which need not sum to 1), with or without replacement. An
// index of weight 0 is never drawn. Without replacement num_samples may not exceed the
// number of positive weights. Draws are a function of (seed, epoch).
class WeightedRandomSampler : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement, uint64_t seed);
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  std::vector<double> weights_;
  std::vector<double> cumulative_;  // running sums, for draws with replacement
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

// torch.utils.data.DistributedSampler: every rank computes the same order of all n
// indices (epoch_order(n, seed, epoch, shuffle)); without drop_last it is padded by
// repeating indices from its start until its length is a multiple of world_size, with
// drop_last its tail is cut to a multiple; rank r takes positions r, r + W, r + 2W, ....
// So every rank has the same count: ceil(n / W) (padding) or floor(n / W) (drop_last).
// The strided rule is BatchStream's; only the padding differs (BatchStream's ranks may
// differ by one example instead).
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t n, int64_t rank, int64_t world_size, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t num_samples() const { return num_samples_; }  // per rank and epoch

 private:
  int64_t n_, rank_, world_size_;
  bool shuffle_;
  uint64_t seed_;
  int64_t num_samples_ = 0;
};

}  // namespace wick
