// The rules of the reductions that the reduction table (tests/autograd/reduce_table_test.cpp,
// which checks every reduction over dtypes, layouts and dims) cannot express: max/min with
// indices and ties, NaN, chunked accumulation and its accuracy, empty and 0-d inputs,
// methods, refusals. References are float64 loops over values().
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "tests/support/dtype_sets.h"
#include "tests/support/reduce_reference.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

const Shape kShape = {3, 4, 5};

// NaN is nonzero, like in PyTorch.
TEST(Reduce, AllCountsNaNAsNonzero) { EXPECT_TRUE(matches(all(tensor<float>({NAN, 1})), {}, DType::Bool, {1})); }

TEST(Reduce, MaxMinOfAllElements) {
  for (DType t : kAllDTypes) {
    Tensor x = random(kShape, t, 6);
    for (Layout l : kAllLayouts) {
      Tensor xl = with_layout(x, l);
      EXPECT_TRUE(matches(max(xl), {}, t, ref_reduce(x, {}, ref_extremum<true>))) << dtype_name(t) << layout_name(l);
      EXPECT_TRUE(matches(min(xl), {}, t, ref_reduce(x, {}, ref_extremum<false>))) << dtype_name(t) << layout_name(l);
    }
  }
}

TEST(Reduce, MaxMinAlongDimWithFirstIndexOnTies) {
  for (DType t : kAllDTypes) {
    Tensor x = random(kShape, DType::Int32, 7, 0, 3).to(t);  // few distinct values: many ties
    for (int64_t dim : {0, 1, 2, -1, -2}) {
      for (bool keepdim : {false, true}) {
        for (Layout l : kAllLayouts) {
          Tensor xl = with_layout(x, l);
          Shape s = reduced_shape(kShape, {dim}, keepdim);
          auto [vmax, imax] = max(xl, dim, keepdim);
          auto [vmin, imin] = min(xl, dim, keepdim);
          std::string what = std::string(dtype_name(t)) + " dim " + std::to_string(dim) + " " + layout_name(l);
          EXPECT_TRUE(matches(vmax, s, t, ref_reduce(x, {dim}, ref_extremum<true>))) << what;
          EXPECT_TRUE(matches(imax, s, DType::Int64, ref_reduce(x, {dim}, ref_arg<true>))) << what;
          EXPECT_TRUE(matches(vmin, s, t, ref_reduce(x, {dim}, ref_extremum<false>))) << what;
          EXPECT_TRUE(matches(imin, s, DType::Int64, ref_reduce(x, {dim}, ref_arg<false>))) << what;
          if (t == DType::Bool) continue;  // PyTorch has no bool argmax/argmin (max/min along a dim: yes)
          EXPECT_TRUE(matches(argmax(xl, dim, keepdim), s, DType::Int64, ref_reduce(x, {dim}, ref_arg<true>))) << what;
          EXPECT_TRUE(matches(argmin(xl, dim, keepdim), s, DType::Int64, ref_reduce(x, {dim}, ref_arg<false>))) << what;
        }
      }
    }
  }
}

TEST(Reduce, ArgmaxWithoutDimIsTheFlatIndex) {
  Tensor x = random(kShape, DType::Float32, 8);
  for (Layout l : kAllLayouts) {
    Tensor xl = with_layout(x, l);
    EXPECT_TRUE(matches(argmax(xl), {}, DType::Int64, ref_reduce(x, {}, ref_arg<true>))) << layout_name(l);
    EXPECT_TRUE(matches(argmin(xl), {}, DType::Int64, ref_reduce(x, {}, ref_arg<false>))) << layout_name(l);
    EXPECT_TRUE(matches(argmax(xl, std::nullopt, true), {1, 1, 1}, DType::Int64, ref_reduce(x, {}, ref_arg<true>)));
  }
}

