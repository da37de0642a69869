// Convolution and pooling layers: parameters, PyTorch's initialisation, outputs against
// direct loops.
#include "tests/support/reference.h"

#include <cmath>

#include <wick/nn/conv.h>
#include <wick/nn/pool.h>

namespace wick::test {
namespace {

// Direct conv2d in double: x [N, C, H, W], w [O, C / g, KH, KW].
std::vector<double> ref_conv2d(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                               const Shape& ws, const std::vector<double>& b, int64_t stride, int64_t pad,
                               int64_t groups, Shape& out_shape) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], o = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  const int64_t ho = (h + 2 * pad - kh) / stride + 1, wo = (wd + 2 * pad - kw) / stride + 1;
  out_shape = {n, o, ho, wo};
  std::vector<double> y;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          double s = b.empty() ? 0.0 : b[static_cast<size_t>(oc)];
          const int64_t g = oc / (o / groups);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t bb = 0; bb < kw; ++bb) {
                const int64_t r = i * stride + a - pad, q = j * stride + bb - pad;
                if (r < 0 || r >= h || q < 0 || q >= wd) continue;
                const int64_t cin = g * cg + ci;
                s += x[static_cast<size_t>(((in * c + cin) * h + r) * wd + q)] *
                     w[static_cast<size_t>(((oc * cg + ci) * kh + a) * kw + bb)];
              }
          y.push_back(s);
        }
  return y;
}

TEST(Conv2d, MatchesDirectLoopsAndInitialisesLikePyTorch) {
  Generator g(3);
  Conv2dOptions co;
  co.stride = 2;
  co.padding = 1;
  co.groups = 2;
  Conv2d conv(4, 6, 3, co, DType::Float64, &g);
  EXPECT_EQ(conv.weight.shape(), (Shape{6, 2, 3, 3}));
  EXPECT_EQ(conv.bias.shape(), (Shape{6}));
  const double bound = 1.0 / std::sqrt(18.0);  // fan_in = 2 * 3 * 3
  for (double v : values(conv.weight.data())) EXPECT_LE(std::abs(v), bound);
  for (double v : values(conv.bias.data())) EXPECT_LE(std::abs(v), bound);
  Tensor x = random({2, 4, 5, 6}, DType::Float64, 4);
  Shape out_shape;
  std::vector<double> expected = ref_conv2d(values(x), x.shape(), values(conv.weight.data()), conv.weight.shape(),
                                            values(conv.bias.data()), 2, 1, 2, out_shape);
  EXPECT_TRUE(matches(conv(Variable(with_layout(x, Layout::Transposed))).data(), out_shape, DType::Float64, expected,
                      1e-10, 1e-12));
  Conv2dOptions nb;
  nb.bias = false;
  Conv2d plain(3, 2, {2, 3}, nb);
  EXPECT_FALSE(plain.bias.defined());
  EXPECT_EQ(plain.named_parameters().size(), 1u);
  EXPECT_EQ(plain.weight.shape(), (Shape{2, 3, 2, 3}));
  Conv2dOptions bad;
  bad.groups = 3;
  expect_error([&] { Conv2d(4, 6, 3, bad); }, {"Conv2d", "groups=3", "in_channels=4"});
  expect_error([] { Conv2d(0, 6, 3); }, {"Conv2d", "in_channels=0"});
}

TEST(Conv1d, IsConv2dWithUnitHeight) {
  Conv1dOptions co;
  co.padding = 1;
  Conv1d conv(3, 4, 3, co, DType::Float64);
  EXPECT_EQ(conv.weight.shape(), (Shape{4, 3, 3}));
  Tensor x = random({2, 3, 7}, DType::Float64, 5);
  // Padding 1 on the length only: the reference input is padded by hand.
  Shape out_shape;
  Tensor xp = zeros({2, 3, 1, 9}, DType::Float64);
  xp.narrow(3, 1, 7).copy_(x.reshape({2, 3, 1, 7}));
  std::vector<double> expected = ref_conv2d(values(xp), xp.shape(), values(conv.weight.data()), {4, 3, 1, 3}, values(conv.bias.data()), 1,
                        0, 1, out_shape);
  EXPECT_TRUE(matches(conv(Variable(x)).data(), {2, 4, 7}, DType::Float64, expected, 1e-10, 1e-12));
}

