// Elementwise ops against float64 references: every binary op over dtypes, layouts and
// broadcast shapes; where; the unary ops' NaN, integer and refusal rules (the unary table
// itself, with gradients and CUDA, is tests/autograd/unary_table_test.cpp).
#include <cmath>
#include <limits>

#include <wick/tensor/norm.h>

#include "tests/support/dtype_sets.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

std::vector<DType> concat(std::vector<DType> a, const std::vector<DType>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(Unary, LargeContiguousAndBroadcastInputsUseTheFastPaths) {
  // Long enough for the threaded path; a stride-0 input; float32 through vec_math.
  Tensor x = random({70000}, DType::Float32, 7, -10, 10);
  EXPECT_TRUE(matches(gelu(x), {70000}, DType::Float32, ref_unary(values(x), gelu_erf_ref), 1e-5, 1e-6));
  EXPECT_TRUE(matches(tanh(x), {70000}, DType::Float32,
                      ref_unary(values(x), [](double v) { return std::tanh(v); })));
  Tensor s = scalar_tensor(0.5).expand({4, 3});
  EXPECT_TRUE(matches(exp(s), {4, 3}, DType::Float32, std::vector<double>(12, std::exp(0.5))));
}

// Python numbers with float16/bfloat16 tensors are used in float32 (PyTorch's opmath), not
// rounded to 16 bits first (issue 13, item 3).
TEST(Binary, NumbersWith16BitFloatsAreNotRoundedFirst) {
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor x = tensor<double>({0.5, -0.25, 0.0}).to(dt);
    Tensor big = mul(x, -92330.0);  // -92330 is inf in float16, the product is not
    EXPECT_EQ(big.dtype(), dt);
    EXPECT_NEAR(big.to(DType::Float64).to_vector<double>()[1], 23082.5, 23082.5 * 0.01) << dtype_name(dt);
    Tensor q = div(x, 2.2e-8);  // 2.2e-8 is 0 in float16: x / 0 would be inf and NaN
    EXPECT_EQ(q.to(DType::Float64).to_vector<double>()[2], 0.0) << dtype_name(dt);
    EXPECT_TRUE(std::isfinite(q.to(DType::Float64).to_vector<double>()[1]) || dt == DType::Float16) << dtype_name(dt);
    Tensor y = x.clone();
    y.mul_(-92330.0);
    EXPECT_NEAR(y.to(DType::Float64).to_vector<double>()[1], 23082.5, 23082.5 * 0.01) << dtype_name(dt);
    EXPECT_EQ(gt(x, 70000.0).to(DType::Float64).to_vector<double>(), (std::vector<double>{0, 0, 0}));
  }
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
  expect_error([&] { u.masked_fill_(tensor<bool>({true, false}), -1); }, {"masked_fill_", "uint8"});
  u.fill_(255.5);  // truncated toward zero: fits
  EXPECT_TRUE(matches(u, {2}, DType::UInt8, {255, 255}));
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

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  std::vector<DType> dtypes;
  enum class Out { Same, Float, Bool } out = Out::Same;
  double alo = -3, ahi = 3, blo = -3, bhi = 3;
  bool nonzero_b = false;
};