TEST(Reduce, NaNIsTheMaxAndTheMinAndItsFirstIndexIsReported) {
  Tensor x = tensor<float>({1, NAN, 3, NAN});
  EXPECT_TRUE(matches(max(x), {}, DType::Float32, {kNaN}));
  EXPECT_TRUE(matches(min(x), {}, DType::Float32, {kNaN}));
  EXPECT_TRUE(matches(argmax(x), {}, DType::Int64, {1}));
  EXPECT_TRUE(matches(argmin(x), {}, DType::Int64, {1}));
  EXPECT_TRUE(matches(sum(x), {}, DType::Float32, {kNaN}));
  // Long rows go through the multi-accumulator loop; a NaN in any lane must win, and the
  // first of several NaNs must be reported.
  std::vector<float> v(100);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 13);
  v[70] = NAN;
  v[41] = NAN;
  Tensor row = tensor<float>(v, {1, 100});
  auto [mv, mi] = max(row, 1);
  EXPECT_TRUE(matches(mv, {1}, DType::Float32, {kNaN}));
  EXPECT_TRUE(matches(mi, {1}, DType::Int64, {41}));
  EXPECT_TRUE(matches(min(row, 1).second, {1}, DType::Int64, {41}));
  EXPECT_TRUE(matches(max(row), {}, DType::Float32, {kNaN}));
  // Along an outer dim (each column accumulated across rows).
  Tensor cols = row.t().expand({100, 3});
  EXPECT_TRUE(matches(argmax(cols, 0), {3}, DType::Int64, {41, 41, 41}));
  EXPECT_TRUE(matches(argmax(cols.contiguous(), 0), {3}, DType::Int64, {41, 41, 41}));
}

TEST(Reduce, TiesAcrossChunksGoToTheFirstIndex) {
  // Large enough to be split into chunks reduced by different threads.
  const int64_t n = 300000;
  std::vector<float> v(n, 1.0f);
  v[200000] = 5;
  v[1000] = 5;
  v[250000] = -5;
  v[90000] = -5;
  Tensor x = tensor<float>(v);
  EXPECT_TRUE(matches(argmax(x), {}, DType::Int64, {1000}));
  EXPECT_TRUE(matches(argmin(x), {}, DType::Int64, {90000}));
  EXPECT_TRUE(matches(argmax(full({n}, 2.0)), {}, DType::Int64, {0}));
  v[123456] = NAN;
  v[234567] = NAN;
  EXPECT_TRUE(matches(argmax(tensor<float>(v)), {}, DType::Int64, {123456}));
  EXPECT_TRUE(matches(max(tensor<float>(v)), {}, DType::Float32, {kNaN}));
}

