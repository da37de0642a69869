// Conv1d/Conv2d padding by name (Valid, Same) and padding_mode (zeros, reflect, replicate,
// circular), and the functional conv1d/conv2d with PaddingKind, against a float64 reference
// that pads by index arithmetic and convolves with loops.
#include "tests/autograd/cases.h"

#include <cmath>

#include <wick/nn/conv.h>

namespace wick::test {
namespace {

size_t index_of(int64_t i) { return static_cast<size_t>(i); }

// The input index read for padded position i (before = the padding before) of a dim of
// size n, or -1 for a zero.
int64_t source_index(int64_t i, int64_t before, int64_t n, PaddingMode mode) {
  int64_t j = i - before;
  if (j >= 0 && j < n) return j;
  switch (mode) {
    case PaddingMode::Zeros:
      return -1;
    case PaddingMode::Reflect:
      return j < 0 ? -j : 2 * (n - 1) - j;
    case PaddingMode::Replicate:
      return j < 0 ? 0 : n - 1;
    case PaddingMode::Circular:
      return ((j % n) + n) % n;
  }
  return -1;
}

// Reference conv2d: x [N, C, H, W], w [O, C / g, KH, KW]; pads (top, bottom, left, right)
// filled as `mode`, then a convolution without padding.
std::vector<double> ref_conv(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                             const Shape& ws, const std::vector<double>& b, Size2 stride, Size2 dilation,
                             int64_t groups, int64_t top, int64_t bottom, int64_t left, int64_t right, PaddingMode mode,
                             Shape& out_shape) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], o = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  const int64_t hp = h + top + bottom, wp = wd + left + right;
  const int64_t ho = (hp - dilation.h * (kh - 1) - 1) / stride.h + 1, wo = (wp - dilation.w * (kw - 1) - 1) / stride.w + 1;
  out_shape = {n, o, ho, wo};
  std::vector<double> y;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          double s = b.empty() ? 0.0 : b[index_of(oc)];
          const int64_t grp = oc / (o / groups);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t r = source_index(i * stride.h + a * dilation.h, top, h, mode);
                const int64_t q = source_index(j * stride.w + e * dilation.w, left, wd, mode);
                if (r < 0 || q < 0) continue;
                s += x[index_of(((in * c + grp * cg + ci) * h + r) * wd + q)] * w[index_of(((oc * cg + ci) * kh + a) * kw + e)];
              }
          y.push_back(s);
        }
  return y;
}

const PaddingMode kModes[] = {PaddingMode::Zeros, PaddingMode::Reflect, PaddingMode::Replicate,
                              PaddingMode::Circular};

TEST(ConvPadding, Conv2dSameValidAndSizesInEveryMode) {
  Tensor x = random({2, 4, 5, 6}, DType::Float64, 61);
  for (PaddingMode mode : kModes) {
    const std::string m = "mode " + std::to_string(static_cast<int>(mode));
    // Kernel (2, 3), dilation (3, 2): Same pads 3 in height (1 top, 2 bottom) and 4 in width
    // (2 and 2); with groups and no bias.
    Conv2dOptions same;
    same.padding = PaddingKind::Same;
    same.dilation = Size2(3, 2);
    same.groups = 2;
    same.bias = false;
    same.padding_mode = mode;
    Generator g(62);
    Conv2d conv(4, 6, Size2(2, 3), same, DType::Float64, &g);
    Shape out_shape;
    std::vector<double> expected = ref_conv(values(x), x.shape(), values(conv.weight.data()), conv.weight.shape(), {},
                                            1, {3, 2}, 2, 1, 2, 2, 2, mode, out_shape);
    EXPECT_EQ(out_shape, (Shape{2, 6, 5, 6}));
    EXPECT_TRUE(matches(conv(Variable(with_layout(x, Layout::Transposed))).data(), out_shape, DType::Float64, expected,
                        1e-10, 1e-12))
        << m;
    // Sizes (1, 2) on each side, stride 2: explicit padding in the mode, as PyTorch.
    Conv2dOptions sizes;
    sizes.padding = Size2(1, 2);
    sizes.stride = 2;
    sizes.padding_mode = mode;
    Conv2d c2(4, 3, 3, sizes, DType::Float64, &g);
    expected = ref_conv(values(x), x.shape(), values(c2.weight.data()), c2.weight.shape(), values(c2.bias.data()), 2, 1,
                        1, 1, 1, 2, 2, mode, out_shape);
    EXPECT_TRUE(matches(c2(Variable(x)).data(), out_shape, DType::Float64, expected, 1e-10, 1e-12)) << m;
    // Valid: no padding in any mode.
    Conv2dOptions valid;
    valid.padding = PaddingKind::Valid;
    valid.padding_mode = mode;
    Conv2d c3(4, 3, Size2(3, 2), valid, DType::Float64, &g);
    expected = ref_conv(values(x), x.shape(), values(c3.weight.data()), c3.weight.shape(), values(c3.bias.data()), 1, 1,
                        1, 0, 0, 0, 0, mode, out_shape);
    EXPECT_EQ(out_shape, (Shape{2, 3, 3, 5}));
    EXPECT_TRUE(matches(c3(Variable(x)).data(), out_shape, DType::Float64, expected, 1e-10, 1e-12)) << m;
  }
  // An unbatched input [C, H, W] is padded in its last two dims too.
  Conv2dOptions co;
  co.padding = PaddingKind::Same;
  co.padding_mode = PaddingMode::Reflect;
  Conv2d conv(4, 2, 4, co, DType::Float64);
  Variable batched = conv(Variable(x));
  EXPECT_TRUE(all_close(values(conv(Variable(x.select(0, 1))).data()), values(batched.data().select(0, 1)), 1e-12,
                        1e-12));
}