std::vector<BinaryCase> binary_cases() {
  using O = BinaryCase::Out;
  const auto numeric = kNumericTypes;
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, kAllDTypes},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; },
       numeric},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, kAllDTypes},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; },
       concat({DType::Bool}, numeric), O::Float, -3, 3, -3, 3, true},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, kFloatTypes, O::Same, 0.5, 2, -2, 2},
      {"pow_int", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, kIntTypes, O::Same, -3, 3, 0, 4},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }, kAllDTypes},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }, kAllDTypes},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, py_mod, numeric, O::Same, -9,
       9, -4, 4, true},
      {"floor_divide", [](const Tensor& a, const Tensor& b) { return floor_divide(a, b); },
       [](double a, double b) { return std::floor(a / b); }, numeric, O::Same, -9, 9, -4, 4, true},
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); }, numeric, O::Float},
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); },
       [](double a, double b) { return std::fmod(a, b); }, numeric, O::Same, -9, 9, -4, 4, true},
      {"bitwise_and", [](const Tensor& a, const Tensor& b) { return a & b; },
       [](double a, double b) { return double(static_cast<int64_t>(a) & static_cast<int64_t>(b)); },
       concat({DType::Bool}, kIntTypes), O::Same, -9, 9, -9, 9},
      {"bitwise_or", [](const Tensor& a, const Tensor& b) { return a | b; },
       [](double a, double b) { return double(static_cast<int64_t>(a) | static_cast<int64_t>(b)); },
       concat({DType::Bool}, kIntTypes), O::Same, -9, 9, -9, 9},
      {"bitwise_xor", [](const Tensor& a, const Tensor& b) { return a ^ b; },
       [](double a, double b) { return double(static_cast<int64_t>(a) ^ static_cast<int64_t>(b)); },
       concat({DType::Bool}, kIntTypes), O::Same, -9, 9, -9, 9},
      {"eq", [](const Tensor& a, const Tensor& b) { return a == b; }, [](double a, double b) { return double(a == b); },
       kAllDTypes, O::Bool, -1, 1, -1, 1},
      {"ne", [](const Tensor& a, const Tensor& b) { return a != b; }, [](double a, double b) { return double(a != b); },
       kAllDTypes, O::Bool, -1, 1, -1, 1},
      {"lt", [](const Tensor& a, const Tensor& b) { return a < b; }, [](double a, double b) { return double(a < b); },
       kAllDTypes, O::Bool, -1, 1, -1, 1},
      {"le", [](const Tensor& a, const Tensor& b) { return a <= b; }, [](double a, double b) { return double(a <= b); },
       kAllDTypes, O::Bool, -1, 1, -1, 1},
      {"gt", [](const Tensor& a, const Tensor& b) { return a > b; }, [](double a, double b) { return double(a > b); },
       kAllDTypes, O::Bool, -1, 1, -1, 1},
      {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }, [](double a, double b) { return double(a >= b); },
       kAllDTypes, O::Bool, -1, 1, -1, 1},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return a && b; },
       [](double a, double b) { return double(a != 0 && b != 0); }, kAllDTypes, O::Bool, -1, 1, -1, 1},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return a || b; },
       [](double a, double b) { return double(a != 0 || b != 0); }, kAllDTypes, O::Bool, -1, 1, -1, 1},
  };
}

// Random values with zeros replaced by 1 (divisors).
Tensor random_nonzero(const Shape& shape, DType dt, uint64_t seed, double lo, double hi) {
  std::vector<double> v = values(random(shape, dt, seed, lo, hi));
  for (double& x : v)
    if (x == 0) x = 1;
  return tensor<double>(v, shape).to(dt);
}

TEST(Binary, TableOverDtypesLayoutsAndBroadcasts) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{}, {5}}, {{2, 3}, {}}, {{0, 3}, {3}}};
  uint64_t seed = 1000;
  for (const BinaryCase& c : binary_cases()) {
    for (DType dt : c.dtypes) {
      const DType out_dt = c.out == BinaryCase::Out::Bool                             ? DType::Bool
                           : (c.out == BinaryCase::Out::Float && !is_floating(dt)) ? kDefaultFloat
                                                                                    : dt;
      for (const auto& [sa, sb] : shapes) {
        Tensor a = random(sa, dt, seed++, c.alo, c.ahi);
        Tensor b = c.nonzero_b ? random_nonzero(sb, dt, seed++, c.blo, c.bhi) : random(sb, dt, seed++, c.blo, c.bhi);
        std::vector<double> expected = ref_binary(values(a), sa, values(b), sb, c.ref);
        if (!is_floating(out_dt))
          for (double& v : expected) v = wrap_to(v, out_dt);
        const Shape out_shape = broadcast_shapes("test", sa, sb);
        for (Layout l : kAllLayouts) {
          Tensor r = c.op(with_layout(a, l), with_layout(b, kAllLayouts[(static_cast<size_t>(l) + 1) % 4]));
          EXPECT_TRUE(matches(r, out_shape, out_dt, expected))
              << c.name << " " << dtype_name(dt) << " " << shape_str(sa) << " x " << shape_str(sb) << " "
              << layout_name(l);
        }
      }
    }
  }
}

