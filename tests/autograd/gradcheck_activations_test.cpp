// The composite activations (wick/autograd/activations.h): a float64 reference of every one on
// the Tensor path, the Variable path equal to it, finite-difference gradients (in the
// gradcheck table), the gradient at the kinks where PyTorch picks a side, and refusals.
#include "tests/autograd/cases.h"

#include <cmath>

#include <wick/autograd/activations.h>

namespace wick::test {
namespace {

const double kSeluAlpha = 1.6732632423543772848170429916717, kSeluScale = 1.0507009873554804934193349852946;

struct ActivationCase {
  const char* name;
  Tensor (*tensor_op)(const Tensor&);
  Variable (*variable_op)(const Variable&);
  double (*ref)(double);
};

double relu6_ref(double x) { return std::min(std::max(x, 0.0), 6.0); }
double softplus_ref(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

std::vector<ActivationCase> cases() {
  return {
      {"elu", [](const Tensor& x) { return elu(x, 1.5); }, [](const Variable& x) { return elu(x, 1.5); },
       [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); }},
      {"selu", [](const Tensor& x) { return selu(x); }, [](const Variable& x) { return selu(x); },
       [](double x) { return kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x)); }},
      {"celu", [](const Tensor& x) { return celu(x, 0.5); }, [](const Variable& x) { return celu(x, 0.5); },
       [](double x) { return x > 0 ? x : 0.5 * std::expm1(x / 0.5); }},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x, -0.5, 1.0); },
       [](const Variable& x) { return hardtanh(x, -0.5, 1.0); }, [](double x) { return std::min(std::max(x, -0.5), 1.0); }},
      {"relu6", [](const Tensor& x) { return relu6(x); }, [](const Variable& x) { return relu6(x); }, relu6_ref},
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }, [](const Variable& x) { return hardsigmoid(x); },
       [](double x) { return relu6_ref(x + 3) / 6; }},
      {"hardswish", [](const Tensor& x) { return hardswish(x); }, [](const Variable& x) { return hardswish(x); },
       [](double x) { return x * relu6_ref(x + 3) / 6; }},
      {"mish", [](const Tensor& x) { return mish(x); }, [](const Variable& x) { return mish(x); },
       [](double x) { return x * std::tanh(softplus_ref(x)); }},
      {"logsigmoid", [](const Tensor& x) { return logsigmoid(x); }, [](const Variable& x) { return logsigmoid(x); },
       [](double x) { return -softplus_ref(-x); }},
      {"softsign", [](const Tensor& x) { return softsign(x); }, [](const Variable& x) { return softsign(x); },
       [](double x) { return x / (1 + std::fabs(x)); }},
  };
}

TEST(Activations, MatchTheFloat64ReferenceOnEveryFloatingDtypeAndLayout) {
  for (const ActivationCase& c : cases()) {
    Tensor x64 = random({4, 5}, DType::Float64, 11, -8, 8);
    std::vector<double> expected;
    for (double v : values(x64)) expected.push_back(c.ref(v));
    EXPECT_TRUE(matches(c.tensor_op(x64), {4, 5}, DType::Float64, expected, 1e-12, 1e-12)) << c.name;
    EXPECT_TRUE(matches(c.variable_op(Variable(x64)).data(), {4, 5}, DType::Float64, expected, 1e-12, 1e-12)) << c.name;
    // A transposed view, float32, and an empty tensor.
    Tensor t = x64.to(DType::Float32).t();
    std::vector<double> expected_t;
    for (double v : values(x64.t().contiguous())) expected_t.push_back(c.ref(static_cast<float>(v)));
    EXPECT_TRUE(matches(c.tensor_op(t), {5, 4}, DType::Float32, expected_t, 1e-5, 1e-6)) << c.name;
    EXPECT_EQ(c.tensor_op(zeros({0, 3})).shape(), Shape({0, 3})) << c.name;
    EXPECT_EQ(c.tensor_op(scalar_tensor(0.5, DType::Float64)).dim(), 0) << c.name;
    expect_error([&] { c.tensor_op(tensor<int64_t>({1, 2})); }, {c.name});
  }
}

