// Elementwise edge cases outside the op tables (the unary and binary tables, with their
// references, gradients and CUDA comparisons, are tests/autograd/unary_table_test.cpp and
// binary_table.h): where; the unary ops' NaN, integer and refusal rules; the binary ops'
// integer limits, division by zero and error messages.
#include <cmath>
#include <limits>

#include <wick/tensor/norm.h>

#include "tests/support/dtype_sets.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(Unary, LargeContiguousAndBroadcastInputsUseTheFastPaths) {
  // Long enough for the threaded path; a stride-0 input; float32 through vec_math.
  Tensor x = random({70000}, DType::Float32, 7, -10, 10);
  EXPECT_TRUE(matches(gelu(x), {70000}, DType::Float32, ref_unary(values(x), gelu_erf_ref), 1e-5, 1e-6));
  EXPECT_TRUE(matches(tanh(x), {70000}, DType::Float32,
                      ref_unary(values(x), [](double v) { return std::tanh(v); })));
  Tensor s = scalar_tensor(0.5).expand({4, 3});
  EXPECT_TRUE(matches(exp(s), {4, 3}, DType::Float32, std::vector<double>(12, std::exp(0.5))));
}

// What PyTorch refuses, refused with wick's clear errors (issue 13, item 10).
TEST(Unary, RefusedLikePyTorch) {
  Tensor b = tensor<bool>({true, false});
  for (auto op : {+[](const Tensor& x) { return abs(x); }, +[](const Tensor& x) { return floor(x); },
                  +[](const Tensor& x) { return ceil(x); }, +[](const Tensor& x) { return round(x); },
                  +[](const Tensor& x) { return relu(x); }})
    expect_error([&] { op(b); }, {"not supported for bool"});
  Tensor i = tensor<int64_t>({1, -2});
  for (auto op : {+[](const Tensor& x) { return gelu(x); }, +[](const Tensor& x) { return silu(x); },
                  +[](const Tensor& x) { return softplus(x); }, +[](const Tensor& x) { return leaky_relu(x); }})
    expect_error([&] { op(i); }, {"not supported for int64", "floating only"});
  expect_error([&] { sub(b, b); }, {"bool operand"});
  expect_error([&] { sub(i, b); }, {"bool operand"});
  expect_error([&] { sub(i, true); }, {"bool operand"});
  expect_error([&] { Scalar(1) - b; }, {"bool operand"});
  expect_error([&] { argmax(b); }, {"argmax", "bool"});
  expect_error([&] { argmin(b); }, {"argmin", "bool"});
  Tensor s = scalar_tensor(1.0);
  expect_error([&] { s.squeeze(1); }, {"squeeze", "dim 1"});
  expect_error([&] { s.transpose(0, 2); }, {"transpose", "dim 2"});
  expect_error([&] { s.flatten(0, 1); }, {"flatten", "dim 1"});
  expect_error([&] { index_select(s, 1, tensor<int64_t>({0})); }, {"index_select", "dim 1"});
  EXPECT_EQ(s.squeeze(-1).dim(), 0);  // 0 and -1 are a 0-d tensor's dims
  Tensor u = zeros({2}, DType::UInt8);
  expect_error([&] { u.fill_(300); }, {"fill_", "300", "uint8", "overflow"});
  expect_error([&] { u.masked_fill_(tensor<bool>({true, false}), -256); }, {"masked_fill_", "-256", "uint8"});
  expect_error([&] { u.fill_(255.5); }, {"fill_", "255.5", "uint8"});  // PyTorch: a float must lie in range
  u.fill_(254.9);  // and is then truncated toward zero
  EXPECT_TRUE(matches(u, {2}, DType::UInt8, {254, 254}));
  Tensor expanded = zeros({1}).expand({3});
  expect_error([&] { expanded.copy_(tensor<float>({1, 2, 3})); }, {"copy_", "several elements share one memory"});
  Tensor empty_expanded = zeros({1}).expand({0});
  empty_expanded.add_(1);  // empty: nothing is written twice
  empty_expanded.copy_(zeros({0}));
  expect_error([] { group_norm(zeros({1, 2}), 2, Tensor(), Tensor(), 1e-5); }, {"group_norm", "more than 1 value"});
}

