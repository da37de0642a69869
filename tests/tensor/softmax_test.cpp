// softmax, log_softmax and the scans (cumsum, cumprod, cummax, cummin, logcumsumexp) against
// float64 references computed here with plain loops over values().
#include <cmath>
#include <limits>

#include "tests/support/dtype_sets.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

const std::vector<DType> kFloatDTypes = {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

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

std::vector<double> ref_cumprod(const std::vector<double>& line) {
  std::vector<double> out;
  double p = 1;
  for (double v : line) out.push_back(p *= v);
  return out;
}

// log(sum_{k <= i} exp(x_k)) from a running max m and sum s of exp(x_k - m); -inf terms add
// nothing, a +inf term makes the rest +inf, a NaN the rest NaN.
std::vector<double> ref_logcumsumexp(const std::vector<double>& line) {
  std::vector<double> out;
  double m = -INFINITY, s = 0;
  bool nan = false;
  for (double v : line) {
    nan = nan || std::isnan(v);
    if (!nan && v > m) {
      s = std::isinf(m) ? 0 : s * std::exp(m - v);
      m = v;
    }
    if (!nan && !std::isinf(m)) s += std::exp(v - m);
    out.push_back(nan ? kNaN : std::isinf(m) ? m : m + std::log(s));
  }
  return out;
}

// cummax / cummin as PyTorch defines them: the latest of equal values wins, and a NaN, once
// seen, stays (the latest NaN's index). Returns the values or the indices.
LineMap ref_cum_extremum(bool is_max, bool indices) {
  return [=](const std::vector<double>& line) {
    std::vector<double> out;
    double best = 0;
    size_t at = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      const double v = line[i];
      const bool wins = i == 0 || std::isnan(v) || (!std::isnan(best) && (is_max ? v >= best : v <= best));
      if (wins) best = v, at = i;
      out.push_back(indices ? static_cast<double>(at) : best);
    }
    return out;
  };
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

TEST(Cumprod, EveryDTypeDimAndLayout) {
  const Shape shape = {3, 4, 5};
  for (DType t : kAllDTypes) {
    Tensor x = random(shape, t, 16);
    DType out = is_floating(t) ? t : DType::Int64;
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      std::vector<double> expected = ref_along_dim(x, dim, ref_cumprod);
      for (Layout l : kAllLayouts)
        EXPECT_TRUE(matches(cumprod(with_layout(x, l), dim), shape, out, expected))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
    }
  }
}

TEST(Cumprod, ZerosInfNaNOverflowAndLongLines) {
  const double inf = INFINITY;
  Tensor x = tensor<double>({2, 0, inf, 3, inf, 0.5, NAN, 1, -inf, -2, 0, 4}, {3, 4});
  EXPECT_TRUE(matches(cumprod(x, 1), {3, 4}, DType::Float64, {2, 0, kNaN, kNaN, inf, inf, kNaN, kNaN, -inf, inf, kNaN, kNaN}));
  EXPECT_TRUE(matches(cumprod(x, 0), {3, 4}, DType::Float64, {2, 0, inf, 3, 2 * inf, 0, kNaN, 3, -inf, 0, kNaN, 12}));
  // int64 products wrap around (two's complement), like PyTorch's.
  const int64_t big = int64_t{1} << 62;
  EXPECT_TRUE(matches(cumprod(tensor<int64_t>({big, 2, 2}), 0), {3}, DType::Int64, {std::pow(2.0, 62), -std::pow(2.0, 63), 0}));
  EXPECT_TRUE(matches(cumprod(tensor<uint8_t>({200, 2}), 0), {2}, DType::Int64, {200, 400}));
  // Many rows in parallel and columns wider than one block; values near 1 keep products finite.
  Tensor y = random({300, 700}, DType::Float64, 17, 0.99, 1.01);
  for (int64_t dim : {0, 1})
    EXPECT_TRUE(matches(cumprod(y, dim), y.shape(), DType::Float64, ref_along_dim(y, dim, ref_cumprod)));
}

