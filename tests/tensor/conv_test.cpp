// conv1d, conv2d, conv_transpose2d and conv2d's gradients against float64 references
// computed by direct nested loops over every (output pixel, kernel tap) pair.
#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct ConvGeom {
  Size2 stride = 1, padding = 0, dilation = 1;
  int64_t groups = 1;
};

// The loops of a convolution with input xs [N, C, H, W], weight ws [Co, C / groups, KH, KW]
// and output [N, Co, ho, wo]: y = conv(x, w) (+ bias), and for an output gradient go,
// gx = d<go, y>/dx and gw = d<go, y>/dw.
struct RefConv {
  std::vector<double> y, gx, gw;
};
RefConv ref_conv(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w, const Shape& ws,
                 const std::vector<double>& bias, const std::vector<double>& go, int64_t ho, int64_t wo,
                 const ConvGeom& g) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Co = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t Cog = Co / g.groups;
  RefConv r;
  r.y.assign(static_cast<size_t>(N * Co * ho * wo), 0.0);
  r.gx.assign(x.size(), 0.0);
  r.gw.assign(w.size(), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Co; ++o)
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) {
          const int64_t yi = ((n * Co + o) * ho + oh) * wo + ow;
          double s = bias.empty() ? 0.0 : bias[o];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * g.stride.h - g.padding.h + kh * g.dilation.h;
                const int64_t iw = ow * g.stride.w - g.padding.w + kw * g.dilation.w;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t xi = ((n * C + (o / Cog) * Cg + c) * H + ih) * W + iw;
                const int64_t wi = ((o * Cg + c) * KH + kh) * KW + kw;
                s += x[xi] * w[wi];
                if (!go.empty()) {
                  r.gx[xi] += go[yi] * w[wi];
                  r.gw[wi] += go[yi] * x[xi];
                }
              }
          r.y[yi] = s;
        }
  return r;
}

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

struct Case {
  Shape x, w;
  ConvGeom g;
  bool bias;
};

// Stride, padding, dilation, groups (depthwise too), rectangular kernels, a 1x1 kernel, a
// batch larger than the thread count, and a kernel as large as the padded input.
const std::vector<Case> kConvCases = {
    {{2, 3, 7, 6}, {4, 3, 3, 3}, {}, true},
    {{2, 4, 8, 9}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {1, 1}, 2}, true},
    {{1, 2, 9, 9}, {3, 2, 3, 3}, {2, 1, 2, 1}, false},
    {{3, 4, 5, 5}, {4, 1, 3, 3}, {1, 1, 1, 4}, true},
    {{2, 5, 4, 6}, {3, 5, 1, 1}, {}, true},
    {{9, 2, 5, 4}, {3, 2, 2, 2}, {{1, 2}, 0, 1, 1}, false},
    {{1, 1, 3, 3}, {2, 1, 5, 5}, {1, 1, 1, 1}, true},
};

std::vector<double> bias_values(const Tensor& b) { return b.defined() ? values(b) : std::vector<double>{}; }

TEST(Conv2d, MatchesReferenceEveryLayoutAndDtype) {
  uint64_t seed = 1;
  for (const Case& c : kConvCases)
    for (DType t : {DType::Float32, DType::Float64})
      for (Layout l : kAllLayouts) {
        Tensor x = random(c.x, t, seed++), w = random(c.w, t, seed++);
        Tensor b = c.bias ? random({c.w[0]}, t, seed++) : Tensor();
        const int64_t ho = out_size(c.x[2], c.w[2], c.g.stride.h, c.g.padding.h, c.g.dilation.h);
        const int64_t wo = out_size(c.x[3], c.w[3], c.g.stride.w, c.g.padding.w, c.g.dilation.w);
        RefConv r = ref_conv(values(x), c.x, values(w), c.w, bias_values(b), {}, ho, wo, c.g);
        Tensor y = conv2d(with_layout(x, l), with_layout(w, l), b, c.g.stride, c.g.padding, c.g.dilation, c.g.groups);
        const double tol = t == DType::Float32 ? 1e-5 : 1e-12;
        EXPECT_TRUE(matches(y, {c.x[0], c.w[0], ho, wo}, t, r.y, tol, tol))
            << shape_str(c.x) << " * " << shape_str(c.w) << " " << dtype_name(t) << " " << layout_name(l);
      }
}

