#pragma once
// The parameters the op entry points hand to kernels through the kernel table (dispatch.h)
// that no public function takes: a unary op's extra arguments, a random draw's kind, the
// geometry of a convolution and of a pooling window. Internal, as dispatch.h is.
#include <cstdint>

namespace wick {

// Extra arguments of some unary ops (clamp bounds, leaky slope, softplus beta/threshold).
struct UnaryParams {
  double a = 0.0;
  double b = 0.0;
};

enum class RandomKind : uint8_t { Uniform, Normal, RandInt, Bernoulli };

// --- conv and pooling (parameters; the slots are at the end of KernelTable)
// A 2-d convolution's geometry, [0] = height, [1] = width. conv1d is conv2d with height 1.
struct ConvParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};
// A 2-d pooling window. The output size is out's shape (the entry point applies ceil_mode).
struct PoolParams {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  bool count_include_pad = true;  // avg_pool2d: divide by the window clipped to the padded input
};

}  // namespace wick
