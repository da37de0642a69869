// Double backward: second-derivative cases that combine ops (the runner in cases.h checks
// the second derivatives of every gradcheck case), and the refusal of create_graph by the
// kernel-backed nodes.
#include "tests/autograd/cases.h"

namespace wick::test {
namespace {

// The fused cross-entropy's backward is a kernel: it refuses create_graph instead of
// silently giving a zero second derivative (issue 13, item 12).
TEST(DoubleBackward, CrossEntropyAndNormsRefuseCreateGraph) {
  Variable logits(random({2, 3}, DType::Float64, 5), true);
  Variable loss = cross_entropy(logits, tensor<int64_t>({0, 2}));
  expect_error([&] { grad({loss}, {logits}, {}, /*retain_graph=*/true, /*create_graph=*/true); },
               {"CrossEntropyBackward", "double backward (create_graph) is not supported"});
  // Without create_graph it still works.
  EXPECT_EQ(grad({loss}, {logits})[0].shape(), Shape({2, 3}));
  // The norms' fused backward likewise (it used to return constants: a zero second derivative).
  Variable x(random({4, 3}, DType::Float64, 6), true);
  Variable y = sum(square(layer_norm(x, {3})));
  expect_error([&] { grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true); },
               {"LayerNormBackward", "double backward (create_graph) is not supported"});
}

// exp's backward reused its saved output as a constant, so second derivatives through exp
// (and logsigmoid, softplus-like composites, poisson_nll_loss, ctc_loss) were wrong.
TEST(DoubleBackward, ExpSecondDerivativeIsExp) {
  Variable x(tensor<double>({0.5, -1.0}), true);
  Variable g = grad({sum(exp(x))}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  Variable h = grad({sum(g)}, {x})[0];
  EXPECT_TRUE(matches(h.data(), {2}, DType::Float64, {std::exp(0.5), std::exp(-1.0)}, 1e-15, 0));
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(second_order) {
  using namespace wick;
  Tensor idx = tensor<int64_t>({0, 2, 2, 1}, {2, 2});
  return {
      {"mul", [](auto& v) { return mul(v[0], mul(v[0], v[1])); }, {{3}, {3}}},
      {"div", [](auto& v) { return div(v[0], v[1]); }, {{3}, {3}}, 0.5, 2},
      {"sqrt", [](auto& v) { return sqrt(v[0]); }, {{3}}, 0.5, 2},
      {"rsqrt", [](auto& v) { return rsqrt(v[0]); }, {{3}}, 0.5, 2},
      {"reciprocal", [](auto& v) { return reciprocal(v[0]); }, {{3}}, 0.5, 2},
      {"sin cos", [](auto& v) { return mul(sin(v[0]), cos(v[0])); }, {{3}}},
      {"erf", [](auto& v) { return erf(v[0]); }, {{3}}},
      {"log1p expm1", [](auto& v) { return add(log1p(v[0]), expm1(v[0])); }, {{3}}, 0, 1},
      {"softplus", [](auto& v) { return softplus(v[0]); }, {{3}}},
      {"tanh", [](auto& v) { return tanh(v[0]); }, {{3}}},
      {"sigmoid", [](auto& v) { return sigmoid(v[0]); }, {{3}}},
      {"silu", [](auto& v) { return silu(v[0]); }, {{3}}},
      {"gelu", [](auto& v) { return gelu(v[0]); }, {{3}}},
      {"gelu tanh", [](auto& v) { return gelu(v[0], GeluApproximation::Tanh); }, {{3}}},
      {"pow tensor", [](auto& v) { return pow(v[0], v[1]); }, {{3}, {3}}, 0.5, 2},
      {"pow scalar base", [](auto& v) { return pow(Scalar(2.0), mul(v[0], v[0])); }, {{3}}},
      {"prod", [](auto& v) { return prod(v[0], {1}); }, {{2, 3}}, 0.5, 1.5},
      {"var", [](auto& v) { return var(v[0], {1}); }, {{2, 3}}},
      {"std", [](auto& v) { return wick::std(v[0]); }, {{4}}},
      {"norm", [](auto& v) { return norm(v[0], 3.0); }, {{4}}, 0.5, 2},
      {"norm 2 dims", [](auto& v) { return norm(v[0], 2.0, {1}); }, {{2, 3}}, 0.5, 2},
      {"mean", [](auto& v) { return square(mean(v[0], {0})); }, {{3, 2}}},
      {"dot", [](auto& v) { return mul(dot(v[0], v[1]), dot(v[0], v[0])); }, {{3}, {3}}},
      {"matmul 1-d", [](auto& v) { return square(matmul(v[0], v[1])); }, {{3}, {3}}},
      {"logsumexp", [](auto& v) { return logsumexp(v[0], {1}); }, {{2, 3}}},
      {"softmax", [](auto& v) { return softmax(v[0], 1); }, {{2, 3}}},
      {"log_softmax", [](auto& v) { return log_softmax(v[0], 0); }, {{3, 2}}},
      {"slice and cat", [](auto& v) { return mul(cat({slice(v[0], 0, 0, 3, 2), v[0]}), sum(v[0])); }, {{3}}},
      {"split", [](auto& v) { return square(split(v[0], 2, 0)[1]); }, {{4}}},
      {"gather", [idx](auto& v) { return square(gather(v[0], 1, idx)); }, {{2, 3}}},
      {"addmm", [](auto& v) { return square(addmm(v[0], v[1], v[1])); }, {{2}, {2, 2}}},
      {"max dim", [](auto& v) { return square(max(v[0], 1).first); }, {{2, 3}}},
  };
}
