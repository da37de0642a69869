#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include <wick/data/batch_stream.h>
#include <wick/data/sampler.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

TEST(Sampler, SequentialAndRandom) {
  EXPECT_EQ(SequentialSampler(5).indices(3), iota(5));
  RandomSampler r(50, 7);
  EXPECT_EQ(r.indices(2), epoch_order(50, 7, 2));
  EXPECT_NE(r.indices(2), r.indices(3));
}

TEST(DistributedSampler, DropLastCoversEveryIndexOnceOverRanks) {
  for (int64_t n : {0, 1, 10, 11, 12, 13}) {
    std::vector<int64_t> all;
    for (int64_t rank = 0; rank < 4; ++rank) {
      DistributedSampler s(n, rank, 4, /*shuffle=*/true, /*seed=*/5, /*drop_last=*/true);
      std::vector<int64_t> mine = s.indices(1);
      EXPECT_EQ(static_cast<int64_t>(mine.size()), n / 4);
      EXPECT_EQ(s.num_samples(), n / 4);
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::set<int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(distinct.size(), all.size()) << n;  // nothing twice
    // The dropped tail is the last n % 4 of the shared order.
    std::vector<int64_t> order = epoch_order(n, 5, 1);
    EXPECT_EQ(distinct, std::set<int64_t>(order.begin(), order.begin() + (n / 4) * 4)) << n;
  }
}

TEST(DistributedSampler, PaddingRepeatsTheStartSoEveryRankHasTheSameCount) {
  for (int64_t n : {1, 2, 10, 12}) {
    std::vector<int64_t> all;
    const int64_t per_rank = (n + 4 - 1) / 4;
    for (int64_t rank = 0; rank < 4; ++rank) {
      std::vector<int64_t> mine = DistributedSampler(n, rank, 4, /*shuffle=*/false).indices(0);
      EXPECT_EQ(static_cast<int64_t>(mine.size()), per_rank) << n;
      // Rank r takes positions r, r + 4, ... of 0..n-1 followed by 0, 1, ... again.
      for (int64_t j = 0; j < per_rank; ++j) EXPECT_EQ(mine[j], (rank + 4 * j) % n);
      all.insert(all.end(), mine.begin(), mine.end());
    }
    EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), static_cast<size_t>(n));  // every index
    EXPECT_EQ(static_cast<int64_t>(all.size()), per_rank * 4);
  }
  expect_error([] { DistributedSampler(10, 4, 4); }, {"rank 4", "world_size = 4"});
}

TEST(WeightedRandomSampler, ZeroWeightIsNeverDrawnAndFrequenciesFollowWeights) {
  std::vector<double> w = {1, 0, 3, 0, 4};
  WeightedRandomSampler s(w, 8000, /*replacement=*/true, /*seed=*/1);
  std::vector<int64_t> a = s.indices(0);
  EXPECT_EQ(a, s.indices(0));
  EXPECT_NE(a, s.indices(1));
  std::vector<int64_t> count(5, 0);
  for (int64_t i : a) count[static_cast<size_t>(i)]++;
  EXPECT_EQ(count[1], 0);
  EXPECT_EQ(count[3], 0);
  // Expected 1000, 3000, 4000; a binomial's sd is under 45, so 250 is > 5 sd.
  EXPECT_NEAR(count[0], 1000, 250);
  EXPECT_NEAR(count[2], 3000, 250);
  EXPECT_NEAR(count[4], 4000, 250);

  WeightedRandomSampler without(w, 3, /*replacement=*/false, 2);
  for (int64_t epoch = 0; epoch < 20; ++epoch) {
    std::vector<int64_t> b = without.indices(epoch);
    std::sort(b.begin(), b.end());
    EXPECT_EQ(b, (std::vector<int64_t>{0, 2, 4}));  // all three positive weights, once each
  }
  expect_error([&] { WeightedRandomSampler(w, 4, false, 0); }, {"cannot draw 4", "3 indices"});
  expect_error([] { WeightedRandomSampler({0, 0}, 1, true, 0); }, {"every one"});
  expect_error([] { WeightedRandomSampler({1, -1}, 1, true, 0); }, {"weight 1", "-1"});
}

}  // namespace
}  // namespace wick
