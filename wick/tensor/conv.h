#pragma once
// Convolutions (NCHW, PyTorch's semantics): conv1d, conv2d, conv_transpose2d with stride,
// padding, dilation and groups, and the gradients autograd builds their backward from.
// Inputs may be batched ([N, C, ...]) or not ([C, ...]); floating dtypes only.
#include <cstdint>

#include <wick/tensor/tensor.h>

namespace wick {

// A (height, width) pair; one number means the same for both (`conv2d(x, w, {}, 2)`).
struct Size2 {
  int64_t h = 0, w = 0;
  Size2(int64_t v) : h(v), w(v) {}  // NOLINT(google-explicit-constructor)
  Size2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
};

// The convolutions, declared here for Tensors and in wick/autograd/nn_ops.h for Variables
// from these rows (wick/tensor/mirrored_ops.h):
// - conv2d: out[n, o] = bias[o] + sum over c in o's group and the kernel of
//   input[n, c, oh * stride + kh * dilation - padding, ...] * weight[o, c, kh, kw];
//   input [N, Ci, H, W], weight [Co, Ci / groups, KH, KW], bias [Co] or undefined.
// - conv1d: input [N, Ci, L], weight [Co, Ci / groups, K].
// - conv_transpose2d: the adjoint of conv2d: input [N, Ci, H, W], weight [Ci, Co / groups,
//   KH, KW]; output size (H - 1) * stride - 2 * padding + dilation * (KH - 1) +
//   output_padding + 1. A size of 0 gives the empty tensor, as PyTorch; a negative one is
//   refused.
#define WICK_CONV_OPS(X, In, Out)                                                                         \
  X(Out, conv2d,                                                                                          \
    (In input, In weight, In bias = Out(), Size2 stride = 1, Size2 padding = 0, Size2 dilation = 1,       \
     int64_t groups = 1))                                                                                 \
  X(Out, conv1d,                                                                                          \
    (In input, In weight, In bias = Out(), int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, \
     int64_t groups = 1))                                                                                 \
  X(Out, conv_transpose2d,                                                                                \
    (In input, In weight, In bias = Out(), Size2 stride = 1, Size2 padding = 0, Size2 output_padding = 0, \
     int64_t groups = 1, Size2 dilation = 1))
#include <wick/tensor/generated/conv_ops.inc>
// The output shape of conv_transpose2d for these arguments, after all its checks (which
// throw as conv_transpose2d would).
Shape conv_transpose2d_shape(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
                             Size2 output_padding, int64_t groups, Size2 dilation);

// Gradients of conv2d (4-d tensors): w.r.t. its input (of `input_shape`) and its weight
// (of `weight_shape`), given grad_out [N, Co, Ho, Wo]; the bias gradient is
// grad_out.sum({0, 2, 3}).
Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape, Size2 stride,
                             Size2 padding, Size2 dilation, int64_t groups);
Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& input, const Shape& weight_shape, Size2 stride,
                              Size2 padding, Size2 dilation, int64_t groups);

}  // namespace wick
