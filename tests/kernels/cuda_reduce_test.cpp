// CUDA reductions, softmax and the scans against the CPU kernels, on the same inputs and layouts.
//
// Tolerances: the CPU accumulates floats in double, CUDA float32 in float (see
// kernels/cuda/reduce.cu), so a float32 result folding n values of magnitude <= m may differ
// by the rounding of the float tree, bounded by (lane run + tree depth) * 2^-24 * n * m; the
// tests allow 8 * 2^-24 * n * m (plus rtol 1e-5), which still catches a dropped or doubled
// element (an error of about m). 16-bit results may differ by one unit in the last place
// (the CPU's double and CUDA's float sums can round to different neighbours).
#include <algorithm>
#include <cmath>

#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"

namespace wick::test {
namespace {

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const std::vector<DType> kAllTypes = {DType::Bool,    DType::UInt8,    DType::Int32,   DType::Int64,
                                      DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

struct Tol {
  double rtol, atol;
};

// The tolerance of a result that folds n values of magnitude up to m (see the top).
Tol fold_tol(DType t, int64_t n, double m) {
  const double nm = static_cast<double>(std::max<int64_t>(n, 1)) * m;
  switch (t) {
    case DType::Float64: return {1e-12, 1e-14 * nm};
    case DType::Float32: return {1e-5, 8 * 0x1p-24 * nm};
    case DType::Float16: return {2e-3, 1e-3};
    case DType::BFloat16: return {1.6e-2, 1e-2};
    default: return {0, 0};
  }
}

std::string dims_str(const Dims& d) {
  std::string s = "{";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "}";
}

// Every non-empty subset of the dims of an nd-dim tensor (the full one included).
std::vector<Dims> dim_subsets(int64_t nd) {
  std::vector<Dims> out;
  for (uint64_t mask = 1; mask < (uint64_t{1} << nd); ++mask) {
    Dims d;
    for (int64_t k = 0; k < nd; ++k)
      if ((mask >> k) & 1) d.push_back(k);
    out.push_back(d);
  }
  return out;
}

int64_t folded(const Shape& s, const Dims& dims) {
  if (dims.empty()) return numel_of(s);
  int64_t n = 1;
  for (int64_t d : dims) n *= s[d];
  return n;
}

// A named reduction of one tensor over dims.
struct ReduceCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Dims&)> f;
  bool floating_only;
  double lo, hi;  // input range: products need values near 1
};

const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> cases = {
      {"sum", [](const Tensor& x, const Dims& d) { return sum(x, d); }, false, -2, 2},
      {"prod", [](const Tensor& x, const Dims& d) { return prod(x, d); }, false, 0.8, 1.25},
      {"all", [](const Tensor& x, const Dims& d) { return all(x, d); }, false, -2, 2},
      {"any", [](const Tensor& x, const Dims& d) { return any(x, d); }, false, -2, 2},
      {"mean", [](const Tensor& x, const Dims& d) { return mean(x, d, true); }, true, -2, 2},
      {"var", [](const Tensor& x, const Dims& d) { return var(x, d); }, true, -2, 2},
      {"var_biased", [](const Tensor& x, const Dims& d) { return var(x, d, false); }, true, -2, 2},
      {"norm1", [](const Tensor& x, const Dims& d) { return norm(x, 1.0, d); }, true, -2, 2},
      {"norm2", [](const Tensor& x, const Dims& d) { return norm(x, 2.0, d); }, true, -2, 2},
      {"norm3", [](const Tensor& x, const Dims& d) { return norm(x, 3.0, d); }, true, -2, 2},
      {"norm_inf", [](const Tensor& x, const Dims& d) { return norm(x, INFINITY, d); }, true, -2, 2},
      {"logsumexp", [](const Tensor& x, const Dims& d) { return logsumexp(x, d); }, true, -2, 2},
  };
  return cases;
}

