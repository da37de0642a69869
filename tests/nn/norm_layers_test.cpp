// Normalisation layers against float64 references: batch statistics, running buffers, modes.
#include "tests/support/reference.h"

#include <cmath>

#include <wick/nn/norm.h>

namespace wick::test {
namespace {

// Normalises groups of x: element i belongs to group group_of(i); returns (x - mean) / sqrt(var + eps)
// with the biased variance, and each group's mean and unbiased variance.
struct RefNorm {
  std::vector<double> y, mean, unbiased_var;
};
RefNorm ref_normalize(const std::vector<double>& x, int64_t groups, const std::function<int64_t(size_t)>& group_of,
                      double eps) {
  RefNorm r;
  std::vector<double> s(static_cast<size_t>(groups)), ss(static_cast<size_t>(groups)), n(static_cast<size_t>(groups));
  for (size_t i = 0; i < x.size(); ++i) s[static_cast<size_t>(group_of(i))] += x[i], n[static_cast<size_t>(group_of(i))] += 1;
  for (int64_t g = 0; g < groups; ++g) r.mean.push_back(s[static_cast<size_t>(g)] / n[static_cast<size_t>(g)]);
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - r.mean[static_cast<size_t>(group_of(i))];
    ss[static_cast<size_t>(group_of(i))] += d * d;
  }
  for (int64_t g = 0; g < groups; ++g) r.unbiased_var.push_back(ss[static_cast<size_t>(g)] / (n[static_cast<size_t>(g)] - 1));
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t g = static_cast<size_t>(group_of(i));
    r.y.push_back((x[i] - r.mean[g]) / std::sqrt(ss[g] / n[g] + eps));
  }
  return r;
}

TEST(BatchNorm, TrainingUsesBatchStatsAndUpdatesRunningBuffers) {
  BatchNorm2d bn(3, {}, DType::Float64);
  EXPECT_EQ(bn.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  bn.weight.data().copy_(tensor<double>({1.0, 2.0, -0.5}));
  bn.bias.data().copy_(tensor<double>({0.0, 0.5, 1.0}));
  Tensor x = random({4, 3, 2, 5}, DType::Float64, 1);
  auto channel = [](size_t i) { return static_cast<int64_t>(i / 10) % 3; };
  RefNorm r = ref_normalize(values(x), 3, channel, 1e-5);
  const std::vector<double> w = {1.0, 2.0, -0.5}, b = {0.0, 0.5, 1.0};
  std::vector<double> expected;
  for (size_t i = 0; i < r.y.size(); ++i) expected.push_back(r.y[i] * w[static_cast<size_t>(channel(i))] + b[static_cast<size_t>(channel(i))]);
  EXPECT_TRUE(matches(bn(Variable(with_layout(x, Layout::Transposed))).data(), x.shape(), DType::Float64, expected,
                      1e-10, 1e-12));
  std::vector<double> rm, rv;
  for (int c = 0; c < 3; ++c) rm.push_back(0.1 * r.mean[c]), rv.push_back(0.9 + 0.1 * r.unbiased_var[c]);
  EXPECT_TRUE(matches(bn.buffer("running_mean"), {3}, DType::Float64, rm, 1e-10, 1e-12));
  EXPECT_TRUE(matches(bn.buffer("running_var"), {3}, DType::Float64, rv, 1e-10, 1e-12));
  EXPECT_EQ(bn.buffer("num_batches_tracked").item<int64_t>(), 1);

  // Eval normalises with the running statistics and leaves them alone.
  bn.eval();
  std::vector<double> xv = values(x), ev;
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t c = static_cast<size_t>(channel(i));
    ev.push_back((xv[i] - rm[c]) / std::sqrt(rv[c] + 1e-5) * w[c] + b[c]);
  }
  EXPECT_TRUE(matches(bn(Variable(x)).data(), x.shape(), DType::Float64, ev, 1e-10, 1e-12));
  EXPECT_TRUE(matches(bn.buffer("running_mean"), {3}, DType::Float64, rm, 1e-10, 1e-12));
  EXPECT_EQ(bn.buffer("num_batches_tracked").item<int64_t>(), 1);

  // The running buffers follow to(dtype), and forward keeps updating the moved ones.
  bn.train();
  bn.to(DType::Float32);
  bn(Variable(x.to(DType::Float32)));
  EXPECT_EQ(bn.buffer("running_mean").dtype(), DType::Float32);
  EXPECT_EQ(bn.buffer("num_batches_tracked").item<int64_t>(), 2);
  std::vector<double> rm2;
  for (int c = 0; c < 3; ++c) rm2.push_back(0.9 * rm[c] + 0.1 * r.mean[c]);
  EXPECT_TRUE(matches(bn.buffer("running_mean"), {3}, DType::Float32, rm2, 1e-5, 1e-6));

  expect_error([&] { bn(Variable(zeros({4, 3, 5}))); }, {"BatchNorm2d", "[4, 3, 5]", "number of dims"});
  expect_error([&] { bn(Variable(zeros({4, 2, 5, 5}))); }, {"BatchNorm2d", "2 channels", "num_features=3"});
}

