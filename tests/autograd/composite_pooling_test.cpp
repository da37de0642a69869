// The pooling and resampling composites (composite_pooling.cpp) against loop references
// over the last 1-3 dims, written from PyTorch's definitions (output sizes, padding, ceil
// mode, divisors, nearest and linear source indices), and their gradcheck cases.
#include "tests/autograd/cases.h"

#include <cmath>

#include <wick/autograd/composites.h>

namespace wick::test {
namespace {

struct PoolSpec {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = d * (k - 1) + 1;
  const double exact = static_cast<double>(in + 2 * p - span) / static_cast<double>(s);
  int64_t o = static_cast<int64_t>(ceil_mode ? std::ceil(exact) : std::floor(exact)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

enum class Kind { Max, Avg };

// Pools the last spec.kernel.size() dims of row-major `x`. Avg divides by the count of
// real elements (cip false), by the window clipped to the padded input (cip true), or by
// `divisor` when given.
std::vector<double> ref_pool(const std::vector<double>& x, const Shape& shape, const PoolSpec& ps, Kind kind,
                             bool cip, std::optional<int64_t> divisor, Shape* out_shape) {
  const size_t k = ps.kernel.size(), lead = shape.size() - k;
  int64_t outer = 1;
  for (size_t i = 0; i < lead; ++i) outer *= shape[i];
  std::vector<int64_t> in(shape.begin() + static_cast<std::ptrdiff_t>(lead), shape.end()), out(k);
  *out_shape = Shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(lead));
  int64_t out_n = 1, in_n = 1, win_n = 1;
  for (size_t i = 0; i < k; ++i) {
    out[i] = pooled_size(in[i], ps.kernel[i], ps.stride[i], ps.padding[i], ps.dilation[i], ps.ceil_mode);
    out_shape->push_back(out[i]);
    out_n *= out[i];
    in_n *= in[i];
    win_n *= ps.kernel[i];
  }
  std::vector<double> y;
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t o = 0; o < out_n; ++o) {
      std::vector<int64_t> oi(k);
      for (int64_t r = o, i = static_cast<int64_t>(k) - 1; i >= 0; --i) oi[i] = r % out[i], r /= out[i];
      double best = -INFINITY, sum = 0;
      int64_t real = 0;
      double clipped = 1;
      for (size_t i = 0; i < k; ++i) {
        const int64_t start = oi[i] * ps.stride[i] - ps.padding[i];
        clipped *= static_cast<double>(std::min(start + ps.kernel[i], in[i] + ps.padding[i]) - start);
      }
      for (int64_t w = 0; w < win_n; ++w) {
        int64_t flat = 0;
        bool inside = true;
        for (int64_t r = w, i = static_cast<int64_t>(k) - 1; i >= 0; --i) {
          const int64_t kk = r % ps.kernel[i];
          r /= ps.kernel[i];
          const int64_t pos = oi[i] * ps.stride[i] - ps.padding[i] + kk * ps.dilation[i];
          inside = inside && pos >= 0 && pos < in[i];
        }
        if (!inside) continue;
        for (int64_t r = w, i = static_cast<int64_t>(k) - 1, mul = 1; i >= 0; --i) {
          const int64_t kk = r % ps.kernel[i];
          r /= ps.kernel[i];
          flat += (oi[i] * ps.stride[i] - ps.padding[i] + kk * ps.dilation[i]) * mul;
          mul *= in[i];
        }
        const double v = x[b * in_n + flat];
        best = std::isnan(v) || v > best ? v : best;
        sum += v;
        ++real;
      }
      if (kind == Kind::Max) y.push_back(best);
      else y.push_back(sum / (divisor ? static_cast<double>(*divisor) : cip ? clipped : static_cast<double>(real)));
    }
  return y;
}

TEST(CompositePooling, OneDimensional) {
  Tensor x = random({2, 3, 11}, DType::Float64, 1);
  for (const PoolSpec& ps : {PoolSpec{{3}, {2}, {1}, {1}}, PoolSpec{{2}, {3}, {0}, {2}, true},
                             PoolSpec{{4}, {1}, {2}, {1}}}) {
    Shape os;
    std::vector<double> r = ref_pool(values(x), x.shape(), ps, Kind::Max, false, {}, &os);
    auto [y, idx] = max_pool1d(with_layout(x, Layout::Transposed), ps.kernel[0], ps.stride[0], ps.padding[0],
                               ps.dilation[0], ps.ceil_mode);
    EXPECT_TRUE(matches(y, os, DType::Float64, r, 0, 0)) << ps.kernel[0];
    // The indices point at the maxima along L.
    EXPECT_TRUE(all_close(values(gather(x, 2, idx)), r, 0, 0));
    EXPECT_TRUE(matches(max_pool1d(Variable(x.select(0, 0)), ps.kernel[0], ps.stride[0], ps.padding[0], ps.dilation[0],
                                   ps.ceil_mode).data(),
                        {os[1], os[2]}, DType::Float64, std::vector<double>(r.begin(), r.begin() + os[1] * os[2]), 0, 0));
    if (ps.dilation[0] == 1)
      for (bool cip : {true, false}) {
        std::vector<double> a = ref_pool(values(x), x.shape(), ps, Kind::Avg, cip, {}, &os);
        EXPECT_TRUE(matches(avg_pool1d(x, ps.kernel[0], ps.stride[0], ps.padding[0], ps.ceil_mode, cip), os,
                            DType::Float64, a, 1e-12, 1e-12));
      }
  }
  Tensor a = adaptive_avg_pool1d(x, 4);
  EXPECT_TRUE(all_close(values(a), values(adaptive_avg_pool2d(x.unsqueeze(2), {1, 4}).squeeze(2)), 0, 0));
  expect_error([&] { max_pool1d(zeros({2, 3, 4, 5}), 2); }, {"max_pool1d", "2-d or 3-d", "[2, 3, 4, 5]"});
}

TEST(CompositePooling, ThreeDimensionalIsSeparable) {
  Tensor x = random({2, 2, 5, 6, 7}, DType::Float64, 2);
  for (const PoolSpec& ps : {PoolSpec{{2, 3, 2}, {2, 2, 1}, {1, 1, 0}, {1, 1, 2}},
                             PoolSpec{{3, 2, 3}, {2, 3, 2}, {0, 1, 1}, {1, 1, 1}, true}}) {
    const Size3 k(ps.kernel[0], ps.kernel[1], ps.kernel[2]), s(ps.stride[0], ps.stride[1], ps.stride[2]),
        p(ps.padding[0], ps.padding[1], ps.padding[2]), d(ps.dilation[0], ps.dilation[1], ps.dilation[2]);
    Shape os;
    std::vector<double> r = ref_pool(values(x), x.shape(), ps, Kind::Max, false, {}, &os);
    EXPECT_TRUE(matches(max_pool3d(with_layout(x, Layout::Sliced), k, s, p, d, ps.ceil_mode), os, DType::Float64, r,
                        0, 0));
    if (ps.dilation[2] != 1) continue;
    for (bool cip : {true, false}) {
      std::vector<double> a = ref_pool(values(x), x.shape(), ps, Kind::Avg, cip, {}, &os);
      EXPECT_TRUE(matches(avg_pool3d(x, k, s, p, ps.ceil_mode, cip), os, DType::Float64, a, 1e-12, 1e-12)) << cip;
    }
    std::vector<double> o = ref_pool(values(x), x.shape(), ps, Kind::Avg, true, 5, &os);
    EXPECT_TRUE(matches(avg_pool3d(x, k, s, p, ps.ceil_mode, false, 5), os, DType::Float64, o, 1e-12, 1e-12));
  }
  // Unbatched input.
  EXPECT_EQ(max_pool3d(zeros({2, 4, 4, 4}), 2).shape(), (Shape{2, 2, 2, 2}));
  expect_error([&] { avg_pool3d(zeros({4, 4, 4}), 2); }, {"avg_pool3d", "4-d or 5-d", "[4, 4, 4]"});
}

// max_pool3d's result depends on the values only, not on the layout: an unbatched input
// whose strides are a 4-d tensor's channels-last (PyTorch's CPU kernel refuses that layout,
// "Unsupported memory format"; decided in issue 48, README) pools as its contiguous copy.
TEST(CompositePooling, MaxPool3dOfAChannelsLastUnbatchedInputEqualsTheContiguousOne) {
  const Tensor x = random({5, 6, 7, 3}, DType::Float64, 4).permute({3, 0, 1, 2});  // [C, D, H, W], C innermost
  ASSERT_EQ(x.stride(0), 1);
  EXPECT_TRUE(all_close(values(max_pool3d(x, 2, 1, 1)), values(max_pool3d(x.contiguous(), 2, 1, 1)), 0, 0));
  Variable a(x, true), b(x.contiguous(), true);
  sum(max_pool3d(a, {2, 3, 2})).backward();
  sum(max_pool3d(b, {2, 3, 2})).backward();
  EXPECT_TRUE(all_close(values(a.grad().data()), values(b.grad().data()), 0, 0));
}

TEST(CompositePooling, AvgPool3dRefusesAnInputSmallerThanTheKernel) {
  // PyTorch's avg_pool3d checks the unpadded input against the kernel in every dim, even
  // where padding or ceil_mode would leave a window; max_pool3d and the 2-d pools do not.
  Tensor x = random({1, 1, 2, 4, 4}, DType::Float64, 4);
  expect_error([&] { avg_pool3d(x, {3, 2, 2}, std::nullopt, 0, /*ceil_mode=*/true); },
               {"avg_pool3d", "[1, 1, 2, 4, 4]", "D 2", "smaller than the kernel (3, 2, 2)"});
  expect_error([&] { avg_pool3d(x, {3, 2, 2}, std::nullopt, {1, 0, 0}); }, {"avg_pool3d", "smaller than the kernel"});
  expect_error([&] { avg_pool3d(Variable(x.select(0, 0)), {2, 5, 2}, std::nullopt, {0, 2, 0}); },
               {"avg_pool3d", "H 4", "smaller than the kernel (2, 5, 2)"});
  EXPECT_EQ(avg_pool3d(x, {2, 4, 4}).shape(), (Shape{1, 1, 1, 1, 1}));  // equal is enough
  EXPECT_EQ(max_pool3d(x, {3, 2, 2}, std::nullopt, 0, 1, true).shape(), (Shape{1, 1, 1, 2, 2}));
}

TEST(CompositePooling, AdaptiveAvgPoolToSizeZero) {
  // An output size of 0 gives an empty result and a zero gradient, as PyTorch.
  Tensor x = random({2, 3, 5}, DType::Float64, 8);
  EXPECT_EQ(adaptive_avg_pool1d(x, 0).shape(), (Shape{2, 3, 0}));
  EXPECT_EQ(adaptive_avg_pool1d(x.select(0, 1), 0).shape(), (Shape{3, 0}));
  EXPECT_EQ(adaptive_avg_pool2d(x.unsqueeze(0), {0, 2}).shape(), (Shape{1, 2, 0, 2}));
  EXPECT_EQ(adaptive_avg_pool2d(x, {4, 0}).shape(), (Shape{2, 4, 0}));
  Variable xv(x, true);
  sum(adaptive_avg_pool1d(xv, 0)).backward();
  EXPECT_TRUE(matches(xv.grad().data(), {2, 3, 5}, DType::Float64, std::vector<double>(30, 0.0)));
  expect_error([&] { adaptive_avg_pool1d(x, -1); }, {"adaptive_avg_pool1d", "non-negative", "-1", "[2, 3, 5]"});
}

TEST(CompositePooling, AvgPool2dDivisorOverride) {
  Tensor x = random({2, 3, 7, 6}, DType::Float64, 3);
  for (const PoolSpec& ps : {PoolSpec{{3, 2}, {2, 2}, {1, 1}, {1, 1}}, PoolSpec{{3, 3}, {2, 2}, {1, 0}, {1, 1}, true}}) {
    Shape os;
    std::vector<double> r = ref_pool(values(x), x.shape(), ps, Kind::Avg, true, 4, &os);
    EXPECT_TRUE(matches(avg_pool2d(x, Size2(ps.kernel[0], ps.kernel[1]), Size2(ps.stride[0], ps.stride[1]),
                                   Size2(ps.padding[0], ps.padding[1]), ps.ceil_mode, false, 4),
                        os, DType::Float64, r, 1e-12, 1e-12));
  }
  expect_error([&] { avg_pool2d(x, 2, 2, 0, false, true, 0); }, {"divisor_override", "0"});
}

TEST(CompositePooling, AdaptiveMaxPool2d) {
  Tensor x = random({2, 3, 7, 5}, DType::Float64, 4);
  const std::vector<double> v = values(x);
  const int64_t H = 7, W = 5, Ho = 3, Wo = 4;
  std::vector<double> ry, ri;
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        const int64_t r0 = i * H / Ho, r1 = ((i + 1) * H + Ho - 1) / Ho;
        const int64_t c0 = j * W / Wo, c1 = ((j + 1) * W + Wo - 1) / Wo;
        double best = -INFINITY;
        int64_t at = -1;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c)
            if (v[p * H * W + r * W + c] > best) best = v[p * H * W + r * W + c], at = r * W + c;
        ry.push_back(best);
        ri.push_back(static_cast<double>(at));
      }
  auto [y, idx] = adaptive_max_pool2d(with_layout(x, Layout::Transposed), {Ho, Wo});
  EXPECT_TRUE(matches(y, {2, 3, Ho, Wo}, DType::Float64, ry, 0, 0));
  EXPECT_TRUE(matches(idx, {2, 3, Ho, Wo}, DType::Int64, ri, 0, 0));
  // Ties: the first in row-major order, as PyTorch.
  auto [ty, ti] = adaptive_max_pool2d(zeros({1, 2, 2}), {1, 1});
  EXPECT_TRUE(matches(ti, {1, 1, 1}, DType::Int64, {0}));
  EXPECT_TRUE(matches(adaptive_max_pool2d(Variable(x), {Ho, Wo}).data(), {2, 3, Ho, Wo}, DType::Float64, ry, 0, 0));
  expect_error([&] { adaptive_max_pool2d(x, {0, 2}); }, {"adaptive_max_pool2d", "non-empty"});
}

