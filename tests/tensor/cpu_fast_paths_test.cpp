// The special cases CPU kernels take for speed give what the general code gives: max pool
// with 2x2 windows and stride 2 (first maximum, NaN wins), and batch norm's statistics
// summed in several partial sums.
#include <cmath>
#include <limits>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(CpuFastPaths, MaxPoolTwoByTwoKeepsTheFirstMaximumAndNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // One 4x5 plane: windows (rows 0-1, 2-3) x (cols 0-1, 2-3); column 4 is dropped.
  Tensor x = tensor<double>({1, 3, 3, 0, 9,   //
                             3, 2, nan, 7, 9,  //
                             5, 5, 4, nan, 9,  //
                             5, 1, nan, 2, 9},
                            {1, 1, 4, 5});
  for (DType t : {DType::Float32, DType::Float64}) {
    auto [y, idx] = max_pool2d(x.to(t), 2, 2);
    EXPECT_TRUE(matches(y, {1, 1, 2, 2}, t, {3, nan, 5, nan})) << dtype_name(t);
    // ties go to the first in row-major window order; the first NaN wins
    EXPECT_TRUE(matches(idx, {1, 1, 2, 2}, DType::Int64, {1, 7, 10, 13})) << dtype_name(t);
  }
}

TEST(CpuFastPaths, BatchNormStatisticsOfLongChannels) {
  // 1003 values per channel (not a multiple of the 8 partial sums), a large offset.
  Tensor x = random({3, 2, 17, 59}, DType::Float64, 7, 1000.0, 1001.0);
  auto v = values(x);
  Tensor w = ones({2}, DType::Float64), b = zeros({2}, DType::Float64);
  auto r = batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5);
  const int64_t S = 17 * 59;
  for (int64_t c = 0; c < 2; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < S; ++i) s += v[(n * 2 + c) * S + i];
    const double mean = s / (3 * S);
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < S; ++i) q += (v[(n * 2 + c) * S + i] - mean) * (v[(n * 2 + c) * S + i] - mean);
    const double invstd = 1 / std::sqrt(q / (3 * S) + 1e-5);
    auto out = values(r.out);
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < S; i += 97) {
        const int64_t k = (n * 2 + c) * S + i;
        EXPECT_NEAR(out[k], (v[k] - mean) * invstd, 1e-9) << c << " " << n << " " << i;
      }
  }
}

}  // namespace
}  // namespace wick::test
