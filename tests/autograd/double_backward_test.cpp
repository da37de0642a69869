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
      {"2nd mul", [](auto& v) { return mul(v[0], mul(v[0], v[1])); }, {{3}, {3}}},
      {"2nd div", [](auto& v) { return div(v[0], v[1]); }, {{3}, {3}}, 0.5, 2},
      {"2nd sqrt", [](auto& v) { return sqrt(v[0]); }, {{3}}, 0.5, 2},
      {"2nd rsqrt", [](auto& v) { return rsqrt(v[0]); }, {{3}}, 0.5, 2},
      {"2nd reciprocal", [](auto& v) { return reciprocal(v[0]); }, {{3}}, 0.5, 2},
      {"2nd sin cos", [](auto& v) { return mul(sin(v[0]), cos(v[0])); }, {{3}}},
      {"2nd erf", [](auto& v) { return erf(v[0]); }, {{3}}},
      {"2nd log1p expm1", [](auto& v) { return add(log1p(v[0]), expm1(v[0])); }, {{3}}, 0, 1},
      {"2nd softplus", [](auto& v) { return softplus(v[0]); }, {{3}}},
      {"2nd tanh", [](auto& v) { return tanh(v[0]); }, {{3}}},
      {"2nd sigmoid", [](auto& v) { return sigmoid(v[0]); }, {{3}}},
      {"2nd silu", [](auto& v) { return silu(v[0]); }, {{3}}},
      {"2nd gelu", [](auto& v) { return gelu(v[0]); }, {{3}}},
      {"2nd gelu tanh", [](auto& v) { return gelu(v[0], GeluApproximation::Tanh); }, {{3}}},
      {"2nd pow tensor", [](auto& v) { return pow(v[0], v[1]); }, {{3}, {3}}, 0.5, 2},
      {"2nd pow scalar base", [](auto& v) { return pow(Scalar(2.0), mul(v[0], v[0])); }, {{3}}},
      {"2nd prod", [](auto& v) { return prod(v[0], {1}); }, {{2, 3}}, 0.5, 1.5},
      {"2nd var", [](auto& v) { return var(v[0], {1}); }, {{2, 3}}},
      {"2nd std", [](auto& v) { return wick::std(v[0]); }, {{4}}},
      {"2nd norm", [](auto& v) { return norm(v[0], 3.0); }, {{4}}, 0.5, 2},
      {"2nd norm 2 dims", [](auto& v) { return norm(v[0], 2.0, {1}); }, {{2, 3}}, 0.5, 2},
      {"2nd mean", [](auto& v) { return square(mean(v[0], {0})); }, {{3, 2}}},
      {"2nd dot", [](auto& v) { return mul(dot(v[0], v[1]), dot(v[0], v[0])); }, {{3}, {3}}},
      {"2nd matmul 1-d", [](auto& v) { return square(matmul(v[0], v[1])); }, {{3}, {3}}},
      {"2nd logsumexp", [](auto& v) { return logsumexp(v[0], {1}); }, {{2, 3}}},
      {"2nd softmax", [](auto& v) { return softmax(v[0], 1); }, {{2, 3}}},
      {"2nd log_softmax", [](auto& v) { return log_softmax(v[0], 0); }, {{3, 2}}},
      {"2nd slice and cat", [](auto& v) { return mul(cat({slice(v[0], 0, 0, 3, 2), v[0]}), sum(v[0])); }, {{3}}},
      {"2nd split", [](auto& v) { return square(split(v[0], 2, 0)[1]); }, {{4}}},
      {"2nd gather", [idx](auto& v) { return square(gather(v[0], 1, idx)); }, {{2, 3}}},
      {"2nd addmm", [](auto& v) { return square(addmm(v[0], v[1], v[1])); }, {{2}, {2, 2}}},
      {"2nd max dim", [](auto& v) { return square(max(v[0], 1).first); }, {{2, 3}}},
  };
}
