// The unary table's drivers. The same rows drive
//   - the reference check over dtypes, layouts (transposed, sliced, offset) and shapes
//     (0-d, empty, odd): one gtest instance per row and dtype
//     (Rows/UnaryTable.Reference/expm1_float16, tests/support/row_params.h),
//   - the gradient table (first and second order, tests/autograd/cases.h),
//   - CUDA against the CPU (under the simulator build, or on a GPU): one instance per row
//     and dtype (Rows/UnaryTableOnCuda.MatchesCpu/expm1_float16),
// and every unary kernel op (wick/tensor/op_kinds.h, except autograd's *_grad helpers) must have
// a row. The rows are in tests/autograd/unary_table.h (bench/op_table_bench.cpp times them
// too); adding a unary op's tests means adding one row there.
#include "tests/autograd/cases.h"

#include "tests/support/cuda_compare.h"
#include "tests/autograd/unary_table.h"

namespace wick::test {
namespace {

const std::vector<Shape> kShapes = {{}, {5}, {3, 4}, {2, 3, 4}, {0, 3}};

class UnaryTable : public testing::TestWithParam<RowParam> {};

TEST_P(UnaryTable, Reference) {
  const RowParam& p = GetParam();
  const UnaryRow& c = unary_table()[p.row];
  const DType out_dt = c.bool_out ? DType::Bool : (c.floating && !is_floating(p.dtype)) ? kDefaultFloat : p.dtype;
  check_as_marked(c.on.cpu, [&] {
    uint64_t seed = p.seed;
    for (const Shape& shape : kShapes) {
      Tensor x = random(shape, p.dtype, seed++, c.lo, c.hi);
      const std::vector<double> expected = as_stored(ref_unary(values(x), c.ref), out_dt);
      for (Layout l : kAllLayouts)
        EXPECT_TRUE(matches(c.op(with_layout(x, l)), shape, out_dt, expected)) << shape_str(shape) << " " << layout_name(l);
    }
  });
}

class UnaryTableOnCuda : public testing::TestWithParam<RowParam> {};

TEST_P(UnaryTableOnCuda, MatchesCpu) {
  WICK_REQUIRE_CUDA();
  const RowParam& p = GetParam();
  const UnaryRow& c = unary_table()[p.row];
  check_as_marked(c.on.cuda, [&] {
    uint64_t seed = p.seed;
    for (const Shape& shape : {Shape{}, Shape{0, 3}, Shape{7, 5}})
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced}) {
        const Tensor x = with_layout(random(shape, p.dtype, seed++, c.lo, c.hi), l);
        expect_cuda_matches_cpu(std::string(c.name) + " " + dtype_name(p.dtype) + " " + shape_str(shape), {x},
                                [&c](const std::vector<Tensor>& in) { return c.op(in[0]); });
      }
  });
}

INSTANTIATE_TEST_SUITE_P(Rows, UnaryTable, testing::ValuesIn(row_params(unary_table())), row_param_name);
INSTANTIATE_TEST_SUITE_P(Rows, UnaryTableOnCuda, testing::ValuesIn(row_params(unary_table())), row_param_name);

// Every unary kernel op has a row (the *_grad ops are autograd's, checked through the
// gradients of the ops that use them).
TEST(UnaryTable, EveryUnaryKernelHasARow) {
  expect_every_op_has_a_row("unary", kNumUnaryOps, &unary_op_name, unary_rows(), [](const std::string& name) {
    return name.size() > 5 && name.compare(name.size() - 5, 5, "_grad") == 0;
  });
}

TEST(UnaryTable, ReadmeNamesEveryRow) {
  std::set<std::string> rows;  // a variant row ("round int") names its op first
  for (const UnaryRow& c : unary_rows()) {
    const std::string name = c.name;
    rows.insert(name.substr(0, name.find(' ')));
  }
  expect_readme_names(rows, "unary table");
}

}  // namespace
}  // namespace wick::test

// The gradient cases of the table's differentiable rows, inside each row's domain.
WICK_GRADCHECK_CASES(unary_table) {
  std::vector<wick::test::GradCase> cases;
  for (const wick::test::UnaryRow& r : wick::test::unary_rows()) {
    if (!r.grad_op) continue;
    auto f = r.grad_op;
    cases.push_back({r.name, [f](const std::vector<wick::Variable>& v) { return f(v[0]); }, {{2, 3}}, r.lo, r.hi});
  }
  return cases;
}
