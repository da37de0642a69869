// Initialisers: fans, gains, and the statistics of what they draw.
#include "tests/support/reference.h"

#include <cmath>

#include <wick/nn/init.h>
#include <wick/nn/linear.h>

namespace wick::test {
namespace {

struct Moments {
  double mean, std, min, max;
};

Moments moments(const Tensor& t) {
  std::vector<double> v = values(t);
  double s = 0, lo = INFINITY, hi = -INFINITY;
  for (double x : v) s += x, lo = std::min(lo, x), hi = std::max(hi, x);
  const double mean = s / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return {mean, std::sqrt(ss / static_cast<double>(v.size())), lo, hi};
}

TEST(Init, FansFollowPyTorch) {
  EXPECT_EQ(init::calculate_fan_in_and_fan_out({5, 3}), (std::pair<int64_t, int64_t>{3, 5}));
  EXPECT_EQ(init::calculate_fan_in_and_fan_out({8, 4, 3, 2}), (std::pair<int64_t, int64_t>{24, 48}));
  EXPECT_EQ(init::calculate_fan_in_and_fan_out({6, 2, 5}), (std::pair<int64_t, int64_t>{10, 30}));
  expect_error([] { init::calculate_fan_in_and_fan_out({7}); }, {"calculate_fan_in_and_fan_out", "[7]", "2 dims"});
  expect_error([] { init::kaiming_uniform_(zeros({7})); }, {"[7]"});
}

TEST(Init, Gains) {
  using init::Nonlinearity;
  EXPECT_DOUBLE_EQ(init::calculate_gain(Nonlinearity::Linear), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(Nonlinearity::Sigmoid), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(Nonlinearity::Tanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(Nonlinearity::ReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain(Nonlinearity::LeakyReLU), std::sqrt(2.0 / (1 + 1e-4)));
  EXPECT_DOUBLE_EQ(init::calculate_gain(Nonlinearity::LeakyReLU, std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain(Nonlinearity::SELU), 0.75);
}

// Statistics of 40000 draws: the sample mean is within 4 standard errors of the target and
// the sample std within 2%; uniform draws stay inside their bounds and reach near them.
TEST(Init, DistributionsHaveTheRightMoments) {
  Generator g(11);
  const Shape shape{200, 50, 2, 2};  // fan_in 200, fan_out 800
  const double n = 40000;
  auto expect_moments = [&](const Tensor& t, double mean, double std, const char* what) {
    Moments m = moments(t);
    EXPECT_NEAR(m.mean, mean, 4 * std / std::sqrt(n)) << what;
    EXPECT_NEAR(m.std, std, 0.02 * std) << what;
    return m;
  };
  auto expect_uniform = [&](const Tensor& t, double bound, const char* what) {
    Moments m = expect_moments(t, 0.0, bound / std::sqrt(3.0), what);
    EXPECT_GE(m.min, -bound) << what;
    EXPECT_LE(m.max, bound) << what;
    EXPECT_LT(m.min, -0.99 * bound) << what;
    EXPECT_GT(m.max, 0.99 * bound) << what;
  };
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor t = empty(shape, dt);
    expect_uniform(init::kaiming_uniform_(t, 0.0, init::FanMode::FanIn, init::Nonlinearity::ReLU, &g),
                   std::sqrt(2.0) * std::sqrt(3.0 / 200), "kaiming_uniform relu fan_in");
    expect_uniform(init::kaiming_uniform_(t, 0.0, init::FanMode::FanOut, init::Nonlinearity::ReLU, &g),
                   std::sqrt(2.0) * std::sqrt(3.0 / 800), "kaiming_uniform relu fan_out");
    expect_moments(init::kaiming_normal_(t, 0.0, init::FanMode::FanIn, init::Nonlinearity::ReLU, &g), 0.0,
                   std::sqrt(2.0 / 200), "kaiming_normal relu");
    expect_moments(init::kaiming_normal_(t, 0.2, init::FanMode::FanOut, init::Nonlinearity::LeakyReLU, &g), 0.0,
                   std::sqrt(2.0 / 1.04) / std::sqrt(800.0), "kaiming_normal leaky fan_out");
    expect_uniform(init::xavier_uniform_(t, 2.0, &g), 2.0 * std::sqrt(6.0 / 1000), "xavier_uniform");
    expect_moments(init::xavier_normal_(t, 1.0, &g), 0.0, std::sqrt(2.0 / 1000), "xavier_normal");
    expect_uniform(init::uniform_(t, -3, 3, &g), 3.0, "uniform");
    Moments m = moments(init::uniform_(t, 1, 2, &g));
    EXPECT_GE(m.min, 1.0);
    EXPECT_LE(m.max, 2.0);
    EXPECT_NEAR(m.mean, 1.5, 4 * (1 / std::sqrt(12.0)) / std::sqrt(n));
    expect_moments(init::normal_(t, 3.0, 0.5, &g), 3.0, 0.5, "normal");
    EXPECT_TRUE(all_close(values(init::zeros_(t)), std::vector<double>(40000, 0.0), 0, 0));
    EXPECT_TRUE(all_close(values(init::ones_(t)), std::vector<double>(40000, 1.0), 0, 0));
    EXPECT_TRUE(all_close(values(init::constant_(t, -2.5)), std::vector<double>(40000, -2.5), 0, 0));
  }
}

TEST(Init, WritesInPlaceThroughViewsAndIsReproducible) {
  Tensor base = zeros({4, 6});
  Tensor view = base.slice(1, 0, 6, 2);  // every other column
  Generator g1(5), g2(5);
  init::uniform_(view, 1, 2, &g1);
  std::vector<double> v = values(base);
  for (int64_t i = 0; i < 24; ++i) {
    if (i % 2) EXPECT_EQ(v[static_cast<size_t>(i)], 0.0) << i;
    else EXPECT_GE(v[static_cast<size_t>(i)], 1.0) << i;
  }
  Tensor again = zeros({4, 3});
  init::uniform_(again, 1, 2, &g2);
  EXPECT_TRUE(all_close(values(view), values(again), 0, 0));
  // Empty tensors are left alone (PyTorch: a no-op), even where fans would be 0.
  Tensor empty_t = zeros({0, 3});
  init::kaiming_uniform_(empty_t);
  init::xavier_normal_(empty_t);
  expect_error([] { init::normal_(zeros({2}, DType::Int64)); }, {"normal_", "floating", "int64"});
  expect_error([] { init::uniform_(zeros({2}), 2, 1); }, {"uniform_", "lower bound"});
}

TEST(Init, LinearDefaultIsPyTorchs) {
  Generator g(3);
  Linear lin(400, 100, true, DType::Float64, &g);
  const double bound = 1.0 / std::sqrt(400.0);
  Moments w = moments(lin.weight.data());
  EXPECT_GE(w.min, -bound);
  EXPECT_LE(w.max, bound);
  EXPECT_NEAR(w.std, bound / std::sqrt(3.0), 0.02 * bound);
  Moments b = moments(lin.bias.data());
  EXPECT_GE(b.min, -bound);
  EXPECT_LE(b.max, bound);
  EXPECT_GT(b.max - b.min, bound);  // 100 draws spread over the range
  EXPECT_EQ(lin.weight.dtype(), DType::Float64);
  // The same generator state gives the same layer.
  Generator g2(3);
  Linear again(400, 100, true, DType::Float64, &g2);
  EXPECT_TRUE(all_close(values(again.weight.data()), values(lin.weight.data()), 0, 0));
}

}  // namespace
}  // namespace wick::test