TEST(Unary, NaNAndInfinityRules) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType dt : kFloatTypes) {
    Tensor x = tensor<double>({nan, inf, -inf, -0.0, 2.5, -2.5}).to(dt);
    EXPECT_TRUE(matches(relu(x), {6}, dt, {nan, inf, 0, 0, 2.5, 0})) << dtype_name(dt);
    EXPECT_TRUE(matches(clamp(x, -1, 1), {6}, dt, {nan, 1, -1, 0, 1, -1})) << dtype_name(dt);
    // PyTorch's sign is (0 < x) - (x < 0): 0 at NaN (issue 13, item 6).
    EXPECT_TRUE(matches(sign(x), {6}, dt, {0, 1, -1, 0, 1, -1})) << dtype_name(dt);
    EXPECT_TRUE(matches(isnan(x).to(DType::Float64), {6}, DType::Float64, {1, 0, 0, 0, 0, 0})) << dtype_name(dt);
    EXPECT_TRUE(matches(isinf(x).to(DType::Float64), {6}, DType::Float64, {0, 1, 1, 0, 0, 0})) << dtype_name(dt);
    EXPECT_TRUE(matches(isfinite(x).to(DType::Float64), {6}, DType::Float64, {0, 0, 0, 1, 1, 1})) << dtype_name(dt);
    // clamp is min(max(x, lo), hi): lo > hi gives hi everywhere but at NaN (issue 13, item 2).
    EXPECT_TRUE(matches(clamp(x, 2, 1), {6}, dt, {nan, 1, 1, 1, 1, 1})) << dtype_name(dt);
    Tensor y = x.clone();
    y.clamp_(2, 1);
    EXPECT_TRUE(matches(y, {6}, dt, {nan, 1, 1, 1, 1, 1})) << dtype_name(dt);
    EXPECT_TRUE(matches(round(x), {6}, dt, {nan, inf, -inf, 0, 2, -2})) << dtype_name(dt);
    EXPECT_TRUE(matches(exp(x), {6}, dt, {nan, inf, 0, 1, std::exp(2.5), std::exp(-2.5)})) << dtype_name(dt);
    EXPECT_TRUE(matches(tanh(x), {6}, dt, {nan, 1, -1, 0, std::tanh(2.5), -std::tanh(2.5)})) << dtype_name(dt);
    EXPECT_TRUE(matches(erf(x), {6}, dt, {nan, 1, -1, 0, std::erf(2.5), -std::erf(2.5)})) << dtype_name(dt);
    EXPECT_TRUE(matches(sigmoid(x), {6}, dt, {nan, 1, 0, 0.5, sigmoid_ref(2.5), sigmoid_ref(-2.5)}))
        << dtype_name(dt);
    // -inf * Phi(-inf) is -inf * 0: NaN, as in PyTorch.
    EXPECT_TRUE(matches(gelu(x), {6}, dt, {nan, inf, nan, 0, gelu_erf_ref(2.5), gelu_erf_ref(-2.5)})) << dtype_name(dt);
  }
  // Underflow and overflow of exp in float32, and the far tails of sigmoid.
  Tensor big = tensor<float>({-200.f, -100.f, 88.f, 89.f, -90.f});
  // (atol: exp(-100) is a float32 subnormal with a few bits of precision.)
  EXPECT_TRUE(matches(exp(big), {5}, DType::Float32, {0, std::exp(-100.0), std::exp(88.0), inf, std::exp(-90.0)},
                      1e-5, 1e-44));
  EXPECT_TRUE(matches(sigmoid(big), {5}, DType::Float32, {0, sigmoid_ref(-100), 1, 1, sigmoid_ref(-90)}, 1e-5, 1e-44));
}