TEST(ConvTranspose2d, IsTheAdjointOfConv2d) {
  // <conv_t(y), x> == <y, conv(x)> for the same weight and no bias.
  ConvTranspose2dOptions to;
  to.stride = 2;
  to.padding = 1;
  to.output_padding = 1;
  to.bias = false;
  ConvTranspose2d convt(3, 2, 3, to, DType::Float64);
  EXPECT_EQ(convt.weight.shape(), (Shape{3, 2, 3, 3}));
  // fan_in from the weight as PyTorch computes it: size(1) * k * k = 18.
  for (double v : values(convt.weight.data())) EXPECT_LE(std::abs(v), 1.0 / std::sqrt(18.0));
  Tensor y = random({1, 3, 4, 4}, DType::Float64, 6);
  Variable out = convt(Variable(y));
  ASSERT_EQ(out.shape(), (Shape{1, 2, 8, 8}));
  Tensor x = random({1, 2, 8, 8}, DType::Float64, 7);
  Shape cs;
  // conv2d of x with this weight viewed as [out=3, in=2, 3, 3]: stride 2, padding 1.
  std::vector<double> cx = ref_conv2d(values(x), x.shape(), values(convt.weight.data()), {3, 2, 3, 3}, {}, 2, 1, 1, cs);
  ASSERT_EQ(cs, (Shape{1, 3, 4, 4}));
  double lhs = 0, rhs = 0;
  std::vector<double> ov = values(out.data()), xv = values(x), yv = values(y);
  for (size_t i = 0; i < ov.size(); ++i) lhs += ov[i] * xv[i];
  for (size_t i = 0; i < yv.size(); ++i) rhs += yv[i] * cx[i];
  EXPECT_NEAR(lhs, rhs, 1e-9 * std::max(1.0, std::abs(rhs)));
}

TEST(Pooling, LayersMatchDirectLoops) {
  Tensor x = random({2, 3, 4, 6}, DType::Float32, 8);
  std::vector<double> xv = values(x);
  auto at = [&](int64_t p, int64_t i, int64_t j) { return xv[static_cast<size_t>((p * 4 + i) * 6 + j)]; };
  std::vector<double> mx, av, ad;
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        double m = -INFINITY, s = 0;
        for (int64_t a = 0; a < 2; ++a)
          for (int64_t b = 0; b < 2; ++b) m = std::max(m, at(p, 2 * i + a, 2 * j + b)), s += at(p, 2 * i + a, 2 * j + b);
        mx.push_back(m);
        av.push_back(s / 4);
      }
  // Adaptive to [1, 2]: the left and right halves of each plane.
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t half = 0; half < 2; ++half) {
      double s = 0;
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 3; ++j) s += at(p, i, half * 3 + j);
      ad.push_back(s / 12);
    }
  MaxPool2d maxp(2);
  AvgPool2d avgp(2);
  AdaptiveAvgPool2d adp({1, 2});
  for (Layout l : kAllLayouts) {
    Variable xl(with_layout(x, l));
    EXPECT_TRUE(matches(maxp(xl).data(), {2, 3, 2, 3}, DType::Float32, mx)) << layout_name(l);
    EXPECT_TRUE(matches(avgp(xl).data(), {2, 3, 2, 3}, DType::Float32, av)) << layout_name(l);
    EXPECT_TRUE(matches(adp(xl).data(), {2, 3, 1, 2}, DType::Float32, ad)) << layout_name(l);
  }
  EXPECT_TRUE(maxp.named_parameters().empty());
}

}  // namespace
}  // namespace wick::test
