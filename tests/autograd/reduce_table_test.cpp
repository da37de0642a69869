// The reductions over dims as one declared table (issue 13, section 1), like the unary
// table: each row gives the Tensor op, the Variable op (when differentiable), a float64
// fold as reference, its dtypes, the kernel it reaches and the tolerance of a CUDA result.
// The same rows drive
//   - the reference check over every dtype, four layouts, nine dim sets, keepdim and 0-d
//     (one gtest instance per row and dtype: Rows/ReduceTable.Reference/logsumexp_float16,
//     tests/support/row_params.h),
//   - the gradient table (first and second order, tests/autograd/cases.h),
//   - CUDA against the CPU: every dim subset and layout (an instance per row and dtype),
//     broadcast and size-1 dims, odd
//     lengths up to 2^20 + 3 as one row, many rows and many columns, NaN and infinities,
//     empty and 0-d inputs,
// and every reduce kernel op (ReduceOp in tensor/dispatch.h) must have a row. The rules no
// table can express (ties and NaN with indices, accuracy, chunking, refusals) are tested in
// tests/tensor/reduce_test.cpp, tests/kernels/cuda_reduce_test.cpp and
// gradcheck_reduce_test.cpp.
#include "tests/autograd/cases.h"

#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"
#include "tests/support/dtype_sets.h"
#include "tests/support/reduce_reference.h"
#include "tests/support/row_params.h"

namespace wick::test {
namespace {

// The result dtype: the input's, int64 for integer inputs (sum, prod), or bool (all/any;
// uint8 stays uint8, as PyTorch's).
enum class Out { Same, Widened, Truth };

using TolFn = Tol (*)(DType t, int64_t n);

// Sums of n terms of magnitude up to m.
template <int m>
Tol sum_tol(DType t, int64_t n) {
  return fold_tol(t, n, m);
}
Tol mean_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, n, 2);
  tol.atol /= static_cast<double>(std::max<int64_t>(n, 1));
  return tol;
}
// Products, extremes and logsumexp: relative.
Tol relative_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, 1, 1);
  if (t == DType::Float32) tol.rtol = 2e-6 * std::sqrt(static_cast<double>(n)) + 1e-5;
  return tol;
}
Tol var_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, n, 4);
  if (t == DType::Float32) tol.rtol = 3e-5;
  return tol;
}
Tol cube_tol(DType t, int64_t n) {
  Tol tol = fold_tol(t, n, 8);
  if (t == DType::Float32) tol.rtol = 2e-5;  // powf and the root add a few ulps
  return tol;
}

using V = const Variable&;

struct ReduceRow {
  const char* name;  // its first word is the function
  ReduceOp kernel;
  std::function<Tensor(const Tensor&, const Dims&, bool)> op;
  std::function<Variable(V, const Dims&, bool)> grad_op;  // null: not differentiable
  Fold ref;
  std::vector<DType> dtypes;
  Out out;
  TolFn cuda_tol;
  double lo = -2, hi = 2;          // floating inputs (and the gradient cases' domain)
  double int_lo = -2, int_hi = 2;  // integer inputs
  bool empty_ok = true;            // false: refuses to reduce over an empty dim
  bool zeros = false;              // inputs with zeros sprinkled in (all/any)
  DeviceMarks on = {};             // a row skipped or expected to fail on a device
};

Fold sqrt_of(Fold f) {
  return [f](const std::vector<double>& g) { return std::sqrt(f(g)); };
}