TEST(Conv2d, GradientsMatchReference) {
  uint64_t seed = 100;
  for (const Case& c : kConvCases)
    for (DType t : {DType::Float32, DType::Float64}) {
      const int64_t ho = out_size(c.x[2], c.w[2], c.g.stride.h, c.g.padding.h, c.g.dilation.h);
      const int64_t wo = out_size(c.x[3], c.w[3], c.g.stride.w, c.g.padding.w, c.g.dilation.w);
      Tensor x = random(c.x, t, seed++), w = random(c.w, t, seed++);
      Tensor go = random({c.x[0], c.w[0], ho, wo}, t, seed++);
      RefConv r = ref_conv(values(x), c.x, values(w), c.w, {}, values(go), ho, wo, c.g);
      const double tol = t == DType::Float32 ? 1e-4 : 1e-12;
      Tensor gx = conv2d_backward_input(with_layout(go, Layout::Transposed), w, c.x, c.g.stride, c.g.padding,
                                        c.g.dilation, c.g.groups);
      EXPECT_TRUE(matches(gx, c.x, t, r.gx, tol, tol)) << shape_str(c.x) << " " << dtype_name(t);
      Tensor gw = conv2d_backward_weight(go, with_layout(x, Layout::Sliced), c.w, c.g.stride, c.g.padding,
                                         c.g.dilation, c.g.groups);
      EXPECT_TRUE(matches(gw, c.w, t, r.gw, tol, tol)) << shape_str(c.x) << " " << dtype_name(t);
    }
}

TEST(Conv2d, HalfPrecisionRunsInFloat) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    Tensor x = random({2, 3, 5, 5}, t, 7), w = random({2, 3, 3, 3}, t, 8), b = random({2}, t, 9);
    RefConv r = ref_conv(values(x), x.shape(), values(w), w.shape(), values(b), {}, 3, 3, {});
    const double tol = t == DType::Float16 ? 2e-2 : 1e-1;
    EXPECT_TRUE(matches(conv2d(x, w, b), {2, 2, 3, 3}, t, r.y, tol, tol)) << dtype_name(t);
  }
}

TEST(Conv2d, UnbatchedAndEmpty) {
  Tensor x = random({3, 6, 5}, DType::Float64, 11), w = random({2, 3, 2, 2}, DType::Float64, 12);
  RefConv r = ref_conv(values(x), {1, 3, 6, 5}, values(w), w.shape(), {}, {}, 3, 2, {2, 0, 1, 1});
  EXPECT_TRUE(matches(conv2d(x, w, {}, 2), {2, 3, 2}, DType::Float64, r.y));

  Tensor e = zeros({0, 3, 6, 5}, DType::Float64);
  EXPECT_EQ(conv2d(e, w).shape(), (Shape{0, 2, 5, 4}));
  Tensor gw = conv2d_backward_weight(zeros({0, 2, 5, 4}, DType::Float64), e, w.shape(), 1, 0, 1, 1);
  EXPECT_TRUE(matches(gw, w.shape(), DType::Float64, std::vector<double>(24, 0.0)));
}

TEST(Conv1d, MatchesReference) {
  uint64_t seed = 200;
  for (DType t : {DType::Float32, DType::Float64}) {
    Tensor x = random({2, 4, 11}, t, seed++), w = random({6, 2, 3}, t, seed++), b = random({6}, t, seed++);
    ConvGeom g{{1, 2}, {0, 1}, {1, 2}, 2};
    const int64_t lo = out_size(11, 3, 2, 1, 2);
    RefConv r = ref_conv(values(x), {2, 4, 1, 11}, values(w), {6, 2, 1, 3}, values(b), {}, 1, lo, g);
    const double tol = t == DType::Float32 ? 1e-5 : 1e-12;
    EXPECT_TRUE(matches(conv1d(with_layout(x, Layout::Transposed), w, b, 2, 1, 2, 2), {2, 6, lo}, t, r.y, tol, tol));
    // Unbatched [C, L].
    EXPECT_TRUE(matches(conv1d(x[1], w, b, 2, 1, 2, 2), {6, lo}, t,
                        std::vector<double>(r.y.begin() + 6 * lo, r.y.end()), tol, tol));
  }
}