TEST(Cumprod, EmptyZeroDimAndErrors) {
  EXPECT_TRUE(matches(cumprod(zeros({0, 3}), 1), {0, 3}, DType::Float32, {}));
  EXPECT_TRUE(matches(cumprod(scalar_tensor(3, DType::Int32), -1), {}, DType::Int64, {3}));
  EXPECT_TRUE(matches(cumprod(scalar_tensor(true, DType::Bool), 0), {}, DType::Int64, {1}));
  expect_error([] { cumprod(zeros({2, 3}), -3); }, {"cumprod", "dim -3", "out of range"});
}

TEST(CumMaxMin, EveryDTypeDimAndLayoutWithTies) {
  const Shape shape = {3, 4, 5};
  for (DType t : kAllDTypes) {
    // Few distinct values, so most lines have ties.
    Tensor x = random(shape, DType::Int64, 18, -2, 2).to(t);
    for (int64_t dim : {0, 1, 2, -1, -2}) {
      for (bool is_max : {true, false}) {
        std::vector<double> v = ref_along_dim(x, dim, ref_cum_extremum(is_max, false));
        std::vector<double> i = ref_along_dim(x, dim, ref_cum_extremum(is_max, true));
        for (Layout l : kAllLayouts) {
          auto [values, indices] = is_max ? cummax(with_layout(x, l), dim) : cummin(with_layout(x, l), dim);
          const std::string what = std::string(is_max ? "cummax " : "cummin ") + dtype_name(t) + " dim " +
                                   std::to_string(dim) + " " + layout_name(l);
          EXPECT_TRUE(matches(values, shape, t, v)) << what;
          EXPECT_TRUE(matches(indices, shape, DType::Int64, i)) << what;
        }
      }
    }
  }
}

TEST(CumMaxMin, TiesTakeTheLastIndexAndNaNStays) {
  const float inf = INFINITY;
  Tensor x = tensor<double>({2, 1, 2, 2, 0, 3}, {6});
  auto [mv, mi] = cummax(x, 0);
  EXPECT_TRUE(matches(mv, {6}, DType::Float64, {2, 2, 2, 2, 2, 3}));
  EXPECT_TRUE(matches(mi, {6}, DType::Int64, {0, 0, 2, 3, 3, 5}));
  auto [nv, ni] = cummin(x, 0);
  EXPECT_TRUE(matches(nv, {6}, DType::Float64, {2, 1, 1, 1, 0, 0}));
  EXPECT_TRUE(matches(ni, {6}, DType::Int64, {0, 1, 1, 1, 4, 4}));
  // A NaN wins over everything after it; a later NaN moves the index.
  Tensor n = tensor<float>({1, NAN, 5, NAN, -inf}, {5});
  for (bool is_max : {true, false}) {
    auto [v, i] = is_max ? cummax(n, 0) : cummin(n, 0);
    EXPECT_TRUE(matches(v, {5}, DType::Float32, {1, kNaN, kNaN, kNaN, kNaN}));
    EXPECT_TRUE(matches(i, {5}, DType::Int64, {0, 1, 1, 3, 3}));
  }
  // -0.0 and 0.0 are equal: the later one is taken.
  auto [zv, zi] = cummax(tensor<double>({0.0, -0.0}, {2}), 0);
  EXPECT_TRUE(matches(zi, {2}, DType::Int64, {0, 1}));
  EXPECT_TRUE(std::signbit(values(zv)[1]));
  // Long rows and wide columns (the parallel paths).
  Tensor y = random({300, 700}, DType::Int64, 19, -50, 50).to(DType::Float32);
  for (int64_t dim : {0, 1}) {
    auto [v, i] = cummin(y, dim);
    EXPECT_TRUE(matches(v, y.shape(), DType::Float32, ref_along_dim(y, dim, ref_cum_extremum(false, false))));
    EXPECT_TRUE(matches(i, y.shape(), DType::Int64, ref_along_dim(y, dim, ref_cum_extremum(false, true))));
  }
}

