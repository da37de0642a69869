// conv3d and conv_transpose1d/3d (composite_conv.cpp) against direct loops over PyTorch's
// definitions, and their gradcheck cases.
#include "tests/autograd/cases.h"

#include <cmath>

#include <wick/autograd/composites.h>

namespace wick::test {
namespace {

TEST(CompositeConv, Conv3dAgainstLoops) {
  struct Case {
    Shape x, w;
    Size3 stride, padding, dilation;
    int64_t groups;
  };
  for (const Case& c : {Case{{2, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, 1},
                        Case{{1, 4, 5, 4, 4}, {4, 2, 3, 2, 2}, {2, 1, 1}, {0, 0, 1}, {2, 1, 1}, 2}}) {
    Tensor x = random(c.x, DType::Float64, 1), w = random(c.w, DType::Float64, 2), b = random({c.w[0]}, DType::Float64, 3);
    const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
    const int64_t N = c.x[0], C = c.x[1], D = c.x[2], H = c.x[3], W = c.x[4];
    const int64_t Co = c.w[0], Cg = c.w[1], KD = c.w[2], KH = c.w[3], KW = c.w[4];
    const int64_t s[3] = {c.stride.d, c.stride.h, c.stride.w}, p[3] = {c.padding.d, c.padding.h, c.padding.w},
                  dl[3] = {c.dilation.d, c.dilation.h, c.dilation.w}, in[3] = {D, H, W}, k[3] = {KD, KH, KW};
    int64_t out[3];
    for (int i = 0; i < 3; ++i) out[i] = (in[i] + 2 * p[i] - dl[i] * (k[i] - 1) - 1) / s[i] + 1;
    std::vector<double> ref;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < Co; ++o)
        for (int64_t od = 0; od < out[0]; ++od)
          for (int64_t oh = 0; oh < out[1]; ++oh)
            for (int64_t ow = 0; ow < out[2]; ++ow) {
              double acc = bv[o];
              const int64_t g = o / (Co / c.groups);
              for (int64_t ci = 0; ci < Cg; ++ci)
                for (int64_t a = 0; a < KD; ++a)
                  for (int64_t bh = 0; bh < KH; ++bh)
                    for (int64_t bw = 0; bw < KW; ++bw) {
                      const int64_t id = od * s[0] - p[0] + a * dl[0], ih = oh * s[1] - p[1] + bh * dl[1],
                                    iw = ow * s[2] - p[2] + bw * dl[2];
                      if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                      const int64_t cin = g * Cg + ci;
                      acc += xv[(((n * C + cin) * D + id) * H + ih) * W + iw] *
                             wv[(((o * Cg + ci) * KD + a) * KH + bh) * KW + bw];
                    }
              ref.push_back(acc);
            }
    const Shape os = {N, Co, out[0], out[1], out[2]};
    EXPECT_TRUE(matches(conv3d(with_layout(x, Layout::Sliced), w, b, c.stride, c.padding, c.dilation, c.groups), os,
                        DType::Float64, ref, 1e-12, 1e-12));
    EXPECT_TRUE(matches(conv3d(Variable(x), Variable(w), Variable(b), c.stride, c.padding, c.dilation, c.groups).data(),
                        os, DType::Float64, ref, 1e-12, 1e-12));
  }
  EXPECT_EQ(conv3d(zeros({2, 3, 3, 3}), zeros({4, 2, 2, 2, 2})).shape(), (Shape{4, 2, 2, 2}));  // unbatched
  expect_error([] { conv3d(zeros({1, 2, 1, 3, 3}), zeros({4, 2, 2, 2, 2})); }, {"conv3d", "output size", "depth"});
  expect_error([] { conv3d(zeros({2, 3, 3}), zeros({4, 2, 2, 2, 2})); }, {"conv3d", "4-d or 5-d", "[2, 3, 3]"});
  expect_error([] { conv3d(zeros({1, 2, 3, 3, 3}), zeros({4, 2, 2, 2, 2}), zeros({3})); }, {"conv3d", "bias", "[3]"});
}

TEST(CompositeConv, ConvTranspose1dAgainstTheScatter) {
  Tensor x = random({2, 4, 5}, DType::Float64, 4), w = random({4, 3, 3}, DType::Float64, 5);
  const std::vector<double> xv = values(x), wv = values(w);
  const int64_t s = 2, p = 1, op = 1, d = 2, groups = 2, cg = 2, co_g = 3;  // Co = 6
  const int64_t L = (5 - 1) * s - 2 * p + d * (3 - 1) + op + 1;
  std::vector<double> ref(static_cast<size_t>(2 * 6 * L), 0.0);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t ci = 0; ci < 4; ++ci)
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t oc = 0; oc < co_g; ++oc)
          for (int64_t k = 0; k < 3; ++k) {
            const int64_t o = i * s - p + k * d;
            if (o < 0 || o >= L) continue;
            const int64_t cout = (ci / cg) * co_g + oc;
            ref[(n * 6 + cout) * L + o] += xv[(n * 4 + ci) * 5 + i] * wv[(ci * co_g + oc) * 3 + k];
          }
  EXPECT_TRUE(matches(conv_transpose1d(x, w, Tensor(), s, p, op, groups, d), {2, 6, L}, DType::Float64, ref, 1e-12,
                      1e-12));
  EXPECT_EQ(conv_transpose1d(x.select(0, 0), w, Tensor(), s, p, op, groups, d).shape(), (Shape{6, L}));
  expect_error([&] { conv_transpose1d(x, w.unsqueeze(0)); }, {"conv_transpose1d", "3-d weight"});
}

