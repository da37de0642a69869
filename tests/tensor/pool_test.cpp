// max_pool2d, avg_pool2d, adaptive_avg_pool2d and their gradients against float64
// references computed by direct loops over each window.
#include <cmath>
#include <limits>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct Window {
  Size2 kernel, stride, padding, dilation = 1;
  bool ceil_mode = false;
};

// PyTorch's pooling output size: floor or ceil of the window count, dropping a last window
// that would start in the right padding.
int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double exact = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t o = static_cast<int64_t>(ceil_mode ? std::ceil(exact) : std::floor(exact)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

struct PoolRef {
  Shape shape;
  std::vector<double> y, idx, gx;  // gx: the input gradient for the output gradient `go`
};

// Max pooling over [N, C, H, W] values: the first maximum of each window, NaN beating numbers.
PoolRef ref_max_pool(const std::vector<double>& x, const Shape& xs, const Window& w, const std::vector<double>& go) {
  const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
  const int64_t ho = pooled(H, w.kernel.h, w.stride.h, w.padding.h, w.dilation.h, w.ceil_mode);
  const int64_t wo = pooled(W, w.kernel.w, w.stride.w, w.padding.w, w.dilation.w, w.ceil_mode);
  PoolRef r{{xs[0], xs[1], ho, wo}, {}, {}, std::vector<double>(x.size(), 0.0)};
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < ho; ++oh)
      for (int64_t ow = 0; ow < wo; ++ow) {
        int64_t best = -1;
        for (int64_t kh = 0; kh < w.kernel.h; ++kh)
          for (int64_t kw = 0; kw < w.kernel.w; ++kw) {
            const int64_t ih = oh * w.stride.h - w.padding.h + kh * w.dilation.h;
            const int64_t iw = ow * w.stride.w - w.padding.w + kw * w.dilation.w;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const int64_t i = ih * W + iw;
            const double v = x[p * H * W + i];
            if (best < 0) best = i;
            const double b = x[p * H * W + best];
            if (!std::isnan(b) && (std::isnan(v) || v > b)) best = i;
          }
        r.y.push_back(x[p * H * W + best]);
        r.idx.push_back(static_cast<double>(best));
        if (!go.empty()) r.gx[p * H * W + best] += go[(p * ho + oh) * wo + ow];
      }
  return r;
}

PoolRef ref_avg_pool(const std::vector<double>& x, const Shape& xs, const Window& w, bool count_include_pad,
                 const std::vector<double>& go) {
  const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
  const int64_t ho = pooled(H, w.kernel.h, w.stride.h, w.padding.h, 1, w.ceil_mode);
  const int64_t wo = pooled(W, w.kernel.w, w.stride.w, w.padding.w, 1, w.ceil_mode);
  PoolRef r{{xs[0], xs[1], ho, wo}, {}, {}, std::vector<double>(x.size(), 0.0)};
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < ho; ++oh)
      for (int64_t ow = 0; ow < wo; ++ow) {
        double s = 0;
        int64_t real = 0, padded = 0;
        for (int64_t kh = 0; kh < w.kernel.h; ++kh)
          for (int64_t kw = 0; kw < w.kernel.w; ++kw) {
            const int64_t ih = oh * w.stride.h - w.padding.h + kh, iw = ow * w.stride.w - w.padding.w + kw;
            // Taps past the right/bottom padding (ceil_mode) count for neither divisor.
            if (ih >= H + w.padding.h || iw >= W + w.padding.w) continue;
            ++padded;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            ++real;
            s += x[(p * H + ih) * W + iw];
          }
        const double div = static_cast<double>(count_include_pad ? padded : real);
        r.y.push_back(s / div);
        if (go.empty()) continue;
        for (int64_t ih = std::max<int64_t>(0, oh * w.stride.h - w.padding.h);
             ih < std::min(H, oh * w.stride.h - w.padding.h + w.kernel.h); ++ih)
          for (int64_t iw = std::max<int64_t>(0, ow * w.stride.w - w.padding.w);
               iw < std::min(W, ow * w.stride.w - w.padding.w + w.kernel.w); ++iw)
            r.gx[(p * H + ih) * W + iw] += go[(p * ho + oh) * wo + ow] / div;
      }
  return r;
}