// PyTorch's nearest index: floor(o * scale) in float, scale = in / out or 1 / factor.
int64_t nearest_source(int64_t o, int64_t in, int64_t out, std::optional<double> factor) {
  if (out == in) return o;
  if (out == 2 * in) return o / 2;
  const float scale = factor ? static_cast<float>(1.0 / *factor) : static_cast<float>(in) / static_cast<float>(out);
  return std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
}

TEST(CompositeResampling, NearestSizesAndFactors) {
  Tensor x = random({1, 2, 5, 4}, DType::Float64, 5);
  const std::vector<double> v = values(x);
  struct Case {
    int64_t ho, wo;
    std::vector<double> factors;
  };
  for (const Case& c : {Case{7, 3, {}}, Case{10, 8, {}}, Case{2, 4, {}}, Case{7, 6, {1.5, 1.5}}, Case{2, 1, {0.5, 0.3}}}) {
    std::vector<double> r;
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t i = 0; i < c.ho; ++i)
        for (int64_t j = 0; j < c.wo; ++j) {
          const auto f = [&](size_t k) { return c.factors.empty() ? std::nullopt : std::optional<double>(c.factors[k]); };
          r.push_back(v[p * 20 + nearest_source(i, 5, c.ho, f(0)) * 4 + nearest_source(j, 4, c.wo, f(1))]);
        }
    Tensor y = c.factors.empty() ? interpolate(x, Shape{c.ho, c.wo}) : interpolate(x, c.factors);
    EXPECT_TRUE(matches(y, {1, 2, c.ho, c.wo}, DType::Float64, r, 0, 0)) << c.ho << "x" << c.wo;
  }
  expect_error([&] { interpolate(x, Shape{3}); }, {"interpolate", "1 sizes", "2 spatial"});
  expect_error([&] { interpolate(x, Shape{3, 3}, InterpolateMode::Nearest, false); }, {"interpolate", "align_corners"});
  expect_error([&] { interpolate(zeros({3, 4}), Shape{3}); }, {"interpolate", "3-d, 4-d or 5-d"});
  // A finite factor whose output size does not fit int64 (converting it was undefined).
  expect_error([&] { interpolate(x, std::vector<double>{1e300, 1.0}); },
               {"interpolate", "scale factor 1e+300", "more than int64 can count"});
}