// out[n, g * Co_g + oc, i * s - p + k * d] += x[n, ci, i] * w[ci, oc, k] over the three
// spatial dims, for ci in group g; positions past the scatter (output_padding) stay 0.
TEST(CompositeConv, ConvTranspose3dAgainstTheScatter) {
  struct Case {
    Shape x, w;
    Size3 stride, padding, output_padding;
    int64_t groups;
    Size3 dilation;
  };
  for (const Case& c : {Case{{2, 2, 3, 4, 3}, {2, 3, 2, 3, 2}, {2, 1, 2}, {1, 1, 0}, {1, 0, 1}, 1, {1, 2, 1}},
                        Case{{1, 4, 2, 3, 3}, {4, 1, 3, 2, 2}, {1, 2, 1}, {2, 0, 1}, {1, 1, 0}, 2, {2, 1, 1}},
                        Case{{1, 2, 3, 2, 2}, {2, 2, 1, 1, 2}, {3, 1, 2}, {0, 0, 1}, {2, 0, 1}, 1, {1, 1, 3}}}) {
    Tensor x = random(c.x, DType::Float64, 11), w = random(c.w, DType::Float64, 12);
    const int64_t N = c.x[0], C = c.x[1], Cg = C / c.groups, Cog = c.w[1], Co = Cog * c.groups;
    Tensor b = random({Co}, DType::Float64, 13);
    const std::vector<double> xv = values(x), wv = values(w), bv = values(b);
    const int64_t in[3] = {c.x[2], c.x[3], c.x[4]}, k[3] = {c.w[2], c.w[3], c.w[4]},
                  s[3] = {c.stride.d, c.stride.h, c.stride.w}, p[3] = {c.padding.d, c.padding.h, c.padding.w},
                  op[3] = {c.output_padding.d, c.output_padding.h, c.output_padding.w},
                  dl[3] = {c.dilation.d, c.dilation.h, c.dilation.w};
    int64_t out[3];
    for (int i = 0; i < 3; ++i) out[i] = (in[i] - 1) * s[i] - 2 * p[i] + dl[i] * (k[i] - 1) + op[i] + 1;
    std::vector<double> ref(static_cast<size_t>(N * Co * out[0] * out[1] * out[2]), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < Co; ++o)
        for (int64_t e = 0; e < out[0] * out[1] * out[2]; ++e) ref[static_cast<size_t>((n * Co + o) * out[0] * out[1] * out[2] + e)] = bv[o];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ci = 0; ci < C; ++ci)
        for (int64_t id = 0; id < in[0]; ++id)
          for (int64_t ih = 0; ih < in[1]; ++ih)
            for (int64_t iw = 0; iw < in[2]; ++iw)
              for (int64_t oc = 0; oc < Cog; ++oc)
                for (int64_t a = 0; a < k[0]; ++a)
                  for (int64_t bh = 0; bh < k[1]; ++bh)
                    for (int64_t bw = 0; bw < k[2]; ++bw) {
                      const int64_t od = id * s[0] - p[0] + a * dl[0], oh = ih * s[1] - p[1] + bh * dl[1],
                                    ow = iw * s[2] - p[2] + bw * dl[2];
                      if (od < 0 || od >= out[0] || oh < 0 || oh >= out[1] || ow < 0 || ow >= out[2]) continue;
                      const int64_t cout = (ci / Cg) * Cog + oc;
                      ref[static_cast<size_t>((((n * Co + cout) * out[0] + od) * out[1] + oh) * out[2] + ow)] +=
                          xv[static_cast<size_t>((((n * C + ci) * in[0] + id) * in[1] + ih) * in[2] + iw)] *
                          wv[static_cast<size_t>((((ci * Cog + oc) * k[0] + a) * k[1] + bh) * k[2] + bw)];
                    }
    const Shape os = {N, Co, out[0], out[1], out[2]};
    EXPECT_TRUE(matches(conv_transpose3d(with_layout(x, Layout::Sliced), w, b, c.stride, c.padding, c.output_padding,
                                         c.groups, c.dilation),
                        os, DType::Float64, ref, 1e-12, 1e-12));
    EXPECT_TRUE(matches(conv_transpose3d(Variable(x), Variable(w), Variable(b), c.stride, c.padding, c.output_padding,
                                         c.groups, c.dilation).data(),
                        os, DType::Float64, ref, 1e-12, 1e-12));
    // Unbatched: the first sample's output without the batch dim.
    EXPECT_TRUE(matches(conv_transpose3d(x.select(0, 0), w, b, c.stride, c.padding, c.output_padding, c.groups,
                                         c.dilation),
                        {Co, out[0], out[1], out[2]}, DType::Float64,
                        std::vector<double>(ref.begin(), ref.begin() + Co * out[0] * out[1] * out[2]), 1e-12, 1e-12));
  }
  // float32 and an empty batch.
  EXPECT_EQ(conv_transpose3d(zeros({0, 2, 2, 2, 2}), zeros({2, 3, 2, 2, 2})).shape(), (Shape{0, 3, 3, 3, 3}));
  expect_error([] { conv_transpose3d(zeros({2, 3, 3}), zeros({2, 2, 2, 2, 2})); },
               {"conv_transpose3d", "4-d or 5-d", "[2, 3, 3]"});
  expect_error([] { conv_transpose3d(zeros({1, 2, 3, 3, 3}), zeros({2, 2, 2, 2})); },
               {"conv_transpose3d", "5-d weight", "[2, 2, 2, 2]"});
  expect_error([] { conv_transpose3d(zeros({1, 3, 3, 3, 3}), zeros({2, 2, 2, 2, 2})); },
               {"conv_transpose3d", "3 channels", "expects 2"});
  expect_error([] { conv_transpose3d(zeros({1, 3, 3, 3, 3}), zeros({3, 2, 2, 2, 2}), Tensor(), 1, 0, 0, 2); },
               {"conv_transpose3d", "groups (2)", "divide"});
  expect_error([] { conv_transpose3d(zeros({1, 2, 3, 3, 3}), zeros({2, 2, 2, 2, 2}), zeros({3})); },
               {"conv_transpose3d", "bias", "[3]", "(2)"});
  // output_padding must be smaller than the stride or the dilation (PyTorch's rule).
  expect_error([] { conv_transpose3d(zeros({1, 2, 3, 3, 3}), zeros({2, 2, 2, 2, 2}), Tensor(), 2, 0, {2, 0, 0}); },
               {"conv_transpose3d", "output_padding (2, 0, 0)", "smaller than either the stride"});
  EXPECT_EQ(conv_transpose3d(zeros({1, 2, 3, 3, 3}), zeros({2, 2, 2, 2, 2}), Tensor(), 1, 0, {1, 0, 0}, 1, {2, 1, 1})
                .shape(),
            (Shape{1, 2, 6, 4, 4}));
  expect_error([] { conv_transpose3d(zeros({1, 2, 1, 3, 3}), zeros({2, 2, 1, 2, 2}), Tensor(), 1, {1, 0, 0}); },
               {"conv_transpose3d", "output size would be < 0"});
  expect_error([] { conv_transpose3d(zeros({1, 2, 0, 3, 3}), zeros({2, 2, 2, 2, 2})); },
               {"conv_transpose3d", "non-empty depth"});
  expect_error([] { conv_transpose3d(zeros({1, 2, 3, 3, 3}), zeros({2, 2, 2, 2, 2}), Tensor(), {1, 0, 1}); },
               {"conv_transpose3d", "stride and dilation must be positive"});
}

