// The binary table's drivers (the rows are in tests/autograd/binary_table.h; CUDA against
// the CPU is in tests/kernels/cuda_elementwise_test.cpp): the float64 reference over
// dtypes, mixed dtypes (PyTorch's promotion, acceptance and refusals), layouts and
// broadcast shapes, NaN/inf/±0, numbers of huge and tiny magnitude, in place on views, the
// gradient cases, and a row for every binary kernel op. Each check that goes row by row is
// one gtest instance per row and dtype (Rows/BinaryTable.Reference/atan2_float16,
// tests/support/row_params.h).
#include "tests/autograd/binary_table.h"

#include <algorithm>
#include <sstream>

#include "tests/autograd/cases.h"
#include "tests/support/row_params.h"

namespace wick::test {
namespace {

std::string describe(const BinaryRow& r, DType t) { return std::string(r.name) + " " + dtype_name(t); }

// The rows of the same op accept the union of their dtypes; the row for promoted dtype p, or
// null when the op refuses p.
const BinaryRow* row_for(const std::vector<BinaryRow>& rows, const std::string& name, DType p) {
  for (const BinaryRow& r : rows)
    if (r.name == name && std::find(r.dtypes.begin(), r.dtypes.end(), p) != r.dtypes.end()) return &r;
  return nullptr;
}

// torch.promote_types over wick's dtypes: bool < uint8 < int32 < int64 < 16-bit floats <
// float32 < float64, and float16 with bfloat16 gives float32.
DType promoted(DType a, DType b) {
  const std::vector<DType> order = {DType::Bool,     DType::UInt8,   DType::Int32,  DType::Int64,
                                    DType::BFloat16, DType::Float16, DType::Float32, DType::Float64};
  if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  auto rank = [&](DType t) { return std::find(order.begin(), order.end(), t) - order.begin(); };
  return rank(a) >= rank(b) ? a : b;
}

// PyTorch's can_cast, for in-place results: no floating -> integer, nothing but bool -> bool.
bool castable(DType from, DType to) {
  return !(is_floating(from) && !is_floating(to)) && !(from != DType::Bool && to == DType::Bool);
}

const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{}, {5}},         {{2, 3}, {}},
    {{}, {}},         {{1}, {2, 3}},    {{0, 3}, {3}},    {{4, 1, 2}, {4, 0, 2}}};

class BinaryTable : public testing::TestWithParam<RowParam> {
 protected:
  const BinaryRow& r = binary_table()[GetParam().row];
  const DType t = GetParam().dtype;
};

TEST_P(BinaryTable, Reference) {
  check_as_marked(r.on.cpu, [&] {
    uint64_t seed = GetParam().seed;
    const DType out = out_dtype_of(r, t);
    for (const auto& [sa, sb] : kShapePairs) {
      const Tensor a = row_input(r, false, sa, t, seed++), b = row_input(r, true, sb, t, seed++);
      const std::vector<double> expected = as_stored(ref_binary(values(a), sa, values(b), sb, r.ref), out);
      const Shape shape = broadcast_shapes("test", sa, sb);
      const std::string what = describe(r, t) + " " + shape_str(sa) + " with " + shape_str(sb);
      for (size_t l = 0; l < kAllLayouts.size(); ++l) {
        const Layout la = kAllLayouts[l], lb = kAllLayouts[(l + 1) % kAllLayouts.size()];
        EXPECT_TRUE(matches(r.op(with_layout(a, la), with_layout(b, lb)), shape, out, expected))
            << what << " " << layout_name(la) << " / " << layout_name(lb);
      }
      // Broadcast operands given already expanded (stride 0).
      EXPECT_TRUE(matches(r.op(a.expand(shape), b.expand(shape)), shape, out, expected)) << what << " expanded";
    }
  });
}