// Rows of special values stacked along every dim, then max/min (with indices) and
// argmax/argmin over every dim, in every layout. Found by AddressSanitizer (issue 25, 5b):
// under clang, `omp simd reduction(max : best)` seeded its private copies with -DBL_MAX,
// so an all -inf run (ctc_loss's log_add_exp of impossible alignments) came out as
// -DBL_MAX, no element matched it, and the first-index scan read past the run.
TEST(Reduce, MaxMinOverEveryDimOfStackedSpecialValues) {
  // Lengths around the unit-stride fold's 16 lanes and its 64-element blocks.
  for (int64_t n : {1, 2, 16, 17, 65}) {
    const auto row = [n](const std::function<double(int64_t)>& f) {
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = f(i);
      return v;
    };
    const std::vector<std::vector<double>> rows = {
        row([](int64_t) { return -kInf; }),                              // all -inf
        row([](int64_t) { return kInf; }),                               // all +inf
        row([](int64_t i) { return i == 0 ? kNaN : 1.0; }),              // NaN first
        row([n](int64_t i) { return i == n - 1 ? kNaN : -kInf; }),       // NaN last
        row([n](int64_t i) { return i == n / 2 || i == n - 1 ? kNaN : kInf; }),  // two NaNs
        row([](int64_t) { return 2.0; }),                                // all tied
        row([n](int64_t i) { return i == n / 3 || i == n - 1 ? 5.0 : i % 2 ? -1.0 : -kInf; }),  // tied max
        row([n](int64_t i) { return i == n - 1 ? -kInf : i % 3 == 0 ? -7.0 : kInf; }),  // -inf last, tied min
        row([n](int64_t i) { return i == n - 1 ? 0.5 : -kInf; }),         // one finite after -inf
        row([n](int64_t i) { return i == n - 1 ? 0.5 : kInf; }),          // one finite after +inf
    };
    for (DType t : {DType::Float64, DType::Float32, DType::BFloat16}) {
      std::vector<Tensor> parts;
      for (const auto& r : rows) parts.push_back(tensor<double>(r).to(t));
      std::vector<Tensor> stacked;
      for (int64_t at : {0, 1}) stacked.push_back(stack(parts, at));  // [rows, n] and [n, rows]
      // 3-d: the rows against themselves reversed, stacked along each of the three dims.
      std::vector<Tensor> reversed(parts.rbegin(), parts.rend());
      for (int64_t at : {0, 1, 2}) stacked.push_back(stack({stack(parts, 0), stack(reversed, 0)}, at));
      for (const Tensor& x : stacked) {
        for (int64_t dim = 0; dim < x.dim(); ++dim) {
          const Shape s = reduced_shape(x.shape(), {dim}, true);
          const std::vector<double> max_v = ref_reduce(x, {dim}, ref_extremum<true>),
                                    max_i = ref_reduce(x, {dim}, ref_arg<true>),
                                    min_v = ref_reduce(x, {dim}, ref_extremum<false>),
                                    min_i = ref_reduce(x, {dim}, ref_arg<false>);
          for (Layout l : kAllLayouts) {
            Tensor xl = with_layout(x, l);
            const std::string what = std::string(dtype_name(t)) + " n " + std::to_string(n) + " shape " +
                                     shape_str(x.shape()) + " dim " + std::to_string(dim) + " " + layout_name(l);
            auto [vmax, imax] = max(xl, dim, true);
            auto [vmin, imin] = min(xl, dim, true);
            EXPECT_TRUE(matches(vmax, s, t, max_v)) << what;
            EXPECT_TRUE(matches(imax, s, DType::Int64, max_i)) << what;
            EXPECT_TRUE(matches(vmin, s, t, min_v)) << what;
            EXPECT_TRUE(matches(imin, s, DType::Int64, min_i)) << what;
            EXPECT_TRUE(matches(argmax(xl, dim, true), s, DType::Int64, max_i)) << what;
            EXPECT_TRUE(matches(argmin(xl, dim, true), s, DType::Int64, min_i)) << what;
          }
        }
        EXPECT_TRUE(matches(argmax(x), {}, DType::Int64, ref_reduce(x, {}, ref_arg<true>))) << shape_str(x.shape());
        EXPECT_TRUE(matches(argmin(x), {}, DType::Int64, ref_reduce(x, {}, ref_arg<false>))) << shape_str(x.shape());
      }
    }
  }
  // ctc_loss's case: two [1, 1] terms of -inf stacked and reduced along the new dim.
  Tensor a = full({1, 1}, -kInf, DType::Float64);
  auto [v, i] = max(stack({a, a}, 0), 0, true);
  EXPECT_TRUE(matches(v, {1, 1, 1}, DType::Float64, {-kInf}));
  EXPECT_TRUE(matches(i, {1, 1, 1}, DType::Int64, {0}));
  // Integers: ties at the dtype's extremes go to the first index.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  Tensor ints = tensor<int64_t>({lo, lo, lo, hi, 0, hi, lo, hi, hi, lo, 0, hi}, {3, 4});
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(matches(argmax(ints, dim), reduced_shape({3, 4}, {dim}, false), DType::Int64,
                        ref_reduce(ints, {dim}, ref_arg<true>)));
    EXPECT_TRUE(matches(argmin(ints, dim), reduced_shape({3, 4}, {dim}, false), DType::Int64,
                        ref_reduce(ints, {dim}, ref_arg<false>)));
  }
}

TEST(Reduce, EveryLoopOrderAndThreadSplit) {
  // Shapes large enough to run in parallel: rows folded per output, outer dims accumulated,
  // few outputs split over chunks, and strided inputs; in float64 so the sums are tight.
  struct Case {
    Shape shape;
    Dims dims;
  };
  const std::vector<Case> cases = {{{400, 400}, {1}}, {{400, 400}, {0}},    {{400, 400}, {}},
                                   {{100000, 3}, {0}}, {{3, 100000}, {1}}, {{20, 30, 300}, {0, 2}},
                                   {{20, 30, 300}, {1}}};
  for (const Case& c : cases) {
    Tensor x = random(c.shape, DType::Float64, 9);
    Shape s = reduced_shape(c.shape, c.dims, false);
    std::vector<double> sums = ref_reduce(x, c.dims, ref_sum), vars = ref_reduce(x, c.dims, ref_var(1));
    std::vector<double> args = c.dims.size() == 1 ? ref_reduce(x, c.dims, ref_arg<true>) : std::vector<double>{};
    for (Layout l : kAllLayouts) {
      Tensor xl = with_layout(x, l);
      std::string what = shape_str(c.shape) + " dims " + shape_str(c.dims) + " " + layout_name(l);
      EXPECT_TRUE(matches(sum(xl, c.dims), s, DType::Float64, sums, 1e-12, 1e-10)) << what;
      EXPECT_TRUE(matches(var(xl, c.dims), s, DType::Float64, vars)) << what;
      if (c.dims.size() == 1) EXPECT_TRUE(matches(argmax(xl, c.dims[0]), s, DType::Int64, args)) << what;
    }
  }
}