TEST(Unary, IntegerSemantics) {
  // neg and abs wrap around like two's complement; uint8 neg is modulo 256.
  EXPECT_TRUE(matches(neg(tensor<uint8_t>({0, 1, 200})), {3}, DType::UInt8, {0, 255, 56}));
  const int32_t imin = std::numeric_limits<int32_t>::min();
  EXPECT_TRUE(matches(tensor<int32_t>({imin, -3}).abs(), {2}, DType::Int32, {double(imin), 3}));
  // Integer clamp bounds beyond the dtype's range saturate instead of overflowing.
  const int64_t big = 10'000'000'000;
  EXPECT_TRUE(matches(clamp(tensor<uint8_t>({0, 100, 255}), -big, big), {3}, DType::UInt8, {0, 100, 255}));
  // A floating bound makes the result floating, as PyTorch's promotion does (issue 13, item 11).
  EXPECT_TRUE(matches(clamp(tensor<int64_t>({-5, 5}), 1e30, std::nullopt), {2}, DType::Float32, {1e30, 1e30}));
  EXPECT_TRUE(matches(clamp(tensor<int32_t>({-5, 5}), -1.5, 2), {2}, DType::Float32, {-1.5, 2}));
  Tensor ints = tensor<int32_t>({-5, 5});
  expect_error([&] { ints.clamp_(-1.5, 2); }, {"clamp_", "float32", "int32"});
  // Result dtypes PyTorch gives (issue 13, item 11).
  EXPECT_TRUE(matches(square(tensor<bool>({true, false})), {2}, DType::Int64, {1, 0}));
  EXPECT_TRUE(matches(all(tensor<uint8_t>({1, 2})), {}, DType::UInt8, {1}));
  EXPECT_TRUE(matches(any(tensor<uint8_t>({0, 0})), {}, DType::UInt8, {0}));
}

TEST(Unary, Errors) {
  expect_error([] { neg(tensor<bool>({true})); }, {"neg", "bool", "logical_not"});
  expect_error([] { clamp(tensor<bool>({true}), 0, 1); }, {"clamp", "bool"});
  expect_error([] { clamp(zeros({2}), std::optional<Scalar>(), std::optional<Scalar>()); }, {"clamp", "min and max"});
  expect_error([] { unary_grad(UnaryOp::Exp, zeros({2})); }, {"unary_grad", "exp"});
  expect_error([] { exp(Tensor()); }, {"exp", "undefined"});
}

// --- binary ----------------------------------------------------------------------------------

// Large contiguous operands take the threaded, vectorised rows (with a stride-0 number).
TEST(Binary, LargeOperandsUseTheThreadedRows) {
  Tensor big = random({100000}, DType::Float32, 3);
  EXPECT_TRUE(matches(big * 3 + big, {100000}, DType::Float32,
                      ref_unary(values(big), [](double v) { return double(float(v * 3)) + v; })));
}

TEST(Binary, PythonDivisionAtTheIntegerLimits) {
  const double inf = std::numeric_limits<double>::infinity();
  // Python semantics: the remainder takes the divisor's sign, the quotient rounds down.
  Tensor a = tensor<int64_t>({7, -7, 7, -7, std::numeric_limits<int64_t>::min()});
  Tensor b = tensor<int64_t>({2, 2, -2, -2, -1});
  EXPECT_TRUE(matches(remainder(a, b), {5}, DType::Int64, {1, 1, -1, -1, 0}));
  EXPECT_TRUE(matches(floor_divide(a, b), {5}, DType::Int64, {3, -4, -4, 3, -9.223372036854775808e18}));
  // Integer division by zero is an error, not a crash; true division of ints is fine.
  expect_error([] { remainder(tensor<int32_t>({1, 2}), tensor<int32_t>({1, 0})); },
               {"remainder", "integer division by zero"});
  expect_error([] { floor_divide(tensor<int64_t>({1}), tensor<int64_t>({0})); },
               {"floor_divide", "integer division by zero"});
  expect_error([] { fmod(tensor<uint8_t>({1}), tensor<uint8_t>({0})); }, {"fmod", "integer division by zero"});
  EXPECT_TRUE(matches(div(tensor<int32_t>({1, -1}), tensor<int32_t>({0, 0})), {2}, DType::Float32, {inf, -inf}));
  // Integer pow by squaring, including negative exponents from a tensor.
  EXPECT_TRUE(matches(pow(tensor<int64_t>({3, 2, 1, -1, 2}), tensor<int64_t>({39, 62, -5, -3, -1})), {5},
                      DType::Int64, {4052555153018976267.0, 4611686018427387904.0, 1, -1, 0}));
}