// Every pair of operand dtypes: the result has the promoted dtype's result dtype and the
// reference values, or the op refuses, exactly where no row accepts the promoted dtype.
TEST(BinaryTable, MixedDtypesPromoteOrAreRefused) {
  const std::vector<BinaryRow> rows = binary_rows();
  std::set<std::string> done;
  uint64_t seed = 5000;
  for (const BinaryRow& first : rows) {
    if (!done.insert(first.name).second) continue;
    for (DType ta : kAllDTypes)
      for (DType tb : kAllDTypes) {
        const DType p = promoted(ta, tb);
        const BinaryRow* r = row_for(rows, first.name, p);
        const bool bool_refused = first.refuses_bool_operand && (ta == DType::Bool || tb == DType::Bool);
        const std::string what = std::string(first.name) + " " + dtype_name(ta) + " with " + dtype_name(tb);
        if (!r || bool_refused) {
          expect_error([&] { first.op(zeros({2}, ta), zeros({2}, tb)); },
                       {first.name, dtype_name(bool_refused ? DType::Bool : p)});
          continue;
        }
        const Tensor a = row_input(*r, false, {5}, ta, seed++), b = row_input(*r, true, {5}, tb, seed++);
        EXPECT_TRUE(matches(r->op(a, b), {5}, out_dtype_of(*r, p),
                            as_stored(ref_binary(values(a), {5}, values(b), {5}, r->ref), out_dtype_of(*r, p))))
            << what;
      }
  }
}

// Every special value against every other, for the floating dtypes.
class BinaryTableFloating : public BinaryTable {};

TEST_P(BinaryTableFloating, NaNInfinityAndSignedZeros) {
  check_as_marked(r.on.cpu, [&] {
    const Tensor s = special_values(t);
    const Tensor a = s.view({14, 1}), b = s.view({1, 14});
    EXPECT_TRUE(matches(r.op(a, b), {14, 14}, out_dtype_of(r, t),
                        as_stored(ref_binary(values(a), {14, 1}, values(b), {1, 14}, r.ref), out_dtype_of(r, t))))
        << describe(r, t);
  });
}

// Numbers keep their kind for promotion (an integer number never widens a tensor, a float
// one makes an integer tensor float32) and their magnitude: float16 and bfloat16 compute in
// float32 with the number in float32 (float16 * -92330 is finite, x / 2.2e-8 is not x / 0).
std::vector<Scalar> numbers_for(DType t) {
  if (is_floating(t)) return {Scalar(-92330.0), Scalar(2.2e-8), Scalar(1e30), Scalar(1e-300), Scalar(0.5), Scalar(3)};
  if (t == DType::Bool) return {Scalar(true), Scalar(2), Scalar(0.5)};
  return {Scalar(3), Scalar(2.5)};
}

// The dtype a tensor of dtype t and number n promote to.
DType promoted_with_number(DType t, const Scalar& n) {
  if (n.is_floating()) return is_floating(t) ? t : kDefaultFloat;
  if (n.is_integral() && t == DType::Bool) return DType::Int64;
  return t;
}

// n as the kernel sees it: in the compute dtype, float32 for the 16-bit floats.
double number_as_computed(const Scalar& n, DType compute) {
  if (compute == DType::Float64 || !is_floating(compute)) return n.to_double();
  return static_cast<float>(n.to_double());
}