TEST(Reduce, Float32SumsAreAccurate) {
  // 0.1f has no exact binary value; a float accumulator would drift by ~1e-3 here.
  const double tenth = static_cast<double>(0.1f);
  Tensor x = full({1000000}, 0.1f);
  EXPECT_NEAR(sum(x).item<float>() / (1e6 * tenth), 1.0, 1e-6);
  EXPECT_NEAR(mean(x).item<float>() / tenth, 1.0, 1e-6);
  Tensor m = x.view({1000, 1000});
  for (int64_t d : {0, 1}) {
    std::vector<double> s = values(sum(m, {d}));
    for (double v : s) ASSERT_NEAR(v / (1000 * tenth), 1.0, 1e-6);
  }
  Tensor tall = x.view({250000, 4});
  for (double v : values(sum(tall, {0}))) ASSERT_NEAR(v / (250000 * tenth), 1.0, 1e-6);
  // Var of values with a large common offset (naive sum-of-squares would cancel badly).
  Tensor shifted = tensor<float>({10000.5f, 10001.5f, 10002.5f, 10003.5f});
  EXPECT_TRUE(matches(var(shifted), {}, DType::Float32, {5.0 / 3.0}));
}

// A constant slice has a variance of exactly 0 (std's gradient there is 0, not NaN) along
// every loop the CPU kernel has: rows (one unit-stride run), columns (blocks of rows folded
// across neighbouring columns, then merged), strided columns, and the chunked split of a
// few long slices; 0.1 and 1e9 + 0.3 have no exact sum of copies.
TEST(Reduce, VarOfAConstantSliceIsExactlyZero) {
  for (double v : {0.1, 1e9 + 0.3}) {
    for (DType dt : {DType::Float64, DType::Float32}) {
      Tensor m = full({77, 130}, v, Options(dt));
      const auto all_zero = [](const Tensor& t) {
        for (double x : values(t))
          if (x != 0.0) return false;
        return true;
      };
      EXPECT_TRUE(all_zero(var(m, {0}))) << v << " " << dtype_name(dt) << " columns";
      EXPECT_TRUE(all_zero(var(m, {1}))) << v << " " << dtype_name(dt) << " rows";
      EXPECT_TRUE(all_zero(var(m.t(), {1}))) << v << " " << dtype_name(dt) << " transposed";
      EXPECT_TRUE(all_zero(var(m.slice(1, 0, 130, 3), {0}))) << v << " " << dtype_name(dt) << " strided columns";
      EXPECT_TRUE(all_zero(var(full({3, 300000}, v, Options(dt)), {1}))) << v << " " << dtype_name(dt) << " split";
    }
  }
}

TEST(Reduce, IntegerSumsWrapAround) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(matches(sum(tensor<int64_t>({big, 1})), {}, DType::Int64, {-std::pow(2.0, 63)}));
  EXPECT_TRUE(matches(prod(tensor<int64_t>({int64_t{1} << 62, 2})), {}, DType::Int64, {-std::pow(2.0, 63)}));
  EXPECT_TRUE(matches(cumsum(tensor<int64_t>({big, 1}), 0), {2}, DType::Int64, {std::pow(2.0, 63) - 1, -std::pow(2.0, 63)}));
  // int32 sums are taken in int64, so they do not wrap at 2^31.
  EXPECT_TRUE(matches(sum(full({4}, 1 << 30, DType::Int32)), {}, DType::Int64, {std::pow(2.0, 32)}));
}

