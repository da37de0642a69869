// The backward engine: accumulation, retain_graph, hooks, no-grad mode, errors.
#include <cmath>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(Engine, ScalarBackwardFillsLeafGrads) {
  Variable x = leaf({1, 2, 3}, {3});
  Variable y = sum(mul(x, x));  // d/dx = 2x
  y.backward();
  EXPECT_TRUE(matches(x.grad().data(), {3}, DType::Float64, {2, 4, 6}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_STREQ(y.grad_fn()->name(), "SumBackward");
}

TEST(Engine, GradientsAccumulateAcrossBackwardCalls) {
  Variable x = leaf({1, 2}, {2});
  sum(mul(x, 3.0)).backward();
  sum(mul(x, 3.0)).backward();
  EXPECT_TRUE(matches(x.grad().data(), {2}, DType::Float64, {6, 6}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  x.set_grad(Variable(ones({2}, DType::Float64)));
  x.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(matches(x.grad().data(), {2}, DType::Float64, {0, 0}));
}

TEST(Engine, AVariableUsedTwiceGetsBothContributions) {
  Variable x = leaf({2}, {1});
  Variable y = add(mul(x, x), x);  // 2x + 1 = 5
  sum(y).backward();
  EXPECT_TRUE(matches(x.grad().data(), {1}, DType::Float64, {5}));
  // The two leaves of an add must not share one gradient buffer.
  Variable a = leaf({1}, {1}), b = leaf({1}, {1});
  sum(add(a, b)).backward();
  a.grad().data().mul_(10);
  EXPECT_TRUE(matches(b.grad().data(), {1}, DType::Float64, {1}));
}

TEST(Engine, SecondBackwardNeedsRetainGraph) {
  Variable x = leaf({1, 2}, {2});
  Variable y = sum(exp(x));
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_TRUE(matches(x.grad().data(), {2}, DType::Float64, {2 * std::exp(1.0), 2 * std::exp(2.0)}));
  expect_error([&] { y.backward(); }, {"ExpBackward", "second time", "retain_graph"});
}

TEST(Engine, NonScalarNeedsExplicitGradient) {
  Variable x = leaf({1, 2}, {2});
  Variable y = mul(x, 2.0);
  expect_error([&] { y.backward(); }, {"backward", "[2]"});
  y.backward(tensor<double>({1, 10}));
  EXPECT_TRUE(matches(x.grad().data(), {2}, DType::Float64, {2, 20}));
  expect_error([&] { mul(x, 2.0).backward(tensor<double>({1, 2, 3})); }, {"backward", "[3]", "[2]"});
}

TEST(Engine, NoGradGuardRecordsNothing) {
  Variable x = leaf({1}, {1});
  {
    NoGradGuard guard;
    Variable y = mul(x, 2.0);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE(mul(x, 2.0).requires_grad());
  Variable c(tensor<double>({1}));
  EXPECT_FALSE(mul(c, 2.0).requires_grad());
  expect_error([&] { sum(mul(c, 2.0)).backward(); }, {"backward", "does not require grad"});
}

TEST(Engine, HooksSeeAndReplaceGradients) {
  Variable x = leaf({1, 2}, {2});
  Variable h = mul(x, 2.0);
  std::vector<double> seen;
  h.register_hook([&](const Variable& g) {
    seen = g.data().to_vector<double>();
    return mul(g, 10.0);  // replaces the gradient flowing on
  });
  int post_calls = 0;
  x.register_post_accumulate_grad_hook([&](const Variable& v) {
    ++post_calls;
    EXPECT_TRUE(v.grad().defined());
  });
  auto id = x.register_hook([](const Variable& g) { return mul(g, 0.5); });
  sum(h).backward();
  EXPECT_EQ(seen, (std::vector<double>{1, 1}));
  EXPECT_TRUE(matches(x.grad().data(), {2}, DType::Float64, {10, 10}));  // 1 * 10 * 2 * 0.5
  EXPECT_EQ(post_calls, 1);
  x.remove_hook(id);
  x.zero_grad();
  sum(mul(x, 2.0)).backward();
  EXPECT_TRUE(matches(x.grad().data(), {2}, DType::Float64, {2, 2}));
}

TEST(Engine, DeepChainsDoNotOverflowTheStack) {
  Variable x = leaf({1}, {1});
  Variable y = x;
  for (int i = 0; i < 100000; ++i) y = add(y, 1.0);
  sum(y).backward();
  EXPECT_TRUE(matches(x.grad().data(), {1}, DType::Float64, {1}));
}

// Freeing a graph must be a loop too: a million nodes freed recursively need far more stack
// than a thread has (8 MiB; ASan's frames are larger still). MulBackward holds the previous
// node twice: through its edge and through the input variable it saves.
TEST(Engine, FreeingAMillionOpChainDoesNotOverflowTheStack) {
  Variable x = leaf({1}, {1});
  Variable two(full({1}, 2.0, DType::Float64)), half(full({1}, 0.5, DType::Float64));
  Variable y = x;
  for (int i = 0; i < 1000000; ++i) y = mul(y, i % 2 == 0 ? two : half);
  EXPECT_EQ(y.grad_fn()->name(), std::string("MulBackward"));
  y = Variable();
  EXPECT_EQ(x.grad_fn(), nullptr);
}

TEST(Engine, GradDoesNotTouchLeafGrads) {
  Variable x = leaf({3}, {1});
  Variable y = sum(mul(mul(x, x), x));  // x^3
  std::vector<Variable> g = grad({y}, {x}, {}, /*retain_graph=*/false, /*create_graph=*/true);
  EXPECT_TRUE(matches(g[0].data(), {1}, DType::Float64, {27}));  // 3x^2
  EXPECT_FALSE(x.grad().defined());
  // Double backward: d/dx 3x^2 = 6x.
  std::vector<Variable> g2 = grad({sum(g[0])}, {x});
  EXPECT_TRUE(matches(g2[0].data(), {1}, DType::Float64, {18}));
}

TEST(Engine, MixedDtypesGetGradientsInTheirOwnDtype) {
  Variable a(tensor<float>({1, 2}), true);
  Variable b = leaf({3, 4}, {2});
  sum(mul(a, b)).backward();
  EXPECT_EQ(a.grad().dtype(), DType::Float32);
  EXPECT_TRUE(matches(a.grad().data(), {2}, DType::Float32, {3, 4}));
  EXPECT_TRUE(matches(b.grad().data(), {2}, DType::Float64, {1, 2}));
}

TEST(Engine, OnlyFloatingLeavesRequireGrad) {
  expect_error([] { Variable(arange(3), true); }, {"set_requires_grad", "int64"});
  Variable y = mul(leaf({1}, {1}), 2.0);
  expect_error([&] { y.set_requires_grad(false); }, {"leaf", "MulScalarBackward"});
}

// torch.autograd.backward over several outputs: one pass, the contributions summed.
TEST(Engine, BackwardOverSeveralOutputsAtOnce) {
  Variable x = leaf({1, 2, 3, 4}, {4});
  Variable e = exp(x);
  std::vector<Variable> parts = split(e, 2, 0);
  autograd::backward({parts[0], parts[1]}, {Variable(tensor<double>({1, 2})), Variable(tensor<double>({3, 4}))});
  std::vector<double> expect;
  for (int i = 0; i < 4; ++i) expect.push_back((i + 1) * std::exp(i + 1.0));
  EXPECT_TRUE(matches(x.grad().data(), {4}, DType::Float64, expect, 1e-14, 0));
  // max with indices: the values and a second output of the same graph.
  Variable y = leaf({5, 1, 7, 2}, {2, 2});
  const Variable m = max(y, 1).first;  // (not a structured binding: clang 14 cannot capture those)
  backward({sum(m), sum(mul(y, 2.0))});  // one-element outputs: ones
  EXPECT_TRUE(matches(y.grad().data(), {2, 2}, DType::Float64, {3, 2, 3, 2}));
  expect_error([&] { backward({m}); }, {"backward", "one-element"});
  expect_error([&] { backward({sum(m), sum(m)}, {Variable(tensor<double>({1.0}))}); }, {"backward", "2 outputs", "1 gradients"});
}

}  // namespace
}  // namespace wick::test