TEST_P(BinaryTable, NumbersOfHugeAndTinyMagnitude) {
  const std::vector<BinaryRow>& rows = binary_table();
  const BinaryRow& first = r;
  uint64_t seed = GetParam().seed;
  check_as_marked(first.on.cpu, [&] {
    // Small integers: valid exponents and shift amounts on either side.
    const Tensor x = is_floating(t) ? special_values(t) : random({14}, t, seed++, 0, 3);
    for (const Scalar& n : numbers_for(t)) {
      const DType p = promoted_with_number(t, n);
      const BinaryRow* rp = row_for(rows, first.name, p);
      std::ostringstream what;
      what << describe(first, t) << " and the number " << n.to_double();
      const bool refused = !rp || (first.refuses_bool_operand && (t == DType::Bool || n.is_bool()));
      const double nc = rp ? number_as_computed(n, compute_dtype_of(*rp, p)) : 0;
      const DType out = rp ? out_dtype_of(*rp, p) : p;
      auto expect = [&](const char* form, const std::function<Tensor()>& f, bool number_first, DType dtype) {
        if (refused) return expect_error([&] { f(); }, {first.name});
        std::vector<double> ref;
        for (double v : values(x)) ref.push_back(number_first ? rp->ref(nc, v) : rp->ref(v, nc));
        EXPECT_TRUE(matches(f(), {14}, dtype, as_stored(ref, dtype))) << what.str() << " (" << form << ")";
      };
      if (first.with_number) expect("tensor, number", [&] { return first.with_number(x, n); }, false, out);
      if (first.number_first) expect("number, tensor", [&] { return first.number_first(n, x); }, true, out);
      if (first.in_place_number && (refused || castable(compute_dtype_of(*rp, p), t))) {
        expect("in place", [&] {
          Tensor y = x.clone();
          first.in_place_number(y, n);
          return y;
        }, false, t);
      } else if (first.in_place_number) {
        Tensor y = x.clone();
        expect_error([&] { first.in_place_number(y, n); }, {"can't be cast"});
      }
    }
  });
}

// In place on a transposed view and on a stepped slice, with a broadcast other: the view
// gets the reference values and the elements between the slice's steps stay. A result
// dtype that cannot be cast to self's is refused.
class BinaryTableInPlace : public BinaryTable {};

TEST_P(BinaryTableInPlace, OnViews) {
  check_as_marked(r.on.cpu, [&] {
    uint64_t seed = GetParam().seed;
    const Tensor a = row_input(r, false, {3, 4}, t, seed++), b = row_input(r, true, {4}, t, seed++);
    const std::vector<double> expected = as_stored(ref_binary(values(a), {3, 4}, values(b), {4}, r.ref), t);
    if (!castable(compute_dtype_of(r, t), t)) {
      Tensor y = a.clone();
      expect_error([&] { r.in_place(y, b); }, {"can't be cast", dtype_name(t)});
      return;
    }
    Tensor transposed = a.t().contiguous().t();
    r.in_place(transposed, b);
    EXPECT_TRUE(matches(transposed, {3, 4}, t, expected)) << describe(r, t) << " transposed";
    Tensor buffer = zeros({3, 8}, t);
    Tensor stepped = buffer.slice(1, 0, 8, 2);
    stepped.copy_(a);
    r.in_place(stepped, b);
    EXPECT_TRUE(matches(stepped, {3, 4}, t, expected)) << describe(r, t) << " stepped slice";
    EXPECT_TRUE(matches(buffer.slice(1, 1, 8, 2), {3, 4}, t, std::vector<double>(12, 0.0)))
        << describe(r, t) << ": wrote between the steps";
  });
}

INSTANTIATE_TEST_SUITE_P(Rows, BinaryTable, testing::ValuesIn(row_params(binary_table())), row_param_name);
INSTANTIATE_TEST_SUITE_P(Rows, BinaryTableFloating,
                         testing::ValuesIn(row_params(binary_table(),
                                                      [](const BinaryRow&, DType t) { return is_floating(t); })),
                         row_param_name);
INSTANTIATE_TEST_SUITE_P(Rows, BinaryTableInPlace,
                         testing::ValuesIn(row_params(binary_table(),
                                                      [](const BinaryRow& r, DType) { return bool(r.in_place); })),
                         row_param_name);

TEST(BinaryTable, EveryBinaryKernelHasARow) {
  expect_every_op_has_a_row("binary", kNumBinaryOps, &binary_op_name, binary_rows());
}