TEST(Reduce, LogsumexpIsStable) {
  Tensor x = tensor<float>({1000, 1000, -INFINITY}, {1, 3});
  EXPECT_TRUE(matches(logsumexp(x, {1}), {1}, DType::Float32, {1000 + std::log(2.0)}));
  EXPECT_TRUE(matches(logsumexp(tensor<float>({-INFINITY, -INFINITY}), {0}), {}, DType::Float32, {-kInf}));
  EXPECT_TRUE(matches(logsumexp(tensor<float>({INFINITY, 1}), {0}), {}, DType::Float32, {kInf}));
  EXPECT_TRUE(matches(logsumexp(tensor<double>({NAN, 1}), {0}), {}, DType::Float64, {kNaN}));
  // Integers are read as float32.
  EXPECT_TRUE(matches(logsumexp(tensor<int32_t>({0, 0}), {}), {}, DType::Float32, {std::log(2.0)}));
}

TEST(Reduce, EmptyTensors) {
  Tensor e = zeros({0, 3});
  EXPECT_TRUE(matches(sum(e), {}, DType::Float32, {0}));
  EXPECT_TRUE(matches(sum(e, {0}), {3}, DType::Float32, {0, 0, 0}));
  EXPECT_TRUE(matches(sum(e, {1}), {0}, DType::Float32, {}));
  EXPECT_TRUE(matches(sum(e, {0}, true), {1, 3}, DType::Float32, {0, 0, 0}));
  EXPECT_TRUE(matches(sum(zeros({0}, DType::Int32)), {}, DType::Int64, {0}));
  EXPECT_TRUE(matches(prod(e, {0}), {3}, DType::Float32, {1, 1, 1}));
  EXPECT_TRUE(matches(mean(e), {}, DType::Float32, {kNaN}));
  EXPECT_TRUE(matches(var(e, {0}), {3}, DType::Float32, {kNaN, kNaN, kNaN}));
  EXPECT_TRUE(matches(norm(e), {}, DType::Float32, {0}));
  // The inf-norm is a max: nothing to take it over is refused, as torch.linalg.vector_norm
  // does (the whole empty tensor, or an empty dim); a non-empty dim of it is fine.
  expect_error([&] { norm(e, kInf); }, {"norm", "inf norm", "empty tensor", "[0, 3]"});
  expect_error([&] { norm(e, kInf, {0}); }, {"norm", "inf norm", "dim 0 of size 0", "[0, 3]"});
  expect_error([&] { norm(e, kInf, {-2, 1}, true); }, {"norm", "dim -2 of size 0"});
  EXPECT_TRUE(matches(norm(e, kInf, {1}), {0}, DType::Float32, {}));
  EXPECT_TRUE(matches(norm(e, 3.0, {0}), {3}, DType::Float32, {0, 0, 0}));
  EXPECT_TRUE(matches(logsumexp(e, {0}), {3}, DType::Float32, {-kInf, -kInf, -kInf}));
  EXPECT_TRUE(matches(all(e), {}, DType::Bool, {1}));
  EXPECT_TRUE(matches(any(e), {}, DType::Bool, {0}));
  auto [v, i] = max(e, 1);
  EXPECT_TRUE(matches(v, {0}, DType::Float32, {}));
  EXPECT_TRUE(matches(i, {0}, DType::Int64, {}));
  expect_error([&] { max(e); }, {"max", "empty", "[0, 3]"});
  expect_error([&] { min(e); }, {"min", "empty", "[0, 3]"});
  expect_error([&] { max(e, 0); }, {"max", "dim 0", "size 0", "[0, 3]"});
  expect_error([&] { argmax(e); }, {"argmax", "empty", "[0, 3]"});
  expect_error([&] { argmin(e, -2); }, {"argmin", "dim -2", "size 0"});
}