PoolRef ref_adaptive(const std::vector<double>& x, const Shape& xs, int64_t ho, int64_t wo, const std::vector<double>& go) {
  const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
  PoolRef r{{xs[0], xs[1], ho, wo}, {}, {}, std::vector<double>(x.size(), 0.0)};
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < ho; ++oh)
      for (int64_t ow = 0; ow < wo; ++ow) {
        const auto h0 = static_cast<int64_t>(std::floor(double(oh) * H / ho));
        const auto h1 = static_cast<int64_t>(std::ceil(double(oh + 1) * H / ho));
        const auto w0 = static_cast<int64_t>(std::floor(double(ow) * W / wo));
        const auto w1 = static_cast<int64_t>(std::ceil(double(ow + 1) * W / wo));
        const double n = static_cast<double>((h1 - h0) * (w1 - w0));
        double s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) {
            s += x[(p * H + ih) * W + iw];
            if (!go.empty()) r.gx[(p * H + ih) * W + iw] += go[(p * ho + oh) * wo + ow] / n;
          }
        r.y.push_back(s / n);
      }
  return r;
}

const std::vector<std::pair<Shape, Window>> kWindows = {
    {{2, 3, 6, 7}, {2, 2, 0}},
    {{1, 2, 7, 7}, {3, 2, 1}},
    {{2, 2, 8, 9}, {{3, 2}, {2, 3}, {1, 1}}},
    {{1, 3, 7, 6}, {3, 2, 1, 1, true}},
    {{2, 1, 5, 5}, {2, 2, 0, 1, true}},
    {{1, 2, 9, 8}, {{3, 2}, 1, {1, 0}, {2, 3}}},
    {{1, 1, 4, 4}, {1, 1, 0}},
    // ceil_mode with a window larger than the input (PyTorch gives one overhanging window).
    {{1, 2, 2, 3}, {3, 2, 0, 1, true}},
    {{2, 1, 3, 2}, {{4, 3}, {1, 2}, {1, 0}, 1, true}},
};

double tol(DType t) { return t == DType::Float32 ? 1e-6 : t == DType::Float64 ? 1e-12 : 1e-2; }

TEST(MaxPool2d, ValuesIndicesAndGradient) {
  uint64_t seed = 1;
  for (const auto& [xs, w] : kWindows)
    for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
      for (Layout l : kAllLayouts) {
        Tensor x = random(xs, t, seed++);
        PoolRef r0 = ref_max_pool(values(x), xs, w, {});
        Tensor go = random(r0.shape, t, seed++);
        PoolRef r = ref_max_pool(values(x), xs, w, values(go));
        auto [y, idx] = max_pool2d(with_layout(x, l), w.kernel, w.stride, w.padding, w.dilation, w.ceil_mode);
        EXPECT_TRUE(matches(y, r.shape, t, r.y, 0, 0)) << shape_str(xs) << " " << dtype_name(t) << " " << layout_name(l);
        EXPECT_TRUE(matches(idx, r.shape, DType::Int64, r.idx)) << shape_str(xs);
        Tensor gx = max_pool2d_backward(with_layout(go, l), idx, xs);
        EXPECT_TRUE(matches(gx, xs, t, r.gx, tol(t), tol(t))) << shape_str(xs) << " " << dtype_name(t);
      }
}

TEST(MaxPool2d, NaNWinsAndUnbatched) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor<double>({1, nan, 3, 2, 5, 0, 7, 4, 5}, {1, 3, 3});
  auto [y, idx] = max_pool2d(x, 2, 1);
  EXPECT_TRUE(matches(y, {1, 2, 2}, DType::Float64, {nan, nan, 7, 5}));
  // Ties go to the first element of the window.
  EXPECT_TRUE(matches(idx, {1, 2, 2}, DType::Int64, {1, 1, 6, 4}));
  auto [e, ei] = max_pool2d(zeros({0, 2, 4, 4}), 2);
  EXPECT_EQ(e.shape(), (Shape{0, 2, 2, 2}));
}