TEST(Binary, Errors) {
  expect_error([] { add(zeros({2, 3}), zeros({4})); }, {"add", "[2, 3]", "[4]"});
  expect_error([] { sub(tensor<bool>({true}), tensor<bool>({false})); }, {"sub", "bool"});
  expect_error([] { pow(tensor<int32_t>({2}), -1); }, {"pow", "negative integer powers"});
  expect_error([] { add(Tensor(), zeros({1})); }, {"add", "undefined"});
  expect_error([] { bitwise_and(zeros({2}), zeros({2})); }, {"bitwise_and", "float32", "integer or bool"});
  expect_error([] { bitwise_xor(tensor<int64_t>({1}), 0.5); }, {"bitwise_xor", "float32", "integer or bool"});
  expect_error([] { bitwise_not(zeros({2}, DType::Float64)); }, {"bitwise_not", "float64"});
  expect_error([] { fmod(tensor<bool>({true}), tensor<bool>({true})); }, {"fmod", "bool"});
}

// fmod takes the dividend's sign where remainder takes the divisor's; with a number too.
TEST(Binary, FmodAgainstRemainder) {
  Tensor a = tensor<double>({5.5, -5.5, 5.5, -5.5, 0.0, -0.0}), b = tensor<double>({2, 2, -2, -2, 3, 3});
  EXPECT_TRUE(matches(fmod(a, b), {6}, DType::Float64, {1.5, -1.5, 1.5, -1.5, 0, -0.0}, 0, 0));
  EXPECT_TRUE(matches(remainder(a, b), {6}, DType::Float64, {1.5, 0.5, -0.5, -1.5, 0, 0}, 0, 0));
  EXPECT_TRUE(std::signbit(values(fmod(a, b))[5]));
  EXPECT_TRUE(matches(fmod(tensor<int64_t>({-7, 7, -7}), 3), {3}, DType::Int64, {-1, 1, -1}));
  EXPECT_TRUE(matches(fmod(tensor<int32_t>({7, -7}), tensor<int32_t>({-3, 3})), {2}, DType::Int32, {1, -1}));
  EXPECT_TRUE(std::isnan(values(fmod(tensor<double>({1}), 0.0))[0]));
  EXPECT_TRUE(matches(fmod(tensor<int64_t>({7}), 2.5), {1}, DType::Float32, {2}));  // a float number promotes
  EXPECT_TRUE(matches(bitwise_and(tensor<uint8_t>({0xF0, 0x0F}), 0x3C), {2}, DType::UInt8, {0x30, 0x0C}));
  EXPECT_TRUE(matches(~tensor<bool>({true, false}), {2}, DType::Bool, {0, 1}));
}

TEST(Where, BroadcastsAndPromotes) {
  Tensor cond = tensor<bool>({true, false, true}, {3, 1});
  Tensor a = tensor<int32_t>({1, 2}, {1, 2});
  Tensor b = tensor<double>({-1, -2, -3, -4, -5, -6}, {3, 2});
  for (Layout l : kAllLayouts) {
    EXPECT_TRUE(matches(where(with_layout(cond, l), with_layout(a, l), with_layout(b, l)), {3, 2}, DType::Float64,
                        {1, 2, -3, -4, 1, 2}))
        << layout_name(l);
  }
  EXPECT_TRUE(matches(where(cond, a, 0.5), {3, 2}, DType::Float32, {1, 2, 0.5, 0.5, 1, 2}));
  EXPECT_TRUE(matches(where(cond, 7, a), {3, 2}, DType::Int32, {7, 7, 1, 2, 7, 7}));
  EXPECT_TRUE(matches(where(zeros({0}, DType::Bool), zeros({0}), 1), {0}, DType::Float32, {}));
  expect_error([&] { where(a, a, a); }, {"where", "bool", "int32"});
  expect_error([&] { where(cond, zeros({2, 2}), a); }, {"where", "[3, 1]", "[2, 2]"});
}

}  // namespace
}  // namespace wick::test