TEST(ConvTranspose2d, IsTheAdjointOfConv2d) {
  // conv_transpose2d(x, w) scatters x through w exactly as conv2d's input gradient does; the
  // reference is that scatter (the gx of ref_conv, with the output padding widening the result).
  struct T2 {
    Shape x, w;
    ConvGeom g;
    Size2 output_padding;
  };
  const std::vector<T2> cases = {
      {{2, 3, 4, 5}, {3, 2, 3, 3}, {}, 0},
      {{1, 4, 3, 3}, {4, 3, 3, 2}, {{2, 3}, {1, 0}, {1, 2}, 2}, {1, 2}},
      {{2, 2, 5, 4}, {2, 1, 2, 2}, {2, 0, 1, 2}, 0},
      // output_padding at least the stride but below the dilation (PyTorch accepts it).
      {{1, 2, 3, 4}, {2, 3, 2, 2}, {1, 0, {2, 3}, 1}, {1, 2}},
  };
  uint64_t seed = 300;
  for (const T2& c : cases)
    for (DType t : {DType::Float32, DType::Float64}) {
      Tensor x = random(c.x, t, seed++), w = random(c.w, t, seed++), b = random({c.w[1] * c.g.groups}, t, seed++);
      const int64_t co = c.w[1] * c.g.groups;
      const int64_t ho = (c.x[2] - 1) * c.g.stride.h - 2 * c.g.padding.h + c.g.dilation.h * (c.w[2] - 1) +
                         c.output_padding.h + 1;
      const int64_t wo = (c.x[3] - 1) * c.g.stride.w - 2 * c.g.padding.w + c.g.dilation.w * (c.w[3] - 1) +
                         c.output_padding.w + 1;
      // As a conv2d: input [N, co, ho, wo], weight w ([ci, co / groups, ...]), output x.
      RefConv r = ref_conv(std::vector<double>(c.x[0] * co * ho * wo, 0.0), {c.x[0], co, ho, wo}, values(w), c.w,
                           {}, values(x), c.x[2], c.x[3], c.g);
      std::vector<double> expected = r.gx;
      const std::vector<double> bv = values(b);
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += bv[(i / (ho * wo)) % co];
      Tensor y = conv_transpose2d(with_layout(x, Layout::Offset), w, b, c.g.stride, c.g.padding, c.output_padding,
                                  c.g.groups, c.g.dilation);
      const double tol = t == DType::Float32 ? 1e-5 : 1e-12;
      EXPECT_TRUE(matches(y, {c.x[0], co, ho, wo}, t, expected, tol, tol)) << shape_str(c.x) << " " << dtype_name(t);
    }
}

TEST(Conv2d, RejectsBadArguments) {
  Tensor x = zeros({1, 4, 5, 5}), w = zeros({2, 4, 3, 3});
  expect_error([&] { conv2d(zeros({4, 5}), w); }, {"conv2d", "3-d or 4-d", "[4, 5]"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3})); }, {"conv2d", "4-d weight", "[2, 4, 3]"});
  expect_error([&] { conv2d(x, zeros({2, 3, 3, 3})); }, {"conv2d", "[1, 4, 5, 5]", "[2, 3, 3, 3]", "channels"});
  expect_error([&] { conv2d(x, zeros({2, 4, 3, 3}), {}, 1, 0, 1, 3); }, {"conv2d", "groups (3)", "divide"});
  expect_error([&] { conv2d(x, zeros({2, 4, 7, 3})); }, {"conv2d", "output size would be <= 0", "[2, 4, 7, 3]"});
  expect_error([&] { conv2d(x, w, zeros({3})); }, {"conv2d", "bias", "[3]"});
  expect_error([&] { conv2d(x, w, {}, 0); }, {"conv2d", "stride"});
  expect_error([&] { conv2d(x, w.to(DType::Float64)); }, {"conv2d", "float32", "float64"});
  expect_error([&] { conv2d(x.to(DType::Int64), w.to(DType::Int64)); }, {"conv2d", "floating"});
  expect_error([&] { conv1d(x, w); }, {"conv1d", "2-d or 3-d", "[1, 4, 5, 5]"});
  expect_error([&] { conv1d(zeros({1, 4, 5}), zeros({2, 3, 3})); }, {"conv1d", "channels"});
  expect_error([&] { conv_transpose2d(x, zeros({3, 2, 3, 3})); }, {"conv_transpose2d", "channels", "[3, 2, 3, 3]"});
  expect_error([&] { conv_transpose2d(x, zeros({4, 2, 3, 3}), {}, 2, 0, 2); }, {"conv_transpose2d", "output_padding", "stride (2, 2)", "dilation (1, 1)"});
  expect_error([&] { conv_transpose2d(x, zeros({4, 2, 3, 3}), {}, 1, 0, 2, 1, 2); }, {"conv_transpose2d", "output_padding"});
}

}  // namespace
}  // namespace wick::test