const std::vector<ReduceRow>& reduce_rows() {
  static const std::vector<ReduceRow> rows = {
      {"sum", ReduceOp::Sum, [](const Tensor& x, const Dims& d, bool k) { return sum(x, d, k); },
       [](V x, const Dims& d, bool k) { return sum(x, d, k); }, ref_sum, kAllDTypes, Out::Widened, sum_tol<2>},
      // Integer products over {-1, 0, 1} cannot overflow on the CUDA shapes.
      {"prod", ReduceOp::Prod, [](const Tensor& x, const Dims& d, bool k) { return prod(x, d, k); },
       [](V x, const Dims& d, bool k) { return prod(x, d, k); }, ref_prod, kAllDTypes, Out::Widened, relative_tol,
       0.8, 1.25, -1, 1},
      {"mean", ReduceOp::Mean, [](const Tensor& x, const Dims& d, bool k) { return mean(x, d, k); },
       [](V x, const Dims& d, bool k) { return mean(x, d, k); }, ref_mean, kFloatTypes, Out::Same, mean_tol},
      {"var", ReduceOp::Var, [](const Tensor& x, const Dims& d, bool k) { return var(x, d, true, k); },
       [](V x, const Dims& d, bool k) { return var(x, d, true, k); }, ref_var(1), kFloatTypes, Out::Same, var_tol},
      {"var population", ReduceOp::Var, [](const Tensor& x, const Dims& d, bool k) { return var(x, d, false, k); },
       [](V x, const Dims& d, bool k) { return var(x, d, false, k); }, ref_var(0), kFloatTypes, Out::Same, var_tol},
      {"std", ReduceOp::Var, [](const Tensor& x, const Dims& d, bool k) { return wick::std(x, d, true, k); },
       [](V x, const Dims& d, bool k) { return wick::std(x, d, true, k); }, sqrt_of(ref_var(1)), kFloatTypes, Out::Same,
       var_tol},
      {"norm 1", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 1.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 1.0, d, k); }, ref_norm(1), kFloatTypes, Out::Same, sum_tol<2>},
      {"norm 2", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 2.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 2.0, d, k); }, ref_norm(2), kFloatTypes, Out::Same, sum_tol<4>},
      {"norm 3", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 3.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 3.0, d, k); }, ref_norm(3), kFloatTypes, Out::Same, cube_tol},
      {"norm 0.5", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 0.5, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 0.5, d, k); }, ref_norm(0.5), kFloatTypes, Out::Same,
       relative_tol},
      {"norm inf", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, INFINITY, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, INFINITY, d, k); }, ref_norm(INFINITY), kFloatTypes, Out::Same,
       relative_tol, -2, 2, -2, 2, false},
      {"norm 0", ReduceOp::NormP, [](const Tensor& x, const Dims& d, bool k) { return norm(x, 0.0, d, k); },
       [](V x, const Dims& d, bool k) { return norm(x, 0.0, d, k); }, ref_norm(0), kFloatTypes, Out::Same, sum_tol<1>,
       -2, 2, -2, 2, true, true},
      {"logsumexp", ReduceOp::LogSumExp, [](const Tensor& x, const Dims& d, bool k) { return logsumexp(x, d, k); },
       [](V x, const Dims& d, bool k) { return logsumexp(x, d, k); }, ref_logsumexp, kFloatTypes, Out::Same,
       relative_tol},
      {"all", ReduceOp::All, [](const Tensor& x, const Dims& d, bool k) { return all(x, d, k); }, nullptr, ref_all,
       kAllDTypes, Out::Truth, sum_tol<0>, -2, 2, -2, 2, true, true},
      {"any", ReduceOp::Any, [](const Tensor& x, const Dims& d, bool k) { return any(x, d, k); }, nullptr, ref_any,
       kAllDTypes, Out::Truth, sum_tol<0>, -2, 2, -2, 2, true, true},
      {"amax", ReduceOp::Max, [](const Tensor& x, const Dims& d, bool k) { return amax(x, d, k); },
       [](V x, const Dims& d, bool k) { return amax(x, d, k); }, ref_extremum<true>, kAllDTypes, Out::Same,
       relative_tol, -2, 2, -2, 2, false},
      {"amin", ReduceOp::Min, [](const Tensor& x, const Dims& d, bool k) { return amin(x, d, k); },
       [](V x, const Dims& d, bool k) { return amin(x, d, k); }, ref_extremum<false>, kAllDTypes, Out::Same,
       relative_tol, -2, 2, -2, 2, false},
  };
  return rows;
}

DType out_dtype(const ReduceRow& r, DType t) {
  switch (r.out) {
    case Out::Widened: return is_floating(t) ? t : DType::Int64;
    case Out::Truth: return t == DType::UInt8 ? DType::UInt8 : DType::Bool;
    default: return t;
  }
}

// An input for row r: its range for t, with zeros sprinkled in where the row wants them.
Tensor row_input(const ReduceRow& r, const Shape& shape, DType t, uint64_t seed) {
  const bool f = is_floating(t);
  Tensor x = random(shape, t, seed, f ? r.lo : r.int_lo, f ? r.hi : r.int_hi);
  if (!r.zeros || t == DType::Bool) return x;
  std::vector<double> v = values(x);
  for (size_t i = 0; i < v.size(); ++i)
    if (i % 7 == 0 || i % 11 == 3) v[i] = 0;
  return tensor<double>(v, shape).to(t);
}

const Shape kShape = {3, 4, 5};
const std::vector<Dims> kDimSets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {-1, -3}, {1, 2}, {2, 0, 1}};

