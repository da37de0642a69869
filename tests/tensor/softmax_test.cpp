// softmax, log_softmax and cumsum against float64 references computed here with plain loops
// over values().
#include <cmath>
#include <limits>

#include "tests/support/dtype_sets.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

const std::vector<DType> kFloatDTypes = {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using LineMap = std::function<std::vector<double>(const std::vector<double>&)>;

// Applies `f` to every line of x along dim (row-major values in, row-major values out).
std::vector<double> ref_along_dim(const Tensor& x, int64_t dim, const LineMap& f) {
  std::vector<double> v = values(x);
  if (x.dim() == 0) return f(v);
  if (dim < 0) dim += x.dim();
  int64_t n = x.shape()[dim], inner = 1;
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape()[d];
  std::vector<double> out(v.size());
  if (v.empty()) return out;
  int64_t outer = static_cast<int64_t>(v.size()) / (n * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      std::vector<double> line;
      for (int64_t i = 0; i < n; ++i) line.push_back(v[(o * n + i) * inner + j]);
      std::vector<double> r = f(line);
      for (int64_t i = 0; i < n; ++i) out[(o * n + i) * inner + j] = r[i];
    }
  }
  return out;
}

std::vector<double> ref_softmax(const std::vector<double>& line) {
  double s = 0;
  for (double v : line) s += std::exp(v);
  std::vector<double> out;
  for (double v : line) out.push_back(std::exp(v) / s);
  return out;
}

std::vector<double> ref_log_softmax(const std::vector<double>& line) {
  double s = 0;
  for (double v : line) s += std::exp(v);
  std::vector<double> out;
  for (double v : line) out.push_back(v - std::log(s));
  return out;
}

std::vector<double> ref_cumsum(const std::vector<double>& line) {
  std::vector<double> out;
  double s = 0;
  for (double v : line) out.push_back(s += v);
  return out;
}

TEST(Softmax, EveryFloatDTypeDimAndLayout) {
  const Shape shape = {3, 4, 5};
  for (DType t : kFloatDTypes) {
    Tensor x = random(shape, t, 11, -4, 4);
    for (int64_t dim : {0, 1, 2, -1}) {
      std::vector<double> sm = ref_along_dim(x, dim, ref_softmax), lsm = ref_along_dim(x, dim, ref_log_softmax);
      for (Layout l : kAllLayouts) {
        Tensor xl = with_layout(x, l);
        std::string what = std::string(dtype_name(t)) + " dim " + std::to_string(dim) + " " + layout_name(l);
        EXPECT_TRUE(matches(softmax(xl, dim), shape, t, sm)) << what;
        // log-softmax values reach ~-8: bfloat16's absolute rounding error there is ~0.03.
        EXPECT_TRUE(matches(log_softmax(xl, dim), shape, t, lsm, -1, t == DType::BFloat16 ? 0.05 : -1)) << what;
      }
    }
  }
}

TEST(Softmax, LongRowsAndManyColumnsInParallel) {
  // Rows long enough for the unit-stride loops and enough of them to run in parallel, and a
  // non-last dim with more columns than one block.
  Tensor x = random({300, 700}, DType::Float64, 12, -10, 10);
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(matches(softmax(x, dim), x.shape(), DType::Float64, ref_along_dim(x, dim, ref_softmax)));
    EXPECT_TRUE(matches(log_softmax(x, dim), x.shape(), DType::Float64, ref_along_dim(x, dim, ref_log_softmax)));
  }
  Tensor y = random({3, 40, 600}, DType::Float32, 13, -10, 10);
  EXPECT_TRUE(matches(softmax(y, 1), y.shape(), DType::Float32, ref_along_dim(y, 1, ref_softmax)));
}