TEST(BatchNorm, OneDWithoutAffineOrRunningStats) {
  BatchNormOptions o;
  o.affine = false;
  o.track_running_stats = false;
  BatchNorm1d bn(4, o, DType::Float64);
  EXPECT_TRUE(bn.state_dict().empty());
  Tensor x = random({6, 4}, DType::Float64, 2);
  RefNorm r = ref_normalize(values(x), 4, [](size_t i) { return static_cast<int64_t>(i % 4); }, 1e-5);
  EXPECT_TRUE(matches(bn(Variable(x)).data(), {6, 4}, DType::Float64, r.y, 1e-10, 1e-12));
  bn.eval();  // no running statistics: still the batch's
  EXPECT_TRUE(matches(bn(Variable(x)).data(), {6, 4}, DType::Float64, r.y, 1e-10, 1e-12));
  Tensor x3 = random({2, 4, 3}, DType::Float64, 3);
  RefNorm r3 = ref_normalize(values(x3), 4, [](size_t i) { return static_cast<int64_t>(i / 3) % 4; }, 1e-5);
  EXPECT_TRUE(matches(bn(Variable(x3)).data(), {2, 4, 3}, DType::Float64, r3.y, 1e-10, 1e-12));
}

TEST(LayerNorm, NormalisesTheTrailingDims) {
  LayerNorm ln({3, 4}, 1e-5, true, true, DType::Float64);
  EXPECT_EQ(ln.weight.shape(), (Shape{3, 4}));
  ln.weight.data().copy_(random({3, 4}, DType::Float64, 4));
  ln.bias.data().copy_(random({3, 4}, DType::Float64, 5));
  Tensor x = random({2, 3, 4}, DType::Float64, 6);
  RefNorm r = ref_normalize(values(x), 2, [](size_t i) { return static_cast<int64_t>(i / 12); }, 1e-5);
  std::vector<double> w = values(ln.weight.data()), b = values(ln.bias.data()), expected;
  for (size_t i = 0; i < r.y.size(); ++i) expected.push_back(r.y[i] * w[i % 12] + b[i % 12]);
  EXPECT_TRUE(matches(ln(Variable(with_layout(x, Layout::Sliced))).data(), {2, 3, 4}, DType::Float64, expected, 1e-10,
                      1e-12));
  LayerNorm plain({4}, 1e-5, false);
  EXPECT_TRUE(plain.named_parameters().empty());
}

TEST(GroupNorm, NormalisesChannelGroupsPerSample) {
  GroupNorm gn(2, 4, 1e-5, true, DType::Float64);
  gn.weight.data().copy_(tensor<double>({1.0, -1.0, 2.0, 0.5}));
  Tensor x = random({3, 4, 5}, DType::Float64, 7);
  // Sample n, group g = channel / 2: element i has sample i / 20 and channel (i / 5) % 4.
  RefNorm r = ref_normalize(values(x), 6, [](size_t i) { return static_cast<int64_t>(i / 20) * 2 + static_cast<int64_t>(i / 5) % 4 / 2; }, 1e-5);
  const std::vector<double> w = {1.0, -1.0, 2.0, 0.5};
  std::vector<double> expected;
  for (size_t i = 0; i < r.y.size(); ++i) expected.push_back(r.y[i] * w[(i / 5) % 4]);
  EXPECT_TRUE(matches(gn(Variable(x)).data(), {3, 4, 5}, DType::Float64, expected, 1e-10, 1e-12));
  expect_error([] { GroupNorm(3, 4); }, {"GroupNorm", "num_groups=3", "num_channels=4"});
}

}  // namespace
}  // namespace wick::test
