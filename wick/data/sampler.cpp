#include <wick/data/sampler.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <wick/data/batch_stream.h>
#include <wick/tensor/error.h>

namespace wick {

namespace {

std::mt19937_64 epoch_rng(uint64_t seed, int64_t epoch) {
  const uint64_t e = static_cast<uint64_t>(epoch);
  // A different seed sequence from epoch_order's (the 0x5eed tag), so that a weighted
  // sampler and a random sampler with the same seed do not draw the same stream.
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(e),
                    static_cast<uint32_t>(e >> 32), 0x5eedu};
  return std::mt19937_64(seq);
}

// A uniform double in [0, 1) from the top 53 bits (the same on every standard library,
// unlike std::uniform_real_distribution).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  WICK_CHECK(n >= 0, "SequentialSampler: negative size ", n);
}

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {
  WICK_CHECK(n >= 0, "RandomSampler: negative size ", n);
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const { return epoch_order(n_, seed_, epoch, true); }

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                             uint64_t seed)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement), seed_(seed) {
  WICK_CHECK(!weights_.empty(), "WeightedRandomSampler: no weights");
  WICK_CHECK(num_samples >= 0, "WeightedRandomSampler: num_samples must be >= 0, got ", num_samples);
  int64_t positive = 0;
  double total = 0;
  cumulative_.reserve(weights_.size());
  for (size_t i = 0; i < weights_.size(); ++i) {
    const double w = weights_[i];
    WICK_CHECK(std::isfinite(w) && w >= 0, "WeightedRandomSampler: weight ", i, " is ", w,
               "; weights must be finite and >= 0");
    positive += w > 0;
    total += w;
    cumulative_.push_back(total);
  }
  WICK_CHECK(positive > 0, "WeightedRandomSampler: every one of the ", weights_.size(), " weights is 0");
  WICK_CHECK(replacement || num_samples <= positive, "WeightedRandomSampler: cannot draw ", num_samples,
             " samples without replacement from ", positive, " indices of positive weight");
}

std::vector<int64_t> WeightedRandomSampler::indices(int64_t epoch) const {
  std::mt19937_64 rng = epoch_rng(seed_, epoch);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (replacement_) {
    const double total = cumulative_.back();
    for (int64_t s = 0; s < num_samples_; ++s) {
      // The first index whose running sum exceeds x: an index of weight 0 has the same
      // running sum as the one before it, so it is never the first to exceed x.
      const double x = uniform01(rng) * total;
      auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), x);
      if (it == cumulative_.end()) it = std::prev(it);  // x rounded up to total
      while (weights_[static_cast<size_t>(it - cumulative_.begin())] == 0) --it;  // (same rounding case)
      out.push_back(it - cumulative_.begin());
    }
    return out;
  }
  // Without replacement: Efraimidis-Spirakis keys log(u) / w; the num_samples largest keys
  // are a weighted draw without replacement, in draw order when sorted by key.
  std::vector<std::pair<double, int64_t>> keys;
  for (size_t i = 0; i < weights_.size(); ++i) {
    const double u = uniform01(rng);  // drawn for every index so the stream does not depend on weights being 0
    if (weights_[i] > 0) keys.emplace_back(std::log(u > 0 ? u : 0x1.0p-60) / weights_[i], static_cast<int64_t>(i));
  }
  std::partial_sort(keys.begin(), keys.begin() + num_samples_, keys.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (int64_t s = 0; s < num_samples_; ++s) out.push_back(keys[static_cast<size_t>(s)].second);
  return out;
}

DistributedSampler::DistributedSampler(int64_t n, int64_t rank, int64_t world_size, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : n_(n), rank_(rank), world_size_(world_size), shuffle_(shuffle), seed_(seed) {
  WICK_CHECK(n >= 0, "DistributedSampler: negative size ", n);
  WICK_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, "DistributedSampler: rank ", rank,
             " is not in [0, world_size = ", world_size, ")");
  num_samples_ = drop_last ? n / world_size : (n + world_size - 1) / world_size;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> all = epoch_order(n_, seed_, epoch, shuffle_);
  const int64_t total = num_samples_ * world_size_;
  if (total > n_) {
    // Padding repeats the order from its start (more than once when n < world_size - 1).
    for (int64_t j = n_; j < total; ++j) all.push_back(all[static_cast<size_t>(j % n_)]);
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  for (int64_t j = rank_; j < total; j += world_size_) out.push_back(all[static_cast<size_t>(j)]);
  return out;
}

}  // namespace wick