TEST(Binary, ScalarOperandsOnEitherSide) {
  Tensor x = tensor<float>({1, 2, 4});
  EXPECT_TRUE(matches(x + 1, {3}, DType::Float32, {2, 3, 5}));
  EXPECT_TRUE(matches(x - 0.5, {3}, DType::Float32, {0.5, 1.5, 3.5}));
  EXPECT_TRUE(matches(10 - x, {3}, DType::Float32, {9, 8, 6}));
  EXPECT_TRUE(matches(1 / x, {3}, DType::Float32, {1, 0.5, 0.25}));
  EXPECT_TRUE(matches(2 * x, {3}, DType::Float32, {2, 4, 8}));
  EXPECT_TRUE(matches(3 + x, {3}, DType::Float32, {4, 5, 7}));
  EXPECT_TRUE(matches(pow(2, x), {3}, DType::Float32, {2, 4, 16}));
  EXPECT_TRUE(matches(pow(x, 2), {3}, DType::Float32, {1, 4, 16}));
  EXPECT_TRUE(matches(minimum(x, 1.5), {3}, DType::Float32, {1, 1.5, 1.5}));
  EXPECT_TRUE(matches(maximum(x, 1.5), {3}, DType::Float32, {1.5, 2, 4}));
  EXPECT_TRUE(matches(x >= 2, {3}, DType::Bool, {0, 1, 1}));
  EXPECT_TRUE(matches(x == 4, {3}, DType::Bool, {0, 0, 1}));
  EXPECT_TRUE(matches(x != 4, {3}, DType::Bool, {1, 1, 0}));
  EXPECT_TRUE(matches(x < 2, {3}, DType::Bool, {1, 0, 0}));
  EXPECT_TRUE(matches(x <= 2, {3}, DType::Bool, {1, 1, 0}));
  EXPECT_TRUE(matches(x > 2, {3}, DType::Bool, {0, 0, 1}));
  EXPECT_TRUE(matches(div(tensor<int32_t>({7, -7}), 2), {2}, DType::Float32, {3.5, -3.5}));
  // Large contiguous operands take the threaded, vectorised rows (with a stride-0 scalar).
  Tensor big = random({100000}, DType::Float32, 3);
  EXPECT_TRUE(matches(big * 3 + big, {100000}, DType::Float32,
                      ref_unary(values(big), [](double v) { return double(float(v * 3)) + v; })));
}

TEST(Binary, NaNPropagationAndPythonDivision) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType dt : kFloatTypes) {
    Tensor a = tensor<double>({nan, 1, nan, 2}).to(dt), b = tensor<double>({1, nan, nan, -inf}).to(dt);
    EXPECT_TRUE(matches(minimum(a, b), {4}, dt, {nan, nan, nan, -inf})) << dtype_name(dt);
    EXPECT_TRUE(matches(maximum(a, b), {4}, dt, {nan, nan, nan, 2})) << dtype_name(dt);
  }
  // Python semantics: the remainder takes the divisor's sign, the quotient rounds down.
  Tensor a = tensor<int64_t>({7, -7, 7, -7, std::numeric_limits<int64_t>::min()});
  Tensor b = tensor<int64_t>({2, 2, -2, -2, -1});
  EXPECT_TRUE(matches(remainder(a, b), {5}, DType::Int64, {1, 1, -1, -1, 0}));
  EXPECT_TRUE(matches(floor_divide(a, b), {5}, DType::Int64, {3, -4, -4, 3, -9.223372036854775808e18}));
  Tensor fa = tensor<double>({7.5, -7.5, 1, -1}), fb = tensor<double>({2, 2, 0, 0});
  EXPECT_TRUE(matches(remainder(fa, fb), {4}, DType::Float64, {1.5, 0.5, nan, nan}));
  EXPECT_TRUE(matches(floor_divide(fa, fb), {4}, DType::Float64, {3, -4, inf, -inf}));
  // Integer division by zero is an error, not a crash; true division of ints is fine.
  expect_error([] { remainder(tensor<int32_t>({1, 2}), tensor<int32_t>({1, 0})); },
               {"remainder", "integer division by zero"});
  expect_error([] { floor_divide(tensor<int64_t>({1}), tensor<int64_t>({0})); },
               {"floor_divide", "integer division by zero"});
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
  EXPECT_TRUE(matches(fmod(tensor<int32_t>({7}), tensor<int32_t>({0})), {1}, DType::Int32, {0}));
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