// Tolerance of one reduction case: sums fold n values of magnitude 2 (4 for sums of
// squares, 8 for cubes); products, var and logsumexp are relative.
Tol case_tol(const ReduceCase& c, DType t, int64_t n) {
  const std::string name = c.name;
  if (!is_floating(t)) return {0, 0};
  if (name == "prod" || name == "logsumexp" || name == "norm_inf") {
    Tol tol = fold_tol(t, 1, 1);
    if (t == DType::Float32) tol.rtol = 2e-6 * std::sqrt(static_cast<double>(n)) + 1e-5;
    return tol;
  }
  if (name.rfind("var", 0) == 0) {
    Tol tol = fold_tol(t, n, 4);
    if (t == DType::Float32) tol.rtol = 3e-5;
    return tol;
  }
  const double m = name == "norm2" ? 4 : name == "norm3" ? 8 : 2;
  Tol tol = fold_tol(t, n, m);
  if (name == "mean") tol.atol /= static_cast<double>(std::max<int64_t>(n, 1));
  if (name == "norm3" && t == DType::Float32) tol.rtol = 2e-5;  // powf and the root add a few ulps
  return tol;
}

TEST(CudaReduce, EveryDimSubsetEveryLayout) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 1;
  for (const Shape& shape : {Shape{5, 17, 33}, Shape{3, 4, 5, 6}}) {
    for (const Dims& dims : dim_subsets(static_cast<int64_t>(shape.size()))) {
      for (const ReduceCase& c : reduce_cases()) {
        for (DType t : kAllTypes) {
          if (c.floating_only && !is_floating(t)) continue;
          // Every layout for the main types, two for the others (the kernel is the same).
          const bool main = t == DType::Float32 || t == DType::Int64 || t == DType::Float64;
          for (Layout l : kAllLayouts) {
            if (!main && (l == Layout::Sliced || l == Layout::Offset)) continue;
            // Integer products over {-1, 0, 1} cannot overflow.
            const bool int_prod = std::string(c.name) == "prod" && !is_floating(t);
            const Tensor x = with_layout(random(shape, t, seed++, int_prod ? -1 : c.lo, int_prod ? 1 : c.hi), l);
            const Tol tol = case_tol(c, t, folded(shape, dims));
            expect_cuda_matches_cpu(std::string(c.name) + " " + dtype_name(t) + " " + shape_str(shape) + " dims " +
                                        dims_str(dims) + " " + layout_name(l),
                                    {x}, [&](const std::vector<Tensor>& in) { return c.f(in[0], dims); }, tol.rtol,
                                    tol.atol);
          }
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaReduce, BroadcastInputAndSizeOneDims) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  // Stride-0 dims (expanded) and size-1 dims (nothing to fold along them).
  const Tensor expanded = random({5, 1, 33}, DType::Float32, 7).expand({5, 17, 33});
  const Tensor ones_dims = random({5, 1, 33, 1}, DType::Float32, 8);
  for (const ReduceCase& c : reduce_cases()) {
    for (const Dims& dims : dim_subsets(3)) {
      const Tol tol = case_tol(c, DType::Float32, folded({5, 17, 33}, dims));
      expect_cuda_matches_cpu(std::string(c.name) + " expanded dims " + dims_str(dims), {expanded},
                              [&](const std::vector<Tensor>& in) { return c.f(in[0], dims); }, tol.rtol, tol.atol);
    }
    for (const Dims& dims : dim_subsets(4)) {
      const Tol tol = case_tol(c, DType::Float32, folded({5, 1, 33, 1}, dims));
      expect_cuda_matches_cpu(std::string(c.name) + " size-1 dims " + dims_str(dims), {ones_dims},
                              [&](const std::vector<Tensor>& in) { return c.f(in[0], dims); }, tol.rtol, tol.atol);
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// Odd lengths from 1 to 2^20 + 3: one row (full reduction: block partials and the second
// pass), many rows (one warp or block per row) and many columns (column mode).
TEST(CudaReduce, OddSizesRowsAndColumns) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 100;
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{33}, int64_t{1000}, int64_t{4097}, (int64_t{1} << 20) + 3}) {
    for (const ReduceCase& c : reduce_cases()) {
      for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::Int32}) {
        if (c.floating_only && !is_floating(t)) continue;
        if (t != DType::Float32 && n > 4097 && std::string(c.name) != "sum") continue;
        const Tensor x = random({n}, t, seed++, c.lo, c.hi);
        const Tol tol = case_tol(c, t, n);
        expect_cuda_matches_cpu(std::string(c.name) + " " + dtype_name(t) + " [" + std::to_string(n) + "]", {x},
                                [&](const std::vector<Tensor>& in) { return c.f(in[0], {}); }, tol.rtol, tol.atol);
      }
    }
    if (n > 4097) continue;
    for (const Shape& s : {Shape{33, n}, Shape{n, 33}, Shape{3, n}}) {
      for (int64_t dim : {0, 1}) {
        for (const char* name : {"sum", "var", "logsumexp", "norm2"}) {
          const ReduceCase& c = *std::find_if(reduce_cases().begin(), reduce_cases().end(),
                                              [&](const ReduceCase& r) { return std::string(r.name) == name; });
          for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Offset}) {
            const Tensor x = with_layout(random(s, DType::Float32, seed++, c.lo, c.hi), l);
            const Tol tol = case_tol(c, DType::Float32, s[dim]);
            expect_cuda_matches_cpu(std::string(name) + " " + shape_str(s) + " dim " + std::to_string(dim) + " " +
                                        layout_name(l),
                                    {x}, [&](const std::vector<Tensor>& in) { return c.f(in[0], {dim}); }, tol.rtol,
                                    tol.atol);
          }
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// Integers in [-8, 8] sum exactly in float32 (every partial sum is an integer below 2^24),
// so any lost, doubled or misplaced element shows; and the bound on random reals.
TEST(CudaReduce, Float32SumOfAMillionElements) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  const int64_t n = (int64_t{1} << 20) + 3;
  const Tensor ints = random({n}, DType::Int32, 5, -8, 8).to(DType::Float32);
  expect_cuda_matches_cpu("exact sum", {ints}, [](const std::vector<Tensor>& in) { return sum(in[0]); }, 0, 0);
  expect_cuda_matches_cpu("exact sum of rows", {ints.narrow(0, 0, 1024 * 1024).view({1024, 1024})},
                          [](const std::vector<Tensor>& in) { return sum(in[0], {0}); }, 0, 0);
  // Random reals: the float tree's worst case is about 170 * 2^-24 * sum |x| here (16
  // elements per lane, 16 warps, 129 chunks); the typical error is far smaller, and 1e-7 *
  // sum |x| (about 0.1) still leaves a 100x margin over it.
  const Tensor x = random({n}, DType::Float32, 6);
  double abs_sum = 0;
  for (double v : values(x)) abs_sum += std::fabs(v);
  expect_cuda_matches_cpu("random sum", {x}, [](const std::vector<Tensor>& in) { return sum(in[0]); }, 0,
                          1e-7 * abs_sum);
  EXPECT_EQ(checks.violations(), 0u);
}

// Welford: values 1e4 + U(-1, 1) have a variance of 1/3; a float sum of squares would lose it.
TEST(CudaReduce, VarIsStableAwayFromZero) {
  WICK_REQUIRE_CUDA();
  for (int64_t n : {int64_t{4097}, (int64_t{1} << 20) + 3}) {
    const Tensor x = random({n}, DType::Float32, 9, 1e4 - 1, 1e4 + 1);
    expect_cuda_matches_cpu("var of " + std::to_string(n), {x}, [](const std::vector<Tensor>& in) { return var(in[0]); },
                            1e-3, 0);
  }
  const Tensor rows = random({64, 4097}, DType::Float32, 10, 1e4 - 1, 1e4 + 1);
  for (int64_t dim : {0, 1})
    expect_cuda_matches_cpu("var rows dim " + std::to_string(dim), {rows},
                            [&](const std::vector<Tensor>& in) { return var(in[0], {dim}); }, 1e-3, 0);
}

// NaN propagates through sums, max and min; infinities through logsumexp; a single element
// has no unbiased variance (0 / 0).
TEST(CudaReduce, SpecialValues) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  const double inf = INFINITY, nan = NAN;
  const std::vector<std::vector<double>> rows = {
      {1, nan, 3, 4},   {nan, nan, 0, 1}, {inf, 1, 2, 3},    {-inf, 1, 2, 3},
      {-inf, -inf, -inf, -inf}, {inf, inf, 1, 1}, {inf, -inf, 0, 0}, {-inf, nan, 2, inf},
  };
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  for (DType t : kFloatTypes) {
    const Tensor x = tensor<double>(flat, {static_cast<int64_t>(rows.size()), 4}).to(t);
    for (const ReduceCase& c : reduce_cases()) {
      if (std::string(c.name) == "prod" || std::string(c.name).rfind("var", 0) == 0) continue;  // inf * 0, inf - inf
      for (const Dims& dims : {Dims{1}, Dims{0}, Dims{}}) {
        const Tol tol = case_tol(c, t, 4);
        expect_cuda_matches_cpu(std::string(c.name) + " special " + dtype_name(t) + " dims " + dims_str(dims), {x},
                                [&](const std::vector<Tensor>& in) { return c.f(in[0], dims); }, tol.rtol, tol.atol);
      }
    }
    for (auto f : {+[](const Tensor& v) { return max(v); }, +[](const Tensor& v) { return min(v); }})
      expect_cuda_matches_cpu(std::string("max/min special ") + dtype_name(t), {x},
                              [&](const std::vector<Tensor>& in) { return f(in[0]); });
    expect_cuda_matches_cpu("var of one element", {x.narrow(1, 0, 1).contiguous()},
                            [](const std::vector<Tensor>& in) { return var(in[0], {1}); });
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(CudaReduce, EmptyAndZeroDim) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  for (DType t : {DType::Float32, DType::Int64, DType::Float16}) {
    for (const Shape& s : {Shape{0}, Shape{3, 0, 5}, Shape{}}) {
      const Tensor x = random(s, t, 11);
      std::vector<Dims> dim_sets = {Dims{}};
      if (s.size() == 3) dim_sets = {Dims{}, Dims{0}, Dims{1}, Dims{2}, Dims{0, 2}};
      if (s.empty()) dim_sets = {Dims{}, Dims{0}};
      for (const Dims& dims : dim_sets) {
        for (const ReduceCase& c : reduce_cases()) {
          if (c.floating_only && !is_floating(t)) continue;
          expect_cuda_matches_cpu(std::string(c.name) + " " + dtype_name(t) + " " + shape_str(s) + " dims " +
                                      dims_str(dims),
                                  {x}, [&](const std::vector<Tensor>& in) { return c.f(in[0], dims); });
        }
      }
      if (numel_of(s) > 0) {
        expect_cuda_matches_cpu("max 0-d", {x}, [](const std::vector<Tensor>& in) { return max(in[0]); });
        expect_cuda_matches_cpu("argmax 0-d", {x}, [](const std::vector<Tensor>& in) { return argmax(in[0]); });
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// Max and min with indices: ties (small integer ranges make many) go to the first index,
// NaN wins; every dim, layout and dtype, and long rows and columns.
TEST(CudaReduce, MaxMinWithIndex) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 200;
  const auto cases = [](int64_t dim) {
    return std::vector<std::pair<std::string, OpFn>>{
        {"max values", [dim](const std::vector<Tensor>& in) { return max(in[0], dim).first; }},
        {"max indices", [dim](const std::vector<Tensor>& in) { return max(in[0], dim).second; }},
        {"min values", [dim](const std::vector<Tensor>& in) { return min(in[0], dim, true).first; }},
        {"min indices", [dim](const std::vector<Tensor>& in) { return min(in[0], dim, true).second; }},
    };
  };
  for (DType t : kAllTypes) {
    for (Layout l : kAllLayouts) {
      // Values in [-2, 2]: integers tie a lot; floats get a few NaNs.
      Tensor x = random({5, 17, 33}, t, seed++, -2, 2);
      if (is_floating(t)) {
        std::vector<double> v = values(x);
        for (size_t i = 0; i < v.size(); i += 97) v[i] = NAN;
        x = tensor<double>(v, x.shape()).to(t);
      }
      x = with_layout(x, l);
      for (int64_t dim = 0; dim < 3; ++dim)
        for (const auto& [name, f] : cases(dim))
          expect_cuda_matches_cpu(name + " " + dtype_name(t) + " dim " + std::to_string(dim) + " " + layout_name(l),
                                  {x}, f);
    }
  }
  for (const Shape& s : {Shape{3, 4097}, Shape{4097, 3}, Shape{(int64_t{1} << 20) + 3}}) {
    const Tensor x = random(s, DType::Int32, seed++, -50, 50);  // ties across chunks
    for (int64_t dim = 0; dim < static_cast<int64_t>(s.size()); ++dim)
      for (const auto& [name, f] : cases(dim)) expect_cuda_matches_cpu(name + " " + shape_str(s), {x}, f);
    expect_cuda_matches_cpu("argmax flat " + shape_str(s), {x},
                            [](const std::vector<Tensor>& in) { return argmax(in[0]); });
    expect_cuda_matches_cpu("argmin flat " + shape_str(s), {x},
                            [](const std::vector<Tensor>& in) { return argmin(in[0]); });
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// Kernel contract errors, called through the slot directly.
TEST(CudaReduce, UnsupportedDTypesThrow) {
  WICK_REQUIRE_CUDA();
  const KernelTable& k = kernels(Device::cuda());
  const Tensor xi = zeros({4}, Options(DType::Int32, Device::cuda()));
  const Tensor out = empty({1}, Options(DType::Int32, Device::cuda()));
  expect_error([&] { k.reduce(ReduceOp::Mean, out, xi, 1, 0); }, {"mean", "cuda", "int32"});
  expect_error([&] { k.reduce(ReduceOp::LogSumExp, out, xi, 1, 0); }, {"logsumexp", "cuda", "int32"});
  expect_error([&] { k.softmax(empty({4}, Options(DType::Int32, Device::cuda())), xi, 0, false); },
               {"softmax", "cuda", "int32"});
  const Tensor xf = zeros({4}, Options(DType::Float32, Device::cuda()));
  expect_error([&] { k.reduce_with_index(ReduceOp::Sum, empty({1}, xf.options()), empty({1}, Options(DType::Int64, Device::cuda())), xf, 0); },
               {"reduce_with_index", "sum", "no index form"});
  expect_error([&] { k.reduce(ReduceOp::Sum, empty({1}, xf.options()), xi, 1, 0); }, {"sum", "float32", "int64"});
}

// --- softmax and scans ---------------------------------------------------------------

TEST(CudaSoftmax, RowsColumnsAndLayouts) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 300;
  // Short rows (a warp each), long rows (a block each, up to 1024 threads), and every dim
  // of a 3-d tensor (columns for the non-last dims).
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1}, 0},        {{3}, 0},          {{17, 33}, 1},     {{17, 33}, 0},   {{33, 1000}, 1},  {{8, 1025}, 1},
      {{8, 4097}, 1},  {{2, 20000}, 1},   {{5, 17, 33}, 0},  {{5, 17, 33}, 1}, {{5, 17, 33}, 2}, {{4097, 3}, 0},
      {{}, 0},         {{0, 5}, 1},       {{5, 0}, 1},
  };
  for (DType t : kFloatTypes) {
    // float32: the sum of exponentials is float here and double on the CPU, and log-softmax
    // values near 0 are differences of numbers near log(n) + max.
    const Tol tol = t == DType::Float32 ? Tol{1e-5, 1e-5} : Tol{default_rtol(t), default_atol(t)};
    for (const auto& [shape, dim] : cases) {
      for (Layout l : kAllLayouts) {
        const Tensor x = with_layout(random(shape, t, seed++, -8, 8), l);
        for (bool log : {false, true}) {
          expect_cuda_matches_cpu(std::string(log ? "log_softmax " : "softmax ") + dtype_name(t) + " " +
                                      shape_str(shape) + " dim " + std::to_string(dim) + " " + layout_name(l),
                                  {x}, [&](const std::vector<Tensor>& in) {
                                    return log ? log_softmax(in[0], dim) : softmax(in[0], dim);
                                  }, tol.rtol, tol.atol);
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// -inf entries drop out, an all -inf row and any +inf or NaN make the row NaN (as on the CPU).
TEST(CudaSoftmax, SpecialValues) {
  WICK_REQUIRE_CUDA();
  const double inf = INFINITY;
  const Tensor x = tensor<double>({-inf, 1, 2, 3, -inf, -inf, -inf, -inf, inf, 1, 2, 3, 1, NAN, 2, 3}, {4, 4});
  for (DType t : kFloatTypes)
    for (int64_t dim : {0, 1})
      for (bool log : {false, true})
        expect_cuda_matches_cpu(std::string("special ") + dtype_name(t) + " dim " + std::to_string(dim), {x.to(t)},
                                [&](const std::vector<Tensor>& in) {
                                  return log ? log_softmax(in[0], dim) : softmax(in[0], dim);
                                },
                                t == DType::Float32 ? 1e-5 : -1, t == DType::Float32 ? 1e-5 : -1);
}

TEST(CudaCumsum, EveryDimDTypeAndLength) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 400;
  // Rows up to 2048 are scanned by a warp, longer ones by a block over several tiles.
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1}, 0},          {{3}, 0},          {{17, 33}, 1},     {{17, 33}, 0},     {{4, 2048}, 1},
      {{4, 2049}, 1},    {{3, 10000}, 1},   {{5, 17, 33}, 0},  {{5, 17, 33}, 1},  {{5, 17, 33}, 2},
      {{}, 0},           {{0, 4}, 1},       {{1000, 7}, 0},
  };
  for (DType t : kAllTypes) {
    for (const auto& [shape, dim] : cases) {
      for (Layout l : kAllLayouts) {
        if (t != DType::Float32 && (l == Layout::Sliced || l == Layout::Offset)) continue;
        const Tensor x = with_layout(random(shape, t, seed++, -4, 4), l);
        const int64_t n = shape.empty() ? 1 : shape[dim];
        // Both sides accumulate float32 in double; 16-bit floats differ in their last place;
        // float64 prefix sums are added in another order (a scan tree against a serial loop),
        // so they differ by the rounding of n values of magnitude 4.
        const Tol tol = t == DType::Float16    ? Tol{2e-3, 1e-3}
                        : t == DType::BFloat16 ? Tol{1.6e-2, 1e-2}
                        : t == DType::Float64  ? fold_tol(t, n, 4)
                                               : fold_tol(t, 1, 1);
        expect_cuda_matches_cpu(std::string("cumsum ") + dtype_name(t) + " " + shape_str(shape) + " dim " +
                                    std::to_string(dim) + " " + layout_name(l) + " n " + std::to_string(n),
                                {x}, [&](const std::vector<Tensor>& in) { return cumsum(in[0], dim); }, tol.rtol,
                                tol.atol);
      }
    }
  }
  // Integers sum exactly: a long float32 row of small integers must match to the last bit.
  const Tensor ints = random({2, 100000}, DType::Int32, 9, -8, 8).to(DType::Float32);
  expect_cuda_matches_cpu("exact float cumsum", {ints}, [](const std::vector<Tensor>& in) { return cumsum(in[0], 1); },
                          0, 0);
  EXPECT_EQ(checks.violations(), 0u);
}

// The other scans on the cumsum kernel's paths: warp rows (<= 2048), block rows over several
// tiles (> 2048, and > 1024 threads' worth of elements), many rows, columns (non-last dims),
// 0-d and empty, every layout and every dtype each op takes.
TEST(CudaScan, CumprodCummaxCumminLogcumsumexp) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 500;
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{1}, 0},         {{3}, 0},          {{17, 33}, 1},    {{17, 33}, 0},     {{4, 1025}, 1},
      {{4, 2049}, 1},   {{3, 10000}, 1},   {{5, 17, 33}, 0}, {{5, 17, 33}, 1},  {{5, 17, 33}, 2},
      {{}, 0},          {{0, 4}, 1},       {{1000, 7}, 0},   {{1000, 7}, -1},   {{600, 40}, 1},
  };
  // The simulator runs every CUDA thread as a fiber: the long and many-row cases (the block
  // and multi-tile paths, which do not depend on the element type) run for one type of each
  // kind (the states are 4, 8 and 16 bytes), the short ones for every dtype.
  auto is_large = [](const Shape& s) { return numel_of(s) > 2000; };
  const std::vector<DType> large_types = {DType::Int32, DType::Float16, DType::Float32, DType::Float64};
  for (DType t : kAllTypes) {
    for (const auto& c : cases) {
      const Shape& shape = c.first;
      const int64_t dim = c.second;  // a plain variable: clang 14 cannot capture bindings
      if (is_large(shape) && std::find(large_types.begin(), large_types.end(), t) == large_types.end()) continue;
      for (Layout l : kAllLayouts) {
        if ((t != DType::Float32 || is_large(shape)) && (l == Layout::Sliced || l == Layout::Offset)) continue;
        const std::string where = std::string(dtype_name(t)) + " " + shape_str(shape) + " dim " +
                                  std::to_string(dim) + " " + layout_name(l);
        // Values near +-1 keep long products finite; small integers give cummax ties.
        const Tensor near_one = with_layout(random(shape, t, seed++, 0.9, 1.1), l);
        const Tensor few_values = with_layout(random(shape, DType::Int64, seed++, -3, 3).to(t), l);
        const int64_t n = shape.empty() ? 1 : shape[dim < 0 ? dim + shape.size() : dim];
        const Tol tol = t == DType::Float16    ? Tol{2e-3, 1e-3}
                        : t == DType::BFloat16 ? Tol{1.6e-2, 1e-2}
                        : t == DType::Float64  ? fold_tol(t, n, 1)
                                               : fold_tol(t, 1, 1);
        expect_cuda_matches_cpu("cumprod " + where, {near_one},
                                [&](const std::vector<Tensor>& in) { return cumprod(in[0], dim); }, tol.rtol, tol.atol);
        for (bool is_max : {true, false}) {
          // Values (small integers, exact in float64) and indices side by side.
          expect_cuda_matches_cpu(std::string(is_max ? "cummax " : "cummin ") + where, {few_values},
                                  [&](const std::vector<Tensor>& in) {
                                    auto r = is_max ? cummax(in[0], dim) : cummin(in[0], dim);
                                    return stack({r.first.to(DType::Float64), r.second.to(DType::Float64)});
                                  }, 0, 0);
        }
        if (is_floating(t)) {
          const Tensor x = with_layout(random(shape, t, seed++, -8, 8), l);
          expect_cuda_matches_cpu("logcumsumexp " + where, {x},
                                  [&](const std::vector<Tensor>& in) { return logcumsumexp(in[0], dim); },
                                  t == DType::Float16 || t == DType::BFloat16 ? tol.rtol : 1e-5,
                                  t == DType::Float64 ? 1e-12 : t == DType::Float32 ? 1e-5 : tol.atol);
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// NaN, infinities and ties where a warp or block boundary splits them: the combining steps
// must keep "the latest NaN" and "the last of equal values" across partial prefixes.
TEST(CudaScan, SpecialValuesAcrossTiles) {
  WICK_REQUIRE_CUDA();
  const double inf = INFINITY;
  for (int64_t n : {40, 3000}) {
    std::vector<double> v(static_cast<size_t>(2 * n));
    for (int64_t i = 0; i < n; ++i) {
      v[static_cast<size_t>(i)] = i % 7 == 3 ? 5 : i % 5;                    // ties
      v[static_cast<size_t>(n + i)] = i == n / 3 || i == n - 2 ? NAN : i == 1 ? -inf : i == n / 2 ? inf : i % 3;
    }
    const Tensor x = tensor<double>(v, {2, n});
    for (DType t : kFloatTypes) {
      const std::string what = std::string(dtype_name(t)) + " n " + std::to_string(n);
      for (int64_t dim : {1, 0}) {
        const Tensor xt = dim == 1 ? x.to(t) : x.to(t).t().contiguous();
        for (bool is_max : {true, false}) {
          expect_cuda_matches_cpu(std::string(is_max ? "cummax" : "cummin") + " special " + what, {xt},
                                  [&](const std::vector<Tensor>& in) {
                                    return (is_max ? cummax(in[0], dim) : cummin(in[0], dim)).second;
                                  }, 0, 0);
        }
        expect_cuda_matches_cpu("logcumsumexp special " + what, {xt},
                                [&](const std::vector<Tensor>& in) { return logcumsumexp(in[0], dim); },
                                t == DType::Float32 ? 1e-5 : -1, t == DType::Float32 ? 1e-5 : -1);
        expect_cuda_matches_cpu("cumprod special " + what, {xt},
                                [&](const std::vector<Tensor>& in) { return cumprod(in[0], dim); });
      }
    }
  }
}

TEST(CudaScan, RefusesIntegerLogcumsumexpInTheKernel) {
  WICK_REQUIRE_CUDA();
  const KernelTable& k = kernels(Device::cuda());
  const Tensor xi = zeros({4}, Options(DType::Int32, Device::cuda()));
  expect_error([&] { k.scan(ScanOp::LogSumExp, empty({4}, xi.options()), Tensor(), xi, 0); },
               {"logcumsumexp", "cuda", "int32"});
}

}  // namespace
}  // namespace wick::test
