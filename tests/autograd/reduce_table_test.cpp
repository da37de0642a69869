// The reduction table's drivers (the rows: tests/autograd/reduce_table.h). The same rows
// drive
//   - the reference check over every dtype, four layouts, nine dim sets, keepdim and 0-d
//     (one gtest instance per row and dtype: Rows/ReduceTable.Reference/logsumexp_float16,
//     tests/support/row_params.h),
//   - the gradient table (first and second order, tests/autograd/cases.h),
//   - CUDA against the CPU: every dim subset and layout (an instance per row and dtype),
//     broadcast and size-1 dims, odd
//     lengths up to 2^20 + 3 as one row, many rows and many columns, the column kernel's
//     packed, odd-width and split cases, NaN and infinities, empty and 0-d inputs,
// and every reduce kernel op (ReduceOp in wick/tensor/op_kinds.h) must have a row. The rules no
// table can express (ties and NaN with indices, accuracy, chunking, refusals) are tested in
// tests/tensor/reduce_test.cpp, tests/kernels/cuda_reduce_test.cpp and
// gradcheck_reduce_test.cpp.
#include "tests/autograd/cases.h"

#include "tests/autograd/reduce_table.h"
#include "tests/support/cuda_compare.h"
#include "tests/support/cuda_debug.h"

namespace wick::test {
namespace {

const Shape kShape = {3, 4, 5};
const std::vector<Dims> kDimSets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {-1, -3}, {1, 2}, {2, 0, 1}};

class ReduceTable : public testing::TestWithParam<RowParam> {
 protected:
  const ReduceRow& r = reduce_rows()[GetParam().row];
  const DType t = GetParam().dtype;
};

TEST_P(ReduceTable, Reference) {
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

// A row that ignores NaN gives a NaN element no gradient: 0 there, and finite elsewhere.
TEST(ReduceTable, RowsThatIgnoreNaNGiveItNoGradient) {
  int rows = 0;
  for (const ReduceRow& r : reduce_rows()) {
    if (!r.nans || !r.grad_op) continue;
    ++rows;
    const Tensor nan = nan_mask({4, 5});
    for (const Dims& dims : {Dims{}, Dims{1}, Dims{0}}) {
      Variable x(row_input(r, {4, 5}, DType::Float64, 3), /*requires_grad=*/true);
      sum(r.grad_op(x, dims, false)).backward();
      const std::vector<double> g = values(x.grad().data()), m = values(nan);
      for (size_t i = 0; i < g.size(); ++i)
        EXPECT_TRUE(m[i] ? g[i] == 0 : std::isfinite(g[i])) << r.name << " dims " << dims_str(dims) << " element " << i
                                                             << ": gradient " << g[i];
    }
  }
  if (rows == 0) GTEST_SKIP() << "no differentiable row ignores NaN";
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

// Column reductions (the sum over the rows of [R, C]: bias and norm-weight gradients) on the
// column kernel: widths that fill 16-byte packs and odd ones (element by element), rows few
// and many (the rows cut into chunks and finished by the last block, in one launch), an
// outer dim ([A, R, C] over R), misaligned (Offset) and strided (Sliced) views, every dtype
// of every row (empty columns: CudaEmptyAndZeroDim).
TEST(ReduceTable, CudaColumnsPackedOddAndSplit) {
  WICK_REQUIRE_CUDA();
  AllocationChecks checks;
  uint64_t seed = 500;
  const std::vector<std::pair<Shape, Dims>> cases = {
      {{1500, 24}, {0}}, {{37, 40}, {0}},   {{3, 300, 16}, {1}}, {{257, 9}, {0}},
      {{700, 1}, {0}},   {{2, 64}, {0}},    {{600, 7, 8}, {0, 1}},
  };
  for (const ReduceRow& r : reduce_rows())
    for (DType t : r.dtypes)
      for (const auto& [shape, dims] : cases)
        for (Layout l : {Layout::Contiguous, Layout::Offset, Layout::Sliced}) {
          const bool main = t == DType::Float32 || t == DType::BFloat16;
          if (!main && l != Layout::Contiguous) continue;
          expect_row_on_cuda(r, std::string("columns ") + layout_name(l), with_layout(row_input(r, shape, t, seed++), l),
                             dims);
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
// with keepdim; NaN in the inputs of a row that ignores it. prod's domain keeps its factors away from 0 (its zero rule has its own
// tests); amax/amin's random inputs have no ties.
WICK_GRADCHECK_CASES(reduce_table) {
  std::vector<wick::test::GradCase> cases;
  for (const wick::test::ReduceRow& r : wick::test::reduce_rows()) {
    if (!r.grad_op) continue;
    auto f = r.grad_op;
    // A row that ignores NaN sees NaN where nan_mask says (where's gradient there is 0, so the
    // finite differences check the other elements and that the NaN stay out of the result).
    if (r.nans)
      f = [g = r.grad_op](const wick::Variable& x, const wick::Dims& d, bool k) {
        return g(wick::where(wick::test::nan_mask(x.shape()), wick::Scalar(NAN), x), d, k);
      };
    const double lo = r.kernel == wick::ReduceOp::Prod ? 0.5 : r.lo, hi = r.kernel == wick::ReduceOp::Prod ? 1.5 : r.hi;
    cases.push_back({std::string(r.name) + " dim 1", [f](const std::vector<wick::Variable>& v) { return f(v[0], {1}, false); },
                     {{3, 4}}, lo, hi});
    cases.push_back({std::string(r.name) + " all keepdim",
                     [f](const std::vector<wick::Variable>& v) { return f(v[0], {}, true); }, {{2, 3}}, lo, hi});
  }
  return cases;
}