TEST(ConvPadding, Conv1dSameValidAndModes) {
  Tensor x = random({2, 3, 7}, DType::Float64, 71);
  for (PaddingMode mode : kModes) {
    // Kernel 4: Same pads 1 before and 2 after; kernel 3, dilation 2: 2 and 2.
    for (auto [k, dil] : {std::pair<int64_t, int64_t>{4, 1}, {3, 2}}) {
      Conv1dOptions co;
      co.padding = PaddingKind::Same;
      co.dilation = dil;
      co.padding_mode = mode;
      Conv1d conv(3, 2, k, co, DType::Float64);
      const int64_t total = dil * (k - 1);
      Shape out_shape;
      std::vector<double> expected =
          ref_conv(values(x), {2, 3, 1, 7}, values(conv.weight.data()), {2, 3, 1, k}, values(conv.bias.data()), 1,
                   {1, dil}, 1, 0, 0, total / 2, total - total / 2, mode, out_shape);
      EXPECT_TRUE(matches(conv(Variable(x)).data(), {2, 2, 7}, DType::Float64, expected, 1e-10, 1e-12))
          << "k=" << k << " mode " << static_cast<int>(mode);
    }
    Conv1dOptions sizes;
    sizes.padding = 3;
    sizes.stride = 3;
    sizes.padding_mode = mode;
    Conv1d conv(3, 2, 2, sizes, DType::Float64);
    Shape out_shape;
    std::vector<double> expected = ref_conv(values(x), {2, 3, 1, 7}, values(conv.weight.data()), {2, 3, 1, 2},
                                            values(conv.bias.data()), {1, 3}, 1, 1, 0, 0, 3, 3, mode, out_shape);
    EXPECT_TRUE(matches(conv(Variable(x)).data(), {2, 2, out_shape[3]}, DType::Float64, expected, 1e-10, 1e-12));
  }
  Conv1dOptions valid;
  valid.padding = PaddingKind::Valid;
  Conv1d conv(3, 2, 3, valid, DType::Float64);
  EXPECT_EQ(conv(Variable(x)).shape(), (Shape{2, 2, 5}));
}

TEST(ConvPadding, FunctionalFormsWithPaddingKind) {
  Tensor x = random({1, 2, 5, 4}, DType::Float64, 81), w = random({3, 2, 2, 4}, DType::Float64, 82),
         b = random({3}, DType::Float64, 83);
  Shape out_shape;
  // Kernel (2, 4): Same pads (0, 1) in height and (1, 2) in width.
  std::vector<double> expected =
      ref_conv(values(x), x.shape(), values(w), w.shape(), values(b), 1, 1, 1, 0, 1, 1, 2, PaddingMode::Zeros, out_shape);
  EXPECT_TRUE(matches(conv2d(Variable(x), Variable(w), Variable(b), 1, PaddingKind::Same).data(), {1, 3, 5, 4},
                      DType::Float64, expected, 1e-10, 1e-12));
  EXPECT_TRUE(all_close(values(conv2d(Variable(x), Variable(w), Variable(b), 1, PaddingKind::Valid).data()),
                        values(conv2d(Variable(x), Variable(w), Variable(b), 1, 0).data()), 0, 0));
  Tensor x1 = random({2, 2, 6}, DType::Float64, 84), w1 = random({4, 1, 3}, DType::Float64, 85);
  expected = ref_conv(values(x1), {2, 2, 1, 6}, values(w1), {4, 1, 1, 3}, {}, 1, {1, 2}, 2, 0, 0, 2, 2,
                      PaddingMode::Zeros, out_shape);
  EXPECT_TRUE(matches(conv1d(Variable(x1), Variable(w1), Variable(), 1, PaddingKind::Same, 2, 2).data(), {2, 4, 6},
                      DType::Float64, expected, 1e-10, 1e-12));
}