TEST(Reduce, ZeroDimTensors) {
  Tensor s = scalar_tensor(2.5, DType::Float64);
  for (const Dims& dims : std::vector<Dims>{{}, {0}, {-1}}) {
    for (bool keepdim : {false, true}) {
      EXPECT_TRUE(matches(sum(s, dims, keepdim), {}, DType::Float64, {2.5}));
      EXPECT_TRUE(matches(mean(s, dims, keepdim), {}, DType::Float64, {2.5}));
      EXPECT_TRUE(matches(prod(s, dims, keepdim), {}, DType::Float64, {2.5}));
      EXPECT_TRUE(matches(var(s, dims, false, keepdim), {}, DType::Float64, {0}));
      EXPECT_TRUE(matches(var(s, dims, true, keepdim), {}, DType::Float64, {kNaN}));
      EXPECT_TRUE(matches(norm(s, 2, dims, keepdim), {}, DType::Float64, {2.5}));
      EXPECT_TRUE(matches(logsumexp(s, dims, keepdim), {}, DType::Float64, {2.5}));
      EXPECT_TRUE(matches(all(s, dims, keepdim), {}, DType::Bool, {1}));
    }
  }
  EXPECT_TRUE(matches(sum(scalar_tensor(7, DType::Int32)), {}, DType::Int64, {7}));
  EXPECT_TRUE(matches(max(s), {}, DType::Float64, {2.5}));
  for (int64_t dim : {0, -1}) {
    for (bool keepdim : {false, true}) {
      auto [v, i] = max(s, dim, keepdim);
      EXPECT_TRUE(matches(v, {}, DType::Float64, {2.5}));
      EXPECT_TRUE(matches(i, {}, DType::Int64, {0}));
      EXPECT_TRUE(matches(argmin(s, dim, keepdim), {}, DType::Int64, {0}));
    }
  }
  EXPECT_TRUE(matches(argmax(s), {}, DType::Int64, {0}));
  expect_error([&] { sum(s, {1}); }, {"sum", "dim 1", "out of range"});
  expect_error([&] { sum(s, {0, -1}); }, {"sum", "more than once"});
  expect_error([&] { max(s, 1); }, {"max", "dim 1", "out of range"});
}

TEST(Reduce, MethodsForwardToTheFreeFunctions) {
  Tensor x = tensor<float>({1, 5, 3, 4, 2, 6}, {2, 3});
  EXPECT_TRUE(matches(x.sum(), {}, DType::Float32, {21}));
  EXPECT_TRUE(matches(x.sum({0}), {3}, DType::Float32, {5, 7, 9}));
  EXPECT_TRUE(matches(x.sum({1}, true), {2, 1}, DType::Float32, {9, 12}));
  EXPECT_TRUE(matches(x.mean(), {}, DType::Float32, {3.5}));
  EXPECT_TRUE(matches(x.mean({-1}), {2}, DType::Float32, {3, 4}));
  EXPECT_TRUE(matches(x.argmax(), {}, DType::Int64, {5}));
  EXPECT_TRUE(matches(x.argmax(1, true), {2, 1}, DType::Int64, {1, 2}));
}

TEST(Reduce, BadArgumentsThrowNamingTheOp) {
  Tensor x = zeros({2, 3, 4});
  expect_error([&] { sum(x, {3}); }, {"sum", "dim 3", "out of range", "3 dimension"});
  expect_error([&] { mean(x, {-4}); }, {"mean", "dim -4", "out of range"});
  expect_error([&] { sum(x, {1, -2}); }, {"sum", "dim -2", "more than once", "[2, 3, 4]"});
  expect_error([&] { prod(x, {0, 0}); }, {"prod", "more than once"});
  expect_error([&] { max(x, 5); }, {"max", "dim 5", "out of range"});
  expect_error([&] { argmax(x, -4); }, {"argmax", "dim -4"});
  Tensor ints = zeros({2, 3}, DType::Int64);
  expect_error([&] { mean(ints); }, {"mean", "floating point", "int64", "[2, 3]"});
  expect_error([&] { var(ints); }, {"var", "floating point", "int64"});
  expect_error([&] { wick::std(ints); }, {"std", "floating point", "int64"});
  expect_error([&] { norm(ints); }, {"norm", "floating point", "int64"});
  expect_error([&] { norm(x, -1); }, {"norm", "p must be non-negative", "[2, 3, 4]"});
  EXPECT_TRUE(matches(norm(x, 0), {}, x.dtype(), {0}));  // the 0-"norm" counts nonzeros: none here
  expect_error([] { sum(Tensor()); }, {"sum", "undefined"});
}

}  // namespace
}  // namespace wick::test
