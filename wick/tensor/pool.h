#pragma once
// 2-d pooling (NCHW or unbatched CHW, PyTorch's semantics) and the gradients autograd
// builds its backward from. Floating dtypes only.
#include <optional>
#include <utility>

#include <wick/tensor/conv.h>

namespace wick {

// Max over kernel windows (stride defaults to the kernel; padding at most half the kernel;
// ceil_mode rounds the output size up, keeping every window's start inside the input or
// its left padding). Returns (values, indices): int64 indices h * W + w of each maximum
// within its plane, as max_pool2d_backward and PyTorch's max_unpool expect.
std::pair<Tensor, Tensor> max_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride = std::nullopt,
                                     Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
// Declared here for Tensors and in wick/autograd/nn_ops.h for Variables from these rows
// (wick/tensor/mirrored_ops.h):
// - avg_pool2d: the mean over kernel windows; count_include_pad divides by the window
//   clipped to the padded input instead of by the number of real elements.
// - adaptive_avg_pool2d: the mean over output_size cells that tile the input (rows
//   [floor(i H / Ho), ceil((i + 1) H / Ho))); an output size of 0 gives an empty result, as
//   PyTorch.
#define WICK_POOL_OPS(X, In, Out)                                                                                   \
  X(Out, avg_pool2d,                                                                                                \
    (In input, Size2 kernel, std::optional<Size2> stride = std::nullopt, Size2 padding = 0, bool ceil_mode = false, \
     bool count_include_pad = true),                                                                                \
    Record<AvgPoolBackward>(kernel, stride, padding, ceil_mode, count_include_pad))                                 \
  X(Out, adaptive_avg_pool2d, (In input, Size2 output_size), Record<AdaptiveAvgPoolBackward>())
#include <wick/tensor/generated/pool_ops.inc>
// Gradients w.r.t. the input (of `input_shape`, same rank as grad_out) of the ops above.
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& input_shape);
Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, Size2 kernel,
                           std::optional<Size2> stride = std::nullopt, Size2 padding = 0, bool ceil_mode = false,
                           bool count_include_pad = true);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape);

}  // namespace wick
