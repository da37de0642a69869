// FastDivider (kernels/fast_divider.h), the multiply-and-shift division the CUDA offset
// calculators use, against the `/` and `%` operators: every divisor up to 4096, the powers
// of two and their neighbours up to 2^31, and random ones, each at numerators 0, 1, around
// multiples of the divisor, the largest allowed (2^31 - 1) and random ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/fast_divider.h"

namespace wick {
namespace {

constexpr uint32_t kMaxNumerator = (uint32_t{1} << 31) - 1;

std::vector<uint32_t> numerators_for(uint32_t d, std::mt19937& rng) {
  std::vector<uint32_t> n = {0, 1, 2, kMaxNumerator, kMaxNumerator - 1};
  for (uint64_t k : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{kMaxNumerator} / d})
    for (int64_t delta : {-1, 0, 1}) {
      const int64_t v = static_cast<int64_t>(k * d) + delta;
      if (v >= 0 && v <= kMaxNumerator) n.push_back(static_cast<uint32_t>(v));
    }
  std::uniform_int_distribution<uint32_t> any(0, kMaxNumerator);
  for (int i = 0; i < 16; ++i) n.push_back(any(rng));
  return n;
}

void expect_divides(uint32_t d, std::mt19937& rng) {
  const FastDivider f(d);
  for (uint32_t n : numerators_for(d, rng)) {
    uint32_t rem = 0;
    const uint32_t q = f.divmod(n, rem);
    ASSERT_EQ(q, n / d) << n << " / " << d;
    ASSERT_EQ(rem, n % d) << n << " % " << d;
  }
}

TEST(FastDivider, MatchesDivisionForEveryKindOfDivisor) {
  std::mt19937 rng(45);
  for (uint32_t d = 1; d <= 4096; ++d) expect_divides(d, rng);
  for (int s = 12; s <= 31; ++s)
    for (int64_t delta : {-1, 0, 1}) {
      const int64_t d = (int64_t{1} << s) + delta;
      if (d <= (int64_t{1} << 31)) expect_divides(static_cast<uint32_t>(d), rng);
    }
  std::uniform_int_distribution<uint32_t> any(1, uint32_t{1} << 31);
  for (int i = 0; i < 2000; ++i) expect_divides(any(rng), rng);
}

// A magic number one too small is wrong for some numerator: the test above would see it.
TEST(FastDivider, AnOffByOneMagicNumberIsCaught) {
  FastDivider f(7);
  f.magic -= 1;
  bool wrong = false;
  for (uint32_t n = 0; n <= kMaxNumerator - 7 && !wrong; n += 7) wrong = f.div(n) != n / 7;
  EXPECT_TRUE(wrong);
}

}  // namespace
}  // namespace wick