TEST(CompositeResampling, BilinearAgainstTheFourPointFormula) {
  Tensor x = random({2, 1, 4, 5}, DType::Float64, 6);
  const std::vector<double> v = values(x);
  for (bool align : {false, true})
    for (auto [ho, wo] : {std::pair<int64_t, int64_t>{7, 3}, {4, 5}, {1, 9}}) {
      auto source = [&](int64_t o, int64_t in, int64_t out) {
        if (align) return out > 1 ? static_cast<double>(o) * (in - 1) / (out - 1) : 0.0;
        return std::max(0.0, (o + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5);
      };
      std::vector<double> r;
      for (int64_t p = 0; p < 2; ++p)
        for (int64_t i = 0; i < ho; ++i)
          for (int64_t j = 0; j < wo; ++j) {
            const double sh = source(i, 4, ho), sw = source(j, 5, wo);
            const int64_t h0 = static_cast<int64_t>(sh), w0 = static_cast<int64_t>(sw);
            const int64_t h1 = std::min<int64_t>(h0 + 1, 3), w1 = std::min<int64_t>(w0 + 1, 4);
            const double lh = sh - h0, lw = sw - w0;
            auto at = [&](int64_t h, int64_t w) { return v[p * 20 + h * 5 + w]; };
            r.push_back((1 - lh) * ((1 - lw) * at(h0, w0) + lw * at(h0, w1)) + lh * ((1 - lw) * at(h1, w0) + lw * at(h1, w1)));
          }
      EXPECT_TRUE(matches(interpolate(x, Shape{ho, wo}, InterpolateMode::Linear, align), {2, 1, ho, wo},
                          DType::Float64, r, 1e-13, 1e-13))
          << ho << "x" << wo << " align " << align;
    }
}

TEST(CompositeResampling, TrilinearWithAlignedCornersIsExactOnLinearFunctions) {
  // f(d, h, w) = 2d - 3h + 0.5w is reproduced at the aligned source coordinates.
  Tensor x = empty({1, 1, 3, 4, 5}, DType::Float64);
  double* p = static_cast<double*>(x.data_ptr());
  for (int64_t d = 0; d < 3; ++d)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t w = 0; w < 5; ++w) p[(d * 4 + h) * 5 + w] = 2.0 * d - 3.0 * h + 0.5 * w;
  std::vector<double> r;
  for (int64_t d = 0; d < 5; ++d)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t w = 0; w < 9; ++w) r.push_back(2.0 * d * 2 / 4 - 3.0 * h * 3 / 1 + 0.5 * w * 4 / 8);
  EXPECT_TRUE(matches(interpolate(x, Shape{5, 2, 9}, InterpolateMode::Linear, true), {1, 1, 5, 2, 9}, DType::Float64,
                      r, 1e-12, 1e-12));
  // Linear on [N, C, L], in float32.
  Tensor l = tensor<float>({0, 10, 20}, {1, 1, 3});
  EXPECT_TRUE(matches(interpolate(l, std::vector<double>{2.0}, InterpolateMode::Linear), {1, 1, 6}, DType::Float32,
                      {0, 2.5, 7.5, 12.5, 17.5, 20}));
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(pooling_composites) {
  using namespace wick;
  return {
      {"max_pool1d", [](auto& v) { return max_pool1d(v[0], 3, 2, 1); }, {{2, 2, 9}}},
      {"avg_pool1d ceil exclude pad", [](auto& v) { return avg_pool1d(v[0], 3, 2, 1, true, false); }, {{2, 8}}},
      {"adaptive_avg_pool1d", [](auto& v) { return adaptive_avg_pool1d(v[0], 3); }, {{1, 2, 7}}},
      {"max_pool3d", [](auto& v) { return max_pool3d(v[0], {2, 2, 3}, Size3{1, 2, 2}, Size3{1, 1, 1}); },
       {{1, 2, 3, 4, 5}}},
      {"avg_pool3d divisor", [](auto& v) { return avg_pool3d(v[0], 2, 2, 1, true, true, 3); }, {{1, 3, 3, 4}}},
      {"avg_pool2d divisor", [](auto& v) { return avg_pool2d(v[0], Size2(2), Size2(1), Size2(1), false, true, 3); },
       {{1, 2, 3, 3}}},
      {"adaptive_max_pool2d", [](auto& v) { return adaptive_max_pool2d(v[0], {2, 3}); }, {{1, 2, 5, 4}}},
      {"interpolate nearest", [](auto& v) { return interpolate(v[0], Shape{5, 3}); }, {{1, 2, 3, 4}}},
      {"interpolate bilinear", [](auto& v) { return interpolate(v[0], Shape{5, 3}, InterpolateMode::Linear); },
       {{1, 2, 3, 4}}},
      {"interpolate trilinear aligned",
       [](auto& v) { return interpolate(v[0], std::vector<double>{1.5, 2.0, 0.5}, InterpolateMode::Linear, true); },
       {{1, 1, 2, 3, 4}}},
  };
}