TEST(BinaryTable, ReadmeNamesEveryRow) {
  std::set<std::string> ops;
  for (const BinaryRow& r : binary_rows()) ops.insert(r.name);
  expect_readme_names(ops, "binary table");
}

// The cases PyTorch's source fixes by hand: shift amounts at and beyond the width, negative
// (uint8 200 is -56 as a signed amount), and the sign of right shifts.
TEST(BinaryTable, ShiftsAtTheBitWidth) {
  const int64_t i64min = std::numeric_limits<int64_t>::min();
  Tensor a = tensor<int64_t>({1, 1, 1, -1, 3, i64min, i64min, -8, 8});
  Tensor b = tensor<int64_t>({63, 64, -1, 63, 62, 63, 1, 2, 100});
  EXPECT_TRUE(matches(a << b, {9}, DType::Int64,
                      {double(i64min), 0, 0, double(i64min), -4611686018427387904.0, 0, 0, -32, 0}));
  EXPECT_TRUE(matches(a >> b, {9}, DType::Int64, {0, 0, 0, -1, 0, -1, -4611686018427387904.0, -2, 0}));
  Tensor u = tensor<uint8_t>({255, 255, 1, 128});
  Tensor s = tensor<uint8_t>({1, 8, 200, 7});
  EXPECT_TRUE(matches(u << s, {4}, DType::UInt8, {254, 0, 0, 0}));
  EXPECT_TRUE(matches(u >> s, {4}, DType::UInt8, {127, 0, 0, 1}));
  Tensor i = tensor<int32_t>({-7, 7, 1 << 30});
  EXPECT_TRUE(matches(i >> 31, {3}, DType::Int32, {-1, 0, 0}));
  EXPECT_TRUE(matches(i >> -1, {3}, DType::Int32, {-1, 0, 0}));
  EXPECT_TRUE(matches(i << 2, {3}, DType::Int32, {-28, 28, 0}));
  EXPECT_TRUE(matches(1 << tensor<int32_t>({0, 4, 31, 32}), {4}, DType::Int32, {1, 16, -2147483648.0, 0}));
  // int32 with an int64 tensor promotes; a float number or tensor, or bool, is refused.
  EXPECT_EQ((i << tensor<int64_t>({1, 1, 1})).dtype(), DType::Int64);
  expect_error([&] { i << 1.5; }, {"bitwise_left_shift", "float32", "integer only"});
  expect_error([&] { zeros({2}) >> zeros({2}); }, {"bitwise_right_shift", "float32"});
  expect_error([] { tensor<bool>({true}) << tensor<bool>({true}); }, {"bitwise_left_shift", "bool"});
  Tensor j = tensor<int32_t>({1, 2});
  expect_error([&] { j <<= tensor<int64_t>({1, 1}).to(DType::Float32); }, {"bitwise_left_shift_"});
  // The stream operator still prints.
  std::ostringstream os;
  os << j;
  EXPECT_NE(os.str().find("int32"), std::string::npos);
}

}  // namespace
}  // namespace wick::test

// The gradient cases of the differentiable rows, with numbers too.
WICK_GRADCHECK_CASES(binary_table) {
  using wick::Variable;
  std::vector<wick::test::GradCase> cases;
  for (const wick::test::BinaryRow& r : wick::test::binary_rows()) {
    const double lo = r.grad_domain.lo, hi = r.grad_domain.hi;
    if (r.grad) {
      auto f = r.grad;
      cases.push_back({r.name, [f](const std::vector<Variable>& v) { return f(v[0], v[1]); }, r.grad_shapes, lo, hi});
    }
    for (size_t i = 0; i < r.grad_with_numbers.size(); ++i) {
      auto f = r.grad_with_numbers[i];
      cases.push_back({std::string(r.name) + " with a number " + std::to_string(i),
                       [f](const std::vector<Variable>& v) { return f(v[0]); }, {{2, 3}}, lo, hi});
    }
  }
  return cases;
}
