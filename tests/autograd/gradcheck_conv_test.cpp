// Gradient checks of the convolutions and pooling ops, and what their backward nodes skip.
#include "tests/autograd/cases.h"

WICK_GRADCHECK_CASES(conv) {
  using namespace wick;
  return {
      {"conv2d bias stride padding", [](auto& v) { return conv2d(v[0], v[1], v[2], 2, 1); },
       {{2, 2, 5, 5}, {3, 2, 3, 3}, {3}}},
      {"conv2d groups dilation", [](auto& v) { return conv2d(v[0], v[1], {}, {1, 2}, {1, 0}, 2, 2); },
       {{1, 4, 6, 6}, {4, 2, 2, 2}}},
      {"conv2d unbatched 1x1", [](auto& v) { return conv2d(v[0], v[1], v[2]); }, {{3, 3, 4}, {2, 3, 1, 1}, {2}}},
      {"conv1d", [](auto& v) { return conv1d(v[0], v[1], v[2], 2, 1, 1, 1); }, {{2, 2, 7}, {3, 2, 3}, {3}}},
      {"conv1d unbatched groups", [](auto& v) { return conv1d(v[0], v[1], {}, 1, 0, 2, 2); }, {{4, 6}, {2, 2, 2}}},
      {"conv_transpose2d output padding", [](auto& v) { return conv_transpose2d(v[0], v[1], v[2], 2, 1, 1); },
       {{1, 2, 3, 3}, {2, 3, 3, 3}, {3}}},
      {"conv_transpose2d output padding past the stride",
       [](auto& v) { return conv_transpose2d(v[0], v[1], v[2], 1, 0, {1, 2}, 1, {2, 3}); },
       {{1, 2, 3, 4}, {2, 3, 2, 2}, {3}}},
      {"conv_transpose2d groups dilation",
       [](auto& v) { return conv_transpose2d(v[0], v[1], {}, {2, 1}, 0, 0, 2, {1, 2}); },
       {{2, 4, 3, 2}, {4, 1, 2, 2}}},
      {"max_pool2d overlapping padded", [](auto& v) { return max_pool2d(v[0], 3, 2, 1); }, {{2, 2, 5, 5}}},
      {"max_pool2d dilation ceil", [](auto& v) { return max_pool2d(v[0], 2, 2, 0, 2, true); }, {{1, 2, 6, 7}}},
      {"max_pool2d ceil window past the input", [](auto& v) { return max_pool2d(v[0], 3, 2, 0, 1, true); },
       {{1, 2, 2, 3}}},
      {"avg_pool2d ceil window past the input", [](auto& v) { return avg_pool2d(v[0], Size2{4, 3}, Size2{1, 2}, Size2{1, 0}, true); },
       {{2, 1, 3, 2}}},
      {"avg_pool2d count_include_pad", [](auto& v) { return avg_pool2d(v[0], 3, 2, 1, true, true); }, {{1, 2, 6, 6}}},
      {"avg_pool2d exclude pad", [](auto& v) { return avg_pool2d(v[0], {2, 3}, 1, {1, 1}, false, false); },
       {{2, 1, 4, 5}}},
      {"adaptive_avg_pool2d", [](auto& v) { return adaptive_avg_pool2d(v[0], {3, 4}); }, {{1, 2, 5, 7}}},
  };
}

namespace wick::test {
namespace {

// Only the gradients that flow somewhere are computed; the others stay undefined.
TEST(ConvGrad, InputWithoutGradGetsNone) {
  Variable x(random({1, 2, 4, 4}, DType::Float64, 1));
  Variable w(random({3, 2, 3, 3}, DType::Float64, 2), true), b(random({3}, DType::Float64, 3), true);
  sum(conv2d(x, w, b, 1, 1)).backward();
  EXPECT_FALSE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined() && b.grad().defined());
  // d sum(y) / d b[o] = the number of output pixels.
  EXPECT_TRUE(matches(b.grad().data(), {3}, DType::Float64, {16, 16, 16}));
  EXPECT_EQ(w.grad().shape(), (Shape{3, 2, 3, 3}));
}

// Their backward runs tensor kernels: a create_graph backward would get constants, so it throws.
TEST(ConvGrad, DoubleBackwardIsRefused) {
  Variable x(random({1, 2, 4, 4}, DType::Float64, 4), true), w(random({2, 2, 3, 3}, DType::Float64, 5), true);
  expect_error([&] { grad({sum(conv2d(x, w))}, {x}, {}, false, true); },
               {"ConvolutionBackward", "double backward"});
  Variable p = avg_pool2d(x, 2);
  expect_error([&] { grad({sum(mul(p, p))}, {x}, {}, false, true); }, {"AvgPoolBackward", "double backward"});
  // Without create_graph the same graphs differentiate.
  EXPECT_EQ(grad({sum(mul(p, p))}, {x})[0].shape(), x.shape());
}

}  // namespace
}  // namespace wick::test