TEST(Softmax, IsStableForLargeAndInfiniteInputs) {
  // exp(1000) overflows: only the max-shifted form gets these right.
  Tensor x = tensor<float>({1000, 1000 + std::log(3.0f), -INFINITY, 999}, {1, 4});
  double e = std::exp(-1.0);
  double s = 1 + 3 + e;
  EXPECT_TRUE(matches(softmax(x, 1), {1, 4}, DType::Float32, {1 / s, 3 / s, 0, e / s}));
  EXPECT_TRUE(matches(log_softmax(x, 1), {1, 4}, DType::Float32,
                      {-std::log(s), std::log(3.0) - std::log(s), -INFINITY, -1 - std::log(s)}, 1e-5, 1e-4));
  // Along an outer dim (columns carried together).
  std::vector<double> cols;
  for (double v : {1 / s, 3 / s, 0.0, e / s}) cols.insert(cols.end(), {v, v});
  EXPECT_TRUE(matches(softmax(x.t().expand({4, 2}), 0), {4, 2}, DType::Float32, cols));
  EXPECT_TRUE(matches(log_softmax(x.t().expand({4, 2}), 0).select(1, 1), {4}, DType::Float32,
                      {-std::log(s), std::log(3.0) - std::log(s), -INFINITY, -1 - std::log(s)}, 1e-5, 1e-4));
  // A NaN poisons its line only.
  Tensor n = tensor<float>({1, NAN, 0, 0}, {2, 2});
  EXPECT_TRUE(matches(softmax(n, 1), {2, 2}, DType::Float32, {kNaN, kNaN, 0.5, 0.5}));
}

TEST(Softmax, EmptyAndZeroDim) {
  EXPECT_TRUE(matches(softmax(zeros({0, 3}), 1), {0, 3}, DType::Float32, {}));
  EXPECT_TRUE(matches(log_softmax(zeros({2, 0}), 1), {2, 0}, DType::Float32, {}));
  EXPECT_TRUE(matches(softmax(scalar_tensor(5.0), 0), {}, DType::Float32, {1}));
  EXPECT_TRUE(matches(log_softmax(scalar_tensor(5.0), -1), {}, DType::Float32, {0}));
}

TEST(Softmax, RejectsIntegersAndBadDims) {
  expect_error([] { softmax(zeros({2, 3}, DType::Int64), 1); }, {"softmax", "floating point", "int64", "[2, 3]"});
  expect_error([] { log_softmax(zeros({2}, DType::Bool), 0); }, {"log_softmax", "floating point", "bool"});
  expect_error([] { softmax(zeros({2, 3}), 2); }, {"softmax", "dim 2", "out of range"});
  expect_error([] { log_softmax(zeros({2, 3}), -3); }, {"log_softmax", "dim -3", "out of range"});
}

TEST(Cumsum, EveryDTypeDimAndLayout) {
  const Shape shape = {3, 4, 5};
  for (DType t : kAllDTypes) {
    Tensor x = random(shape, t, 14);
    DType out = is_floating(t) ? t : DType::Int64;
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      std::vector<double> expected = ref_along_dim(x, dim, ref_cumsum);
      for (Layout l : kAllLayouts) {
        // 16-bit floats: each running sum is rounded once, so compare against its magnitude.
        EXPECT_TRUE(matches(cumsum(with_layout(x, l), dim), shape, out, expected))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
      }
    }
  }
}

TEST(Cumsum, LongLinesAccumulateWidely) {
  // float32 running sums of 0.1f drift visibly with a float accumulator.
  Tensor x = full({2, 200000}, 0.1f);
  std::vector<double> v = values(cumsum(x, 1));
  EXPECT_NEAR(v[199999] / (200000 * static_cast<double>(0.1f)), 1.0, 1e-6);
  Tensor big = random({600, 300}, DType::Int32, 15, -1000, 1000);
  for (int64_t dim : {0, 1})
    EXPECT_TRUE(matches(cumsum(big, dim), big.shape(), DType::Int64, ref_along_dim(big, dim, ref_cumsum)));
}

TEST(Cumsum, EmptyZeroDimAndErrors) {
  EXPECT_TRUE(matches(cumsum(zeros({0, 3}), 0), {0, 3}, DType::Float32, {}));
  EXPECT_TRUE(matches(cumsum(scalar_tensor(4, DType::Int32), 0), {}, DType::Int64, {4}));
  EXPECT_TRUE(matches(cumsum(scalar_tensor(1.5), -1), {}, DType::Float32, {1.5}));
  expect_error([] { cumsum(zeros({2, 3}), 2); }, {"cumsum", "dim 2", "out of range"});
}

}  // namespace
}  // namespace wick::test
