// BatchNorm with momentum = std::nullopt (PyTorch's momentum=None): the running statistics
// are the cumulative average of the batches' (factor 1 / num_batches_tracked), against
// float64 references computed per channel with loops.
#include "tests/support/reference.h"

#include <cmath>

#include <wick/nn/norm.h>

namespace wick::test {
namespace {

// Per-channel mean and unbiased variance of x [N, C, *] (values row-major).
void channel_stats(const Tensor& x, std::vector<double>& mean, std::vector<double>& var) {
  const std::vector<double> v = values(x);
  const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / (n * c);
  mean.assign(static_cast<size_t>(c), 0.0);
  var.assign(static_cast<size_t>(c), 0.0);
  const double count = static_cast<double>(n * inner);
  for (int64_t ch = 0; ch < c; ++ch) {
    double s = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) s += v[static_cast<size_t>((b * c + ch) * inner + i)];
    const double m = s / count;
    double ss = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        const double d = v[static_cast<size_t>((b * c + ch) * inner + i)] - m;
        ss += d * d;
      }
    mean[static_cast<size_t>(ch)] = m;
    var[static_cast<size_t>(ch)] = ss / (count - 1);
  }
}

TEST(BatchNormMomentum, NulloptIsTheCumulativeAverage) {
  BatchNormOptions o;
  o.momentum = std::nullopt;
  for (int rank : {2, 3, 4}) {
    std::shared_ptr<BatchNorm> bn;
    if (rank == 4)
      bn = std::make_shared<BatchNorm2d>(3, o, DType::Float64);
    else
      bn = std::make_shared<BatchNorm1d>(3, o, DType::Float64);
    const Shape shape = rank == 2 ? Shape{5, 3} : rank == 3 ? Shape{4, 3, 2} : Shape{2, 3, 2, 3};
    std::vector<double> sum_mean(3, 0.0), sum_var(3, 0.0);
    for (int step = 1; step <= 4; ++step) {
      Tensor x = random(shape, DType::Float64, static_cast<uint64_t>(100 * rank + step), -1, 3);
      bn->forward(Variable(x));
      std::vector<double> m, v;
      channel_stats(x, m, v);
      std::vector<double> rm, rv;
      for (size_t ch = 0; ch < 3; ++ch) {
        sum_mean[ch] += m[ch];
        sum_var[ch] += v[ch];
        rm.push_back(sum_mean[ch] / step);
        rv.push_back(sum_var[ch] / step);
      }
      const std::string what = "rank " + std::to_string(rank) + " step " + std::to_string(step);
      EXPECT_EQ(bn->buffer("num_batches_tracked").item<int64_t>(), step) << what;
      EXPECT_TRUE(matches(bn->buffer("running_mean"), {3}, DType::Float64, rm, 1e-12, 1e-12)) << what;
      EXPECT_TRUE(matches(bn->buffer("running_var"), {3}, DType::Float64, rv, 1e-12, 1e-12)) << what;
    }
    // Eval neither counts nor updates.
    bn->eval();
    std::vector<double> before = values(bn->buffer("running_mean"));
    bn->forward(Variable(random(shape, DType::Float64, 7)));
    EXPECT_EQ(bn->buffer("num_batches_tracked").item<int64_t>(), 4);
    EXPECT_TRUE(all_close(values(bn->buffer("running_mean")), before, 0, 0));
  }
}

TEST(BatchNormMomentum, NulloptContinuesFromALoadedCount) {
  BatchNormOptions o;
  o.momentum = std::nullopt;
  BatchNorm1d bn(2, o, DType::Float64);
  // As if 4 batches had been seen: the next one weighs 1 / 5.
  bn.buffer("running_mean").copy_(tensor<double>({1.0, -2.0}));
  bn.buffer("running_var").copy_(tensor<double>({0.5, 3.0}));
  bn.buffer("num_batches_tracked").fill_(Scalar(4));
  Tensor x = random({6, 2}, DType::Float64, 8);
  bn.forward(Variable(x));
  std::vector<double> m, v;
  channel_stats(x, m, v);
  EXPECT_TRUE(matches(bn.buffer("running_mean"), {2}, DType::Float64,
                      {0.8 * 1.0 + 0.2 * m[0], 0.8 * -2.0 + 0.2 * m[1]}, 1e-12, 1e-12));
  EXPECT_TRUE(matches(bn.buffer("running_var"), {2}, DType::Float64, {0.8 * 0.5 + 0.2 * v[0], 0.8 * 3.0 + 0.2 * v[1]},
                      1e-12, 1e-12));
  // A fixed momentum ignores the count; the count still goes up.
  BatchNormOptions fixed;
  fixed.momentum = 0.25;
  BatchNorm1d bf(2, fixed, DType::Float64);
  bf.buffer("num_batches_tracked").fill_(Scalar(9));
  bf.forward(Variable(x));
  EXPECT_EQ(bf.buffer("num_batches_tracked").item<int64_t>(), 10);
  EXPECT_TRUE(matches(bf.buffer("running_mean"), {2}, DType::Float64, {0.25 * m[0], 0.25 * m[1]}, 1e-12, 1e-12));
  // Without running statistics momentum is unused: batch statistics in both modes.
  BatchNormOptions untracked = o;
  untracked.track_running_stats = false;
  BatchNorm1d bu(2, untracked, DType::Float64);
  EXPECT_EQ(bu.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  bu.eval();
  std::vector<double> y = values(bu.forward(Variable(x)).data()), xv = values(x);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], (xv[i] - m[i % 2]) / std::sqrt(v[i % 2] * 5.0 / 6.0 + 1e-5), 1e-10) << i;
}

}  // namespace
}  // namespace wick::test