TEST(CumMaxMin, EmptyZeroDimAndErrors) {
  auto [ev, ei] = cummax(zeros({2, 0}), 1);
  EXPECT_TRUE(matches(ev, {2, 0}, DType::Float32, {}));
  EXPECT_TRUE(matches(ei, {2, 0}, DType::Int64, {}));
  auto [sv, si] = cummin(scalar_tensor(7, DType::Int32), 0);
  EXPECT_TRUE(matches(sv, {}, DType::Int32, {7}));
  EXPECT_TRUE(matches(si, {}, DType::Int64, {0}));
  expect_error([] { cummax(zeros({2, 3}), 2); }, {"cummax", "dim 2", "out of range"});
  expect_error([] { cummin(Tensor(), 0); }, {"cummin", "undefined"});
}

TEST(Logcumsumexp, EveryFloatDTypeDimAndLayout) {
  const Shape shape = {3, 4, 5};
  for (DType t : kFloatDTypes) {
    Tensor x = random(shape, t, 20, -4, 4);
    for (int64_t dim : {0, 1, 2, -1}) {
      std::vector<double> expected = ref_along_dim(x, dim, ref_logcumsumexp);
      for (Layout l : kAllLayouts)
        EXPECT_TRUE(matches(logcumsumexp(with_layout(x, l), dim), shape, t, expected, -1,
                            t == DType::BFloat16 ? 0.05 : t == DType::Float16 ? 5e-3 : -1))
            << dtype_name(t) << " dim " << dim << " " << layout_name(l);
    }
  }
}

TEST(Logcumsumexp, StableAndInfiniteInputs) {
  const float inf = INFINITY;
  // exp(1000) overflows: only a log-space sum gets these.
  EXPECT_TRUE(matches(logcumsumexp(tensor<double>({1000, 1000, -1000}, {3}), 0), {3}, DType::Float64,
                      {1000, 1000 + std::log(2.0), 1000 + std::log(2.0)}));
  EXPECT_TRUE(matches(logcumsumexp(tensor<float>({-inf, -inf, 0, inf, 1, -inf}, {6}), 0), {6}, DType::Float32,
                      {-inf, -inf, 0, inf, inf, inf}));
  EXPECT_TRUE(matches(logcumsumexp(tensor<float>({inf, -inf, NAN, 0}, {4}), 0), {4}, DType::Float32,
                      {inf, inf, kNaN, kNaN}));
  // Along an outer dim (columns carried together) and long rows in parallel.
  Tensor y = random({300, 700}, DType::Float64, 21, -30, 30);
  for (int64_t dim : {0, 1})
    EXPECT_TRUE(matches(logcumsumexp(y, dim), y.shape(), DType::Float64, ref_along_dim(y, dim, ref_logcumsumexp)));
}

TEST(Logcumsumexp, EmptyZeroDimAndErrors) {
  EXPECT_TRUE(matches(logcumsumexp(zeros({0, 3}), 0), {0, 3}, DType::Float32, {}));
  EXPECT_TRUE(matches(logcumsumexp(scalar_tensor(-2.5, DType::Float64), -1), {}, DType::Float64, {-2.5}));
  // Integers are refused, as by PyTorch (no implicit float conversion for this op).
  expect_error([] { logcumsumexp(zeros({2, 3}, DType::Int64), 1); }, {"logcumsumexp", "floating point", "int64", "[2, 3]"});
  expect_error([] { logcumsumexp(zeros({2}, DType::Bool), 0); }, {"logcumsumexp", "bool"});
  expect_error([] { logcumsumexp(zeros({2, 3}), 2); }, {"logcumsumexp", "dim 2", "out of range"});
}

}  // namespace
}  // namespace wick::test
