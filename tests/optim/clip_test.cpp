// Gradient clipping by global norm (2 and infinity) and by value.
#include <cmath>
#include <limits>

#include <wick/optim/clip.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

Variable with_grad(const Tensor& g) {
  Variable p(zeros_like(g), true);
  p.set_grad(Variable(g));
  return p;
}

TEST(ClipGradNorm, ScalesAllGradientsByTheGlobalNorm) {
  Variable a = with_grad(tensor<double>({3, 4})), b = with_grad(tensor<float>({12.f}, {1, 1}));
  Variable none(zeros({2}), true);  // no grad: skipped
  double total = clip_grad_norm_({a, none, b}, 6.5);
  EXPECT_DOUBLE_EQ(total, 13.0);
  double c = 6.5 / (13.0 + 1e-6);
  EXPECT_TRUE(matches(a.grad().data(), {2}, DType::Float64, {3 * c, 4 * c}));
  EXPECT_TRUE(matches(b.grad().data(), {1, 1}, DType::Float32, {12 * c}));
  EXPECT_FALSE(none.grad().defined());
  // Below the bound nothing changes.
  EXPECT_NEAR(clip_grad_norm_({a, b}, 100.0), 6.5, 1e-6);
  EXPECT_TRUE(matches(a.grad().data(), {2}, DType::Float64, {3 * c, 4 * c}));
}

TEST(ClipGradNorm, InfinityNormUsesTheLargestMagnitude) {
  Variable a = with_grad(tensor<double>({3, -4})), b = with_grad(tensor<double>({-12, 1}));
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(clip_grad_norm_({a, b}, 6.0, inf), 12.0);
  double c = 6.0 / (12.0 + 1e-6);
  EXPECT_TRUE(matches(a.grad().data(), {2}, DType::Float64, {3 * c, -4 * c}));
  EXPECT_TRUE(matches(b.grad().data(), {2}, DType::Float64, {-12 * c, c}));
}

TEST(ClipGradNorm, EmptyAndMissingGradientsAndErrors) {
  EXPECT_EQ(clip_grad_norm_({}, 1.0), 0.0);
  Variable e = with_grad(zeros({0}, DType::Float64)), a = with_grad(tensor<double>({0, 2}));
  EXPECT_DOUBLE_EQ(clip_grad_norm_({e, a}, 1.0, std::numeric_limits<double>::infinity()), 2.0);
  expect_error([&] { clip_grad_norm_({a}, 1.0, 0.0); }, {"clip_grad_norm_", "norm_type", "positive", "0"});
  expect_error([&] { clip_grad_norm_({a}, -1.0); }, {"clip_grad_norm_", "max_norm", "-1"});
}

// Any p-norm, and error_if_nonfinite (issue 13, section 3).
TEST(ClipGradNorm, AnyPNormAndErrorIfNonfinite) {
  Variable a = with_grad(tensor<double>({3, -4})), b = with_grad(tensor<double>({1}));
  const double total = std::pow(27.0 + 64.0 + 1.0, 1.0 / 3);
  EXPECT_NEAR(clip_grad_norm_({a, b}, 1.0, 3.0), total, 1e-12);
  EXPECT_TRUE(matches(a.grad().data(), {2}, DType::Float64, {3 / (total + 1e-6), -4 / (total + 1e-6)}, 1e-12, 1e-12));
  Variable c = with_grad(tensor<double>({1, 1, 1, 1}));
  EXPECT_NEAR(clip_grad_norm_({c}, 10.0, 1.0), 4.0, 1e-12);  // the 1-norm; below max_norm: unchanged
  EXPECT_TRUE(matches(c.grad().data(), {4}, DType::Float64, {1, 1, 1, 1}));
  Variable n = with_grad(tensor<double>({std::nan(""), 1}));
  expect_error([&] { clip_grad_norm_({n}, 1.0, 2.0, true); }, {"clip_grad_norm_", "nan", "error_if_nonfinite"});
  EXPECT_TRUE(std::isnan(n.grad().data().to_vector<double>()[0]));  // nothing was scaled
  EXPECT_TRUE(std::isnan(clip_grad_norm_({n}, 1.0)));  // without the flag: like torch, NaN spreads
}

TEST(ClipGradValue, ClampsEveryElement) {
  Variable a = with_grad(tensor<double>({-3, 0.5, 2}, {3})), b = with_grad(tensor<float>({1.5f, -0.2f}));
  clip_grad_value_({a, b}, 1.0);
  EXPECT_TRUE(matches(a.grad().data(), {3}, DType::Float64, {-1, 0.5, 1}));
  EXPECT_TRUE(matches(b.grad().data(), {2}, DType::Float32, {1, -0.2}));
  expect_error([&] { clip_grad_value_({a}, -0.5); }, {"clip_grad_value_", "-0.5"});
}

}  // namespace
}  // namespace wick::test