// A transposed convolution whose output has a zero-size dim gives the empty tensor (as
// PyTorch), with zero gradients for its operands; a negative size is refused with the whole
// output shape in the message.
TEST(CompositeConv, ConvTransposeWithAnEmptyOutputDimIsEmpty) {
  for (Device device : cpu_and_cuda()) {
    SCOPED_TRACE(device.str());
    const Options o(DType::Float32, device);
    auto check = [&](const std::function<Variable(const Variable&, const Variable&, const Variable&)>& f,
                     const Shape& x_shape, const Shape& w_shape, const Shape& out) {
      Variable x(random(x_shape, DType::Float32, 1).to(device), true);
      Variable w(random(w_shape, DType::Float32, 2).to(device), true);
      Variable b(random({w_shape[1]}, DType::Float32, 3).to(device), true);
      Variable y = f(x, w, b);
      EXPECT_EQ(y.shape(), out);
      EXPECT_EQ(y.device(), device);
      sum(y).backward();
      for (const Variable* v : {&x, &w, &b})
        EXPECT_TRUE(matches(v->grad().data().to(Device::cpu()), v->shape(), DType::Float32,
                            std::vector<double>(static_cast<size_t>(v->data().numel()), 0.0)));
      // Without gradients to record, the same.
      EXPECT_EQ(f(Variable(x.data()), Variable(w.data()), Variable(b.data())).shape(), out);
    };
    // Height (1 - 1) - 2 + 1 + 1 = 0, width 4 + 2 + 1 = 7.
    check([](auto& x, auto& w, auto& b) { return conv_transpose2d(x, w, b, 1, {1, 0}); }, {2, 4, 1, 5},
          {4, 3, 2, 3}, {2, 3, 0, 7});
    check([](auto& x, auto& w, auto& b) { return conv_transpose2d(x, w, b, 1, {1, 0}); }, {4, 1, 5}, {4, 3, 2, 3},
          {3, 0, 7});
    check([](auto& x, auto& w, auto& b) { return conv_transpose1d(x, w, b, 1, 1); }, {2, 2, 1}, {2, 3, 2}, {2, 3, 0});
    check([](auto& x, auto& w, auto& b) { return conv_transpose3d(x, w, b, 1, {1, 0, 0}); }, {1, 2, 1, 3, 3},
          {2, 2, 2, 2, 2}, {1, 2, 0, 4, 4});
    check([](auto& x, auto& w, auto& b) { return conv_transpose3d(x, w, b, 1, {0, 0, 1}); }, {1, 2, 3, 3, 1},
          {2, 2, 2, 2, 2}, {1, 2, 4, 4, 0});
    expect_error([&] { conv_transpose2d(zeros({2, 4, 1, 5}, o), zeros({4, 3, 2, 3}, o), Tensor(), 1, {2, 0}); },
                 {"conv_transpose2d", "output size would be < 0", "[2, 3, -2, 7]", "[2, 4, 1, 5]", "[4, 3, 2, 3]"});
    expect_error(
        [&] { conv_transpose3d(zeros({1, 2, 3, 3, 1}, o), zeros({2, 2, 2, 2, 2}, o), Tensor(), 1, {0, 0, 2}); },
        {"conv_transpose3d", "output size would be < 0", "[1, 2, 4, 4, -2]"});
  }
}