class ReduceTable : public testing::TestWithParam<RowParam> {
 protected:
  const ReduceRow& r = reduce_rows()[GetParam().row];
  const DType t = GetParam().dtype;
};

TEST_P(ReduceTable, Reference) {
  WICK_SKIP_IF_MARKED(r.on.cpu);
  check_as_marked(r.on.cpu, [&] {
    uint64_t seed = GetParam().seed;
    const Tensor x = row_input(r, kShape, t, seed++);
    for (const Dims& dims : kDimSets) {
      const std::vector<double> expected = ref_reduce(x, dims, r.ref);
      for (bool keepdim : {false, true})
        for (Layout l : kAllLayouts)
          EXPECT_TRUE(matches(r.op(with_layout(x, l), dims, keepdim), reduced_shape(kShape, dims, keepdim),
                              out_dtype(r, t), expected))
              << r.name << " " << dtype_name(t) << " dims " << dims_str(dims) << " keepdim " << keepdim << " "
              << layout_name(l);
    }
    // 0-d: every dim set that names its one "dim" reduces nothing.
    const Tensor s = row_input(r, {}, t, seed++);
    for (const Dims& dims : {Dims{}, Dims{0}, Dims{-1}})
      for (bool keepdim : {false, true})
        EXPECT_TRUE(matches(r.op(s, dims, keepdim), {}, out_dtype(r, t), ref_reduce(s, {}, r.ref)))
            << r.name << " 0-d " << dtype_name(t) << " dims " << dims_str(dims);
  });
}

// Every reduce kernel op has a row.
TEST(ReduceTable, EveryReduceKernelHasARow) {
  std::set<int> kernels;
  for (const ReduceRow& r : reduce_rows()) kernels.insert(static_cast<int>(r.kernel));
  for (int i = 0; i < kNumReduceOps; ++i)
    EXPECT_TRUE(kernels.count(i)) << "reduce kernel op " << reduce_op_name(static_cast<ReduceOp>(i))
                                  << " has no row in the reduction table";
}

TEST(ReduceTable, ReadmeNamesEveryRow) {
  std::set<std::string> ops;
  for (const ReduceRow& r : reduce_rows()) {
    const std::string name = r.name;
    ops.insert(name.substr(0, name.find(' ')));
  }
  expect_readme_names(ops, "reduction table");
}

// --- CUDA against the CPU -------------------------------------------------------------

void expect_row_on_cuda(const ReduceRow& r, const std::string& what, const Tensor& x, const Dims& dims,
                        bool keepdim = false) {
  const Tol tol = r.cuda_tol(x.dtype(), folded(x.shape(), dims));
  expect_cuda_matches_cpu(std::string(r.name) + " " + what + " " + dtype_name(x.dtype()) + " " +
                              shape_str(x.shape()) + " dims " + dims_str(dims),
                          {x}, [&](const std::vector<Tensor>& in) { return r.op(in[0], dims, keepdim); }, tol.rtol,
                          tol.atol);
}

TEST_P(ReduceTable, CudaEveryDimSubsetEveryLayout) {
  WICK_REQUIRE_CUDA();
  WICK_SKIP_IF_MARKED(r.on.cuda);
  AllocationChecks checks;
  check_as_marked(r.on.cuda, [&] {
    uint64_t seed = GetParam().seed;
    // Every layout for the main types, two for the others (the kernel is the same).
    const bool main = t == DType::Float32 || t == DType::Int64 || t == DType::Float64;
    for (const Shape& shape : {Shape{5, 17, 33}, Shape{3, 4, 5, 6}})
      for (const Dims& dims : dim_subsets(static_cast<int64_t>(shape.size())))
        for (Layout l : kAllLayouts) {
          if (!main && (l == Layout::Sliced || l == Layout::Offset)) continue;
          expect_row_on_cuda(r, layout_name(l), with_layout(row_input(r, shape, t, seed++), l), dims,
                             l == Layout::Transposed);
        }
  });
  EXPECT_EQ(checks.violations(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Rows, ReduceTable, testing::ValuesIn(row_params(reduce_rows())), row_param_name);

TEST(ReduceTable, CudaBroadcastInputAndSizeOneDims) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  // Stride-0 dims (expanded) and size-1 dims (nothing to fold along them).
  for (const ReduceRow& r : reduce_rows()) {
    const Tensor expanded = row_input(r, {5, 1, 33}, DType::Float32, 7).expand({5, 17, 33});
    const Tensor ones_dims = row_input(r, {5, 1, 33, 1}, DType::Float32, 8);
    for (const Dims& dims : dim_subsets(3)) expect_row_on_cuda(r, "expanded", expanded, dims);
    for (const Dims& dims : dim_subsets(4)) expect_row_on_cuda(r, "size-1 dims", ones_dims, dims);
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// Odd lengths from 1 to 2^20 + 3: one row (full reduction: block partials and the second
// pass), many rows (one warp or block per row) and many columns (column mode).
TEST(ReduceTable, CudaOddSizesRowsAndColumns) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 100;
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{33}, int64_t{1000}, int64_t{4097}, (int64_t{1} << 20) + 3}) {
    for (const ReduceRow& r : reduce_rows())
      for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::Int32}) {
        if (std::find(r.dtypes.begin(), r.dtypes.end(), t) == r.dtypes.end()) continue;
        if (t != DType::Float32 && n > 4097 && std::string(r.name) != "sum") continue;
        expect_row_on_cuda(r, "odd", row_input(r, {n}, t, seed++), {});
      }
    if (n > 4097) continue;
    for (const ReduceRow& r : reduce_rows()) {
      const std::string name = r.name;
      if (name != "sum" && name != "var" && name != "logsumexp" && name != "norm 2" && name != "amax") continue;
      for (const Shape& s : {Shape{33, n}, Shape{n, 33}, Shape{3, n}})
        for (int64_t dim : {0, 1})
          for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Offset})
            expect_row_on_cuda(r, layout_name(l), with_layout(row_input(r, s, DType::Float32, seed++), l), {dim});
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