TEST(AvgPool2d, MatchesReferenceWithAndWithoutPadCounting) {
  uint64_t seed = 500;
  for (const auto& [xs, w0] : kWindows)
    for (bool cip : {true, false})
      for (DType t : {DType::Float32, DType::Float64, DType::BFloat16})
        for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
          Window w = w0;
          w.dilation = 1;
          Tensor x = random(xs, t, seed++);
          PoolRef r0 = ref_avg_pool(values(x), xs, w, cip, {});
          Tensor go = random(r0.shape, t, seed++);
          PoolRef r = ref_avg_pool(values(x), xs, w, cip, values(go));
          Tensor y = avg_pool2d(with_layout(x, l), w.kernel, w.stride, w.padding, w.ceil_mode, cip);
          EXPECT_TRUE(matches(y, r.shape, t, r.y, tol(t), tol(t))) << shape_str(xs) << " cip " << cip;
          Tensor gx = avg_pool2d_backward(with_layout(go, l), xs, w.kernel, w.stride, w.padding, w.ceil_mode, cip);
          EXPECT_TRUE(matches(gx, xs, t, r.gx, tol(t), tol(t))) << shape_str(xs) << " cip " << cip;
        }
}

TEST(AdaptiveAvgPool2d, OverlappingAndUnevenCells) {
  uint64_t seed = 900;
  const std::vector<std::pair<Shape, Size2>> cases = {
      {{2, 3, 7, 5}, {3, 2}}, {{1, 2, 4, 4}, 1}, {{1, 1, 5, 3}, {5, 3}}, {{2, 1, 3, 4}, {4, 6}}};
  for (const auto& [xs, os] : cases)
    for (DType t : {DType::Float32, DType::Float64, DType::Float16}) {
      Tensor x = random(xs, t, seed++);
      Tensor go = random({xs[0], xs[1], os.h, os.w}, t, seed++);
      PoolRef r = ref_adaptive(values(x), xs, os.h, os.w, values(go));
      EXPECT_TRUE(matches(adaptive_avg_pool2d(with_layout(x, Layout::Sliced), os), r.shape, t, r.y, tol(t), tol(t)))
          << shape_str(xs);
      EXPECT_TRUE(matches(adaptive_avg_pool2d_backward(go, xs), xs, t, r.gx, tol(t), tol(t))) << shape_str(xs);
    }
  // Unbatched [C, H, W].
  Tensor x = random({2, 4, 6}, DType::Float64, 7);
  PoolRef r = ref_adaptive(values(x), {1, 2, 4, 6}, 2, 3, {});
  EXPECT_TRUE(matches(adaptive_avg_pool2d(x, {2, 3}), {2, 2, 3}, DType::Float64, r.y));
}

TEST(Pool2d, RejectsBadArguments) {
  Tensor x = zeros({1, 2, 4, 4});
  expect_error([&] { max_pool2d(zeros({4, 4}), 2); }, {"max_pool2d", "3-d or 4-d", "[4, 4]"});
  expect_error([&] { max_pool2d(x, 2, 2, 2); }, {"max_pool2d", "padding", "half"});
  expect_error([&] { max_pool2d(x, 5); }, {"max_pool2d", "output size would be <= 0", "[1, 2, 4, 4]", "ceil_mode"});
  EXPECT_EQ(max_pool2d(x, 5, {}, 0, 1, true).first.shape(), (Shape{1, 2, 1, 1}));  // PyTorch: one window
  expect_error([&] { max_pool2d(x, 0); }, {"max_pool2d", "kernel"});
  expect_error([&] { avg_pool2d(x.to(DType::Int64), 2); }, {"avg_pool2d", "floating", "int64"});
  expect_error([&] { avg_pool2d(x, 2, 0); }, {"avg_pool2d", "stride"});
  expect_error([&] { adaptive_avg_pool2d(x, {-1, 2}); }, {"adaptive_avg_pool2d", "non-negative", "(-1, 2)"});
  expect_error([&] { avg_pool2d_backward(zeros({1, 2, 3, 3}), x.shape(), 2); },
               {"avg_pool2d_backward", "[1, 2, 3, 3]", "[1, 2, 2, 2]"});
}

}  // namespace
}  // namespace wick::test