TEST(ConvPadding, Refusals) {
  Conv2dOptions strided;
  strided.padding = PaddingKind::Same;
  strided.stride = Size2(1, 2);
  expect_error([&] { Conv2d(2, 2, 3, strided); }, {"Conv2d", "Same", "stride 2"});
  Conv1dOptions strided1;
  strided1.padding = PaddingKind::Same;
  strided1.stride = 3;
  expect_error([&] { Conv1d(2, 2, 3, strided1); }, {"Conv1d", "Same", "stride 3"});
  Variable x(random({1, 2, 4, 4}, DType::Float64, 91)), w(random({2, 2, 3, 3}, DType::Float64, 92));
  expect_error([&] { conv2d(x, w, Variable(), 2, PaddingKind::Same); }, {"conv2d", "Same", "stride 2"});
  expect_error([&] { conv1d(Variable(zeros({1, 2, 5})), Variable(zeros({1, 2, 3})), Variable(), 2, PaddingKind::Same); },
               {"conv1d", "Same", "stride 2"});
  // Strided Valid is fine.
  EXPECT_EQ(conv2d(x, w, Variable(), 2, PaddingKind::Valid).shape(), (Shape{1, 2, 1, 1}));
  Conv2dOptions reflect;
  reflect.padding = Size2(4, 1);
  reflect.padding_mode = PaddingMode::Reflect;
  Conv2d too_far(2, 2, 3, reflect, DType::Float64);
  expect_error([&] { too_far(x); }, {"Conv2d", "reflect", "padding (4, 4)", "size 4", "[1, 2, 4, 4]"});
  Conv1dOptions circular;
  circular.padding = 6;
  circular.padding_mode = PaddingMode::Circular;
  Conv1d wrap(2, 2, 3, circular, DType::Float64);
  expect_error([&] { wrap(Variable(zeros({1, 2, 5}, DType::Float64))); },
               {"Conv1d", "circular", "padding (6, 6)", "size 5"});
  expect_error([&] { wrap(Variable(zeros({5}, DType::Float64))); }, {"Conv1d", "2-d or 3-d input", "[5]"});
  Conv2dOptions negative;
  negative.padding = -1;
  Conv2d neg(2, 2, 3, negative, DType::Float64);
  expect_error([&] { neg(x); }, {"Conv2d", "padding", "-1"});
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(conv_padding) {
  using namespace wick;
  // Modules made afresh with the same seed on every call; the input is checked (the weight's
  // gradient is conv's own, checked with the conv cases).
  auto conv2d_module = [](PaddingMode mode) {
    Conv2dOptions co;
    co.padding = PaddingKind::Same;
    co.padding_mode = mode;
    Generator g(95);
    return std::make_shared<Conv2d>(2, 3, Size2(2, 3), co, DType::Float64, &g);
  };
  return {
      {"Conv2d same reflect", [=](auto& v) { return conv2d_module(PaddingMode::Reflect)->forward(v[0]); },
       {{1, 2, 4, 5}}},
      {"Conv2d same replicate", [=](auto& v) { return conv2d_module(PaddingMode::Replicate)->forward(v[0]); },
       {{1, 2, 4, 5}}},
      {"Conv1d circular",
       [](auto& v) {
         Conv1dOptions co;
         co.padding = 2;
         co.padding_mode = PaddingMode::Circular;
         Generator g(96);
         return Conv1d(2, 2, 3, co, DType::Float64, &g).forward(v[0]);
       },
       {{2, 2, 4}}},
      {"conv2d same asymmetric (input, weight, bias)",
       [](auto& v) { return conv2d(v[0], v[1], v[2], 1, PaddingKind::Same, Size2(1, 2)); },
       {{1, 2, 4, 5}, {2, 2, 2, 2}, {2}}},
  };
}