// NaN propagates through sums, extremes and norms; infinities through logsumexp.
TEST(ReduceTable, CudaSpecialValues) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  for (DType t : kFloatTypes) {
    const Tensor x = special_value_rows().to(t);
    for (const ReduceRow& r : reduce_rows()) {
      // prod and var meet inf * 0 and inf - inf, whose NaN the CPU and CUDA may reach
      // by different routes; tests/kernels/cuda_reduce_test.cpp checks their rules.
      if (r.kernel == ReduceOp::Prod || r.kernel == ReduceOp::Var) continue;
      for (const Dims& dims : {Dims{1}, Dims{0}, Dims{}}) expect_row_on_cuda(r, "special", x, dims);
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

TEST(ReduceTable, CudaEmptyAndZeroDim) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  for (DType t : {DType::Float32, DType::Int64, DType::Float16}) {
    for (const Shape& s : {Shape{0}, Shape{3, 0, 5}, Shape{}}) {
      std::vector<Dims> dim_sets = {Dims{}};
      if (s.size() == 3) dim_sets = {Dims{}, Dims{0}, Dims{1}, Dims{2}, Dims{0, 2}};
      if (s.empty()) dim_sets = {Dims{}, Dims{0}};
      for (const ReduceRow& r : reduce_rows()) {
        if (std::find(r.dtypes.begin(), r.dtypes.end(), t) == r.dtypes.end()) continue;
        const Tensor x = row_input(r, s, t, 11);
        for (const Dims& dims : dim_sets) {
          // amax/amin and the inf-norm refuse a reduction over an empty dim (PyTorch too):
          // checked on the CPU in tests/tensor/reduce_test.cpp.
          if (!r.empty_ok && numel_of(s) == 0 && folded(s, dims) == 0) continue;
          expect_row_on_cuda(r, "empty/0-d", x, dims);
        }
      }
    }
  }
  EXPECT_EQ(checks.violations(), 0u);
}

}  // namespace
}  // namespace wick::test

// The gradient cases of the table's differentiable rows: along one dim, and over all dims
// with keepdim. prod's domain keeps its factors away from 0 (its zero rule has its own
// tests); amax/amin's random inputs have no ties.
WICK_GRADCHECK_CASES(reduce_table) {
  std::vector<wick::test::GradCase> cases;
  for (const wick::test::ReduceRow& r : wick::test::reduce_rows()) {
    if (!r.grad_op) continue;
    auto f = r.grad_op;
    const double lo = r.kernel == wick::ReduceOp::Prod ? 0.5 : r.lo, hi = r.kernel == wick::ReduceOp::Prod ? 1.5 : r.hi;
    cases.push_back({std::string(r.name) + " dim 1", [f](const std::vector<wick::Variable>& v) { return f(v[0], {1}, false); },
                     {{3, 4}}, lo, hi});
    cases.push_back({std::string(r.name) + " all keepdim",
                     [f](const std::vector<wick::Variable>& v) { return f(v[0], {}, true); }, {{2, 3}}, lo, hi});
  }
  return cases;
}
