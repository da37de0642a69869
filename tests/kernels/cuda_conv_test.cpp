// CUDA convolutions (cuDNN) and pooling against the CPU kernels: strides, padding, dilation,
// groups, transposed convolutions, every floating dtype, non-contiguous inputs, empty batches.
// float32 runs with TF32 off (the default), so it matches the CPU closely.
#include "tests/support/cuda_compare.h"

namespace wick::test {
namespace {

const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

// Sums of up to ~50 products of values in [-2, 2]: 16-bit results differ by their rounding.
double conv_rtol(DType t) { return t == DType::Float64 ? 1e-10 : t == DType::Float32 ? 1e-4 : 2e-2; }
double conv_atol(DType t) { return t == DType::Float64 ? 1e-10 : t == DType::Float32 ? 1e-4 : t == DType::Float16 ? 5e-2 : 0.3; }

struct ConvCase {
  Shape x, w;
  Size2 stride, padding, dilation;
  int64_t groups;
};
const std::vector<ConvCase> kConvs = {
    {{2, 3, 9, 8}, {4, 3, 3, 3}, 1, 1, 1, 1},
    {{3, 4, 11, 7}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
    {{2, 4, 6, 6}, {4, 1, 3, 3}, 1, 1, 1, 4},
    {{1, 5, 5, 5}, {3, 5, 1, 1}, 1, 0, 1, 1},
    {{0, 3, 5, 5}, {2, 3, 3, 3}, 1, 0, 1, 1},
};

TEST(CudaConv, Conv2dForwardAndGradients) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 1;
  for (const ConvCase& c : kConvs)
    for (DType t : kFloats)
      for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
        const Tensor x = with_layout(random(c.x, t, seed++), l), w = random(c.w, t, seed++);
        const Tensor b = random({c.w[0]}, t, seed++);
        const std::string what = shape_str(c.x) + " * " + shape_str(c.w) + " " + dtype_name(t) + " " + layout_name(l);
        expect_cuda_matches_cpu("conv2d " + what, {x, w, b}, [&](const std::vector<Tensor>& in) {
          return conv2d(in[0], in[1], in[2], c.stride, c.padding, c.dilation, c.groups);
        }, conv_rtol(t), conv_atol(t));
        const Tensor y = conv2d(x, w, {}, c.stride, c.padding, c.dilation, c.groups);
        const Tensor gy = random(y.shape(), t, seed++);
        expect_cuda_matches_cpu("conv2d_backward_input " + what, {gy, w}, [&](const std::vector<Tensor>& in) {
          return conv2d_backward_input(in[0], in[1], c.x, c.stride, c.padding, c.dilation, c.groups);
        }, conv_rtol(t), conv_atol(t));
        expect_cuda_matches_cpu("conv2d_backward_weight " + what, {gy, x}, [&](const std::vector<Tensor>& in) {
          return conv2d_backward_weight(in[0], in[1], c.w, c.stride, c.padding, c.dilation, c.groups);
        }, conv_rtol(t), t == DType::Float64 ? 1e-10 : 10 * conv_atol(t));
      }
}

TEST(CudaConv, Conv1dAndTransposed) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 500;
  for (DType t : {DType::Float32, DType::Float64}) {
    expect_cuda_matches_cpu("conv1d", {random({2, 4, 13}, t, seed++), random({6, 2, 3}, t, seed++)},
                            [](const std::vector<Tensor>& in) { return conv1d(in[0], in[1], {}, 2, 1, 2, 2); },
                            conv_rtol(t), conv_atol(t));
    expect_cuda_matches_cpu(
        "conv_transpose2d", {random({2, 4, 5, 4}, t, seed++), random({4, 3, 3, 3}, t, seed++), random({6}, t, seed++)},
        [](const std::vector<Tensor>& in) { return conv_transpose2d(in[0], in[1], in[2], 2, 1, 1, 2); },
        conv_rtol(t), conv_atol(t));
  }
}

TEST(CudaPool, MaxAvgAdaptiveForwardAndBackward) {
  WICK_REQUIRE_CUDA();
  uint64_t seed = 900;
  const Shape xs = {2, 3, 9, 10};
  for (DType t : kFloats)
    for (Layout l : {Layout::Contiguous, Layout::Sliced}) {
      const Tensor x = with_layout(random(xs, t, seed++), l);
      const std::string what = std::string(dtype_name(t)) + " " + layout_name(l);
      expect_cuda_matches_cpu("max_pool2d " + what, {x}, [](const std::vector<Tensor>& in) {
        auto [y, idx] = max_pool2d(in[0], 3, 2, 1, {1, 2}, true);
        return cat({y.to(DType::Float64), idx.to(DType::Float64)});
      });
      auto [y, idx] = max_pool2d(x, 3, 2, 1, {1, 2}, true);
      const Tensor gy = random(y.shape(), t, seed++);
      expect_cuda_matches_cpu("max_pool2d_backward " + what, {gy, idx}, [&](const std::vector<Tensor>& in) {
        return max_pool2d_backward(in[0], in[1], xs);
      }, conv_rtol(t), conv_atol(t));
      for (bool cip : {true, false}) {
        expect_cuda_matches_cpu("avg_pool2d " + what, {x}, [&](const std::vector<Tensor>& in) {
          return avg_pool2d(in[0], {3, 2}, 2, 1, true, cip);
        }, conv_rtol(t), conv_atol(t));
        const Tensor ga = random(avg_pool2d(x, {3, 2}, 2, 1, true, cip).shape(), t, seed++);
        expect_cuda_matches_cpu("avg_pool2d_backward " + what, {ga}, [&](const std::vector<Tensor>& in) {
          return avg_pool2d_backward(in[0], xs, {3, 2}, 2, 1, true, cip);
        }, conv_rtol(t), conv_atol(t));
      }
      expect_cuda_matches_cpu("adaptive_avg_pool2d " + what, {x}, [](const std::vector<Tensor>& in) {
        return adaptive_avg_pool2d(in[0], {4, 3});
      }, conv_rtol(t), conv_atol(t));
      expect_cuda_matches_cpu("adaptive_avg_pool2d_backward " + what, {random({2, 3, 4, 3}, t, seed++)},
                              [&](const std::vector<Tensor>& in) { return adaptive_avg_pool2d_backward(in[0], xs); },
                              conv_rtol(t), conv_atol(t));
    }
}

}  // namespace
}  // namespace wick::test