// F.unfold's columns against loops, and F.fold as its adjoint: <im2col(x), y> = <x, col2im(y)>.
TEST(CompositeConv, Im2colAndCol2im) {
  const Size2 k{2, 3}, d{2, 1}, p{1, 1}, s{1, 2};
  Tensor x = random({2, 3, 5, 6}, DType::Float64, 7);
  const std::vector<double> xv = values(x);
  const int64_t ho = (5 + 2 - 2 * 1 - 1) / 1 + 1, wo = (6 + 2 - 3) / 2 + 1, L = ho * wo;
  std::vector<double> ref;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j)
          for (int64_t oh = 0; oh < ho; ++oh)
            for (int64_t ow = 0; ow < wo; ++ow) {
              const int64_t h = oh * s.h - p.h + i * d.h, w = ow * s.w - p.w + j * d.w;
              ref.push_back(h < 0 || h >= 5 || w < 0 || w >= 6 ? 0.0 : xv[((n * 3 + c) * 5 + h) * 6 + w]);
            }
  Tensor cols = im2col(with_layout(x, Layout::Transposed), k, d, p, s);
  EXPECT_TRUE(matches(cols, {2, 18, L}, DType::Float64, ref, 0, 0));
  Tensor y = random({2, 18, L}, DType::Float64, 8);
  const double lhs = values(sum(mul(cols, y)))[0];
  const double rhs = values(sum(mul(x, col2im(y, {5, 6}, k, d, p, s))))[0];
  EXPECT_NEAR(lhs, rhs, 1e-10 * std::abs(lhs));
  // Non-overlapping windows without padding: fold undoes unfold.
  EXPECT_TRUE(all_close(values(col2im(im2col(x.narrow(3, 0, 6), 2, 1, 0, 2), {4, 6}, 2, 1, 0, 2)),
                        values(x.narrow(2, 0, 4)), 0, 0));
  EXPECT_EQ(im2col(x.select(0, 0), 2).shape(), (Shape{12, 20}));  // unbatched
  expect_error([&] { im2col(x, 7); }, {"unfold (im2col)", "larger than the padded input"});
  expect_error([&] { col2im(random({2, 16, L}, DType::Float64, 10), {5, 6}, 2); }, {"fold (col2im)", "15 columns", "20"});
  expect_error([&] { col2im(random({2, 17, L}, DType::Float64, 9), {5, 6}, k, d, p, s); }, {"fold (col2im)", "multiple"});
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(conv_composites) {
  using namespace wick;
  return {
      {"conv3d", [](auto& v) { return conv3d(v[0], v[1], v[2], Size3{1, 2, 1}, Size3{1, 0, 1}, Size3{2, 1, 1}); },
       {{1, 2, 4, 4, 3}, {2, 2, 2, 2, 2}, {2}}},
      {"conv3d groups unbatched", [](auto& v) { return conv3d(v[0], v[1], Variable(), 2, 0, 1, 2); },
       {{4, 3, 4, 4}, {2, 2, 2, 2, 2}}},
      {"im2col", [](auto& v) { return im2col(v[0], {2, 2}, {1, 2}, 1, {2, 1}); }, {{1, 2, 4, 5}}},
      {"col2im", [](auto& v) { return col2im(v[0], {4, 5}, {2, 2}, 1, 0, 1); }, {{1, 8, 12}}},
      {"conv_transpose1d", [](auto& v) { return conv_transpose1d(v[0], v[1], v[2], 2, 1, 1); },
       {{1, 2, 4}, {2, 3, 3}, {3}}},
      {"conv_transpose3d",
       [](auto& v) {
         return conv_transpose3d(v[0], v[1], v[2], Size3{2, 1, 2}, Size3{1, 0, 1}, Size3{1, 0, 0}, 1, Size3{1, 2, 1});
       },
       {{1, 2, 3, 2, 3}, {2, 2, 2, 2, 2}, {2}}},
      {"conv_transpose3d groups unbatched",
       [](auto& v) { return conv_transpose3d(v[0], v[1], Variable(), 1, {0, 1, 0}, 0, 2, {2, 1, 1}); },
       {{4, 2, 3, 2}, {4, 1, 2, 2, 2}}},
  };
}