// PyTorch's hand-written backwards at the kinks: hardswish x/3 + 1/2 on [-3, 3] (so -0.5 at
// -3 and 1.5 at 3); hardtanh, relu6 and hardsigmoid pass strictly inside; elu and celu take
// the exponential side at 0 (alpha); prelu the weight side at 0; logsigmoid 1/2 at 0.
TEST(Activations, GradientsAtTheKinksFollowPyTorch) {
  auto grad_at = [](Variable (*f)(const Variable&), std::vector<double> xs) {
    Variable x(tensor<double>(xs), true);
    sum(f(x)).backward();
    return values(x.grad().data());
  };
  EXPECT_EQ(grad_at([](const Variable& x) { return hardswish(x); }, {-4, -3, 3, 4}),
            (std::vector<double>{0, -0.5, 1.5, 1}));
  EXPECT_EQ(grad_at([](const Variable& x) { return relu6(x); }, {0, 3, 6}), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(grad_at([](const Variable& x) { return hardsigmoid(x); }, {-3, 0, 3}), (std::vector<double>{0, 1.0 / 6, 0}));
  EXPECT_EQ(grad_at([](const Variable& x) { return elu(x, 2.0); }, {0}), (std::vector<double>{2}));
  EXPECT_EQ(grad_at([](const Variable& x) { return logsigmoid(x); }, {0}), (std::vector<double>{0.5}));
  EXPECT_EQ(grad_at([](const Variable& x) { return softsign(x); }, {0}), (std::vector<double>{1}));
  Variable x(tensor<double>({0, -2, 3, -1}, {1, 2, 2}), true), w(tensor<double>({0.25, 0.5}), true);
  sum(prelu(x, w)).backward();
  EXPECT_EQ(values(x.grad().data()), (std::vector<double>{0.25, 0.25, 1, 0.5}));
  EXPECT_EQ(values(w.grad().data()), (std::vector<double>{-2, -1}));
}

TEST(Activations, GluAndPreluShapesAndErrors) {
  Tensor x = random({2, 6}, DType::Float64, 3);
  Tensor g = glu(x, 1);
  std::vector<double> xv = values(x), expected;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) expected.push_back(xv[r * 6 + c] / (1 + std::exp(-xv[r * 6 + c + 3])));
  EXPECT_TRUE(matches(g, {2, 3}, DType::Float64, expected, 1e-12, 1e-12));
  expect_error([&] { glu(random({2, 5}, DType::Float64, 1)); }, {"glu", "even"});
  expect_error([&] { glu(scalar_tensor(1.0)); }, {"glu", "0-d"});
  expect_error([&] { prelu(x, tensor<double>({1, 2, 3})); }, {"prelu", "[3]", "1 or 6"});
  EXPECT_TRUE(matches(prelu(tensor<double>({-1, 2}), tensor<double>({0.5})), {2}, DType::Float64, {-0.5, 2}));
  expect_error([&] { hardtanh(x, 1, -1); }, {"hardtanh", "min_val"});
  expect_error([&] { celu(x, 0.0); }, {"celu", "alpha"});
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(activations) {
  using wick::Variable;
  // Inputs stay off the kinks (a finite difference across one is meaningless).
  return {
      {"elu", [](auto& v) { return wick::elu(v[0], 1.5); }, {{2, 3}}, 0.1, 2},
      {"elu negative", [](auto& v) { return wick::elu(v[0], 1.5); }, {{2, 3}}, -2, -0.1},
      {"selu", [](auto& v) { return wick::selu(v[0]); }, {{5}}, -2, -0.1},
      {"celu", [](auto& v) { return wick::celu(v[0], 0.5); }, {{5}}, -2, -0.1},
      {"hardtanh", [](auto& v) { return wick::hardtanh(v[0], -0.5, 0.5); }, {{5}}, -0.4, 0.4},
      {"hardsigmoid", [](auto& v) { return wick::hardsigmoid(v[0]); }, {{5}}, -2.5, 2.5},
      {"hardswish middle", [](auto& v) { return wick::hardswish(v[0]); }, {{5}}, -2.5, 2.5},
      {"hardswish outside", [](auto& v) { return wick::hardswish(v[0]); }, {{5}}, 3.5, 5},
      {"mish", [](auto& v) { return wick::mish(v[0]); }, {{6}}},
      {"logsigmoid", [](auto& v) { return wick::logsigmoid(v[0]); }, {{6}}, 0.1, 3},
      {"logsigmoid negative", [](auto& v) { return wick::logsigmoid(v[0]); }, {{6}}, -3, -0.1},
      {"softsign", [](auto& v) { return wick::softsign(v[0]); }, {{6}}, 0.1, 3},
      {"glu", [](auto& v) { return wick::glu(v[0], 0); }, {{4, 3}}},
      {"prelu", [](auto& v) { return wick::prelu(v[0], v[1]); }, {{2, 3, 2}, {3}}, 0.1, 2},
      {"prelu negative", [](auto& v) { return wick::prelu(v[0], v[1]); }, {{2, 3, 2}, {3}}, -2, -0.1},
  };
}
