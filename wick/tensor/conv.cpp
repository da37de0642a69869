// Convolution entry points: argument checks, output shapes, then the conv slots. conv1d is
// conv2d with a unit height; conv_transpose2d is conv2d's input gradient.
#include <wick/tensor/conv.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/factories.h>

#include <algorithm>

namespace wick {

namespace {

ConvParams make_params(Size2 stride, Size2 padding, Size2 dilation, int64_t groups) {
  ConvParams p;
  p.stride[0] = stride.h, p.stride[1] = stride.w;
  p.padding[0] = padding.h, p.padding[1] = padding.w;
  p.dilation[0] = dilation.h, p.dilation[1] = dilation.w;
  p.groups = groups;
  return p;
}

// Checks shared by every convolution: defined operands of one floating dtype and device, a
// 4-d weight and a 4-d input (after batching), valid geometry, and a matching bias.
void check_operands(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const ConvParams& p) {
  WICK_CHECK(input.defined() && weight.defined(), op, ": undefined input or weight");
  WICK_CHECK(input.device() == weight.device(), op, ": input is on ", input.device(), " but weight is on ",
             weight.device());
  WICK_CHECK(input.dtype() == weight.dtype() && is_floating(input.dtype()), op,
             ": expected input and weight of one floating dtype, got ", dtype_name(input.dtype()), " and ",
             dtype_name(weight.dtype()));
  WICK_CHECK(p.groups >= 1, op, ": groups must be positive, got ", p.groups);
  for (int d = 0; d < 2; ++d) {
    WICK_CHECK(p.stride[d] >= 1 && p.dilation[d] >= 1 && p.padding[d] >= 0, op,
               ": stride and dilation must be positive and padding non-negative, got stride (", p.stride[0], ", ",
               p.stride[1], "), padding (", p.padding[0], ", ", p.padding[1], "), dilation (", p.dilation[0], ", ",
               p.dilation[1], ")");
  }
  if (bias.defined()) {
    WICK_CHECK(bias.device() == input.device() && bias.dtype() == input.dtype(), op,
               ": bias must have the input's dtype and device, got ", dtype_name(bias.dtype()), " on ",
               bias.device());
  }
}

// One output size of a convolution; throws when the (padded) input is smaller than the
// dilated kernel.
int64_t conv_out_size(const char* op, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, const Tensor& input,
                      const Tensor& weight) {
  const int64_t span = d * (k - 1) + 1;
  WICK_CHECK(in + 2 * p >= span, op, ": output size would be <= 0: input ", shape_str(input.shape()), " padded by ",
             p, " is smaller than the dilated kernel (", span, ") of weight ", shape_str(weight.shape()));
  return (in + 2 * p - span) / s + 1;
}

void check_bias(const char* op, const Tensor& bias, int64_t channels) {
  if (!bias.defined()) return;
  WICK_CHECK(bias.dim() == 1 && bias.size(0) == channels, op, ": expected a bias of shape [", channels, "], got ",
             shape_str(bias.shape()));
}

// out += bias[c] along dim 1 of 4-d out.
void add_bias(Tensor& out, const Tensor& bias) {
  if (bias.defined()) out.add_(bias.view({1, bias.size(0), 1, 1}));
}

// conv2d on a batched 4-d input (the checks name `op`).
Tensor conv2d_4d(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvParams& p) {
  check_operands(op, input, weight, bias, p);
  WICK_CHECK(weight.dim() == 4, op, ": expected a 4-d weight [out_channels, in_channels / groups, kH, kW], got ",
             shape_str(weight.shape()));
  const int64_t ci = input.size(1), co = weight.size(0);
  WICK_CHECK(ci % p.groups == 0 && co % p.groups == 0, op, ": groups (", p.groups,
             ") must divide in_channels and out_channels; input ", shape_str(input.shape()), ", weight ",
             shape_str(weight.shape()));
  WICK_CHECK(weight.size(1) * p.groups == ci, op, ": input ", shape_str(input.shape()), " has ", ci,
             " channels but weight ", shape_str(weight.shape()), " with groups ", p.groups, " expects ",
             weight.size(1) * p.groups);
  check_bias(op, bias, co);
  const int64_t ho = conv_out_size(op, input.size(2), weight.size(2), p.stride[0], p.padding[0], p.dilation[0],
                                   input, weight);
  const int64_t wo = conv_out_size(op, input.size(3), weight.size(3), p.stride[1], p.padding[1], p.dilation[1],
                                   input, weight);
  Tensor out = empty({input.size(0), co, ho, wo}, input.options());
  kernel_for(&KernelTable::conv2d_forward, op, input.device())(out, input.contiguous(), weight.contiguous(), p);
  add_bias(out, bias);
  return out;
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
              Size2 dilation, int64_t groups) {
  WICK_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), "conv2d: expected a 3-d or 4-d input, got ",
             input.defined() ? shape_str(input.shape()) : "undefined");
  const ConvParams p = make_params(stride, padding, dilation, groups);
  if (input.dim() == 3) return conv2d_4d("conv2d", input.unsqueeze(0), weight, bias, p).squeeze(0);
  return conv2d_4d("conv2d", input, weight, bias, p);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  WICK_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3), "conv1d: expected a 2-d or 3-d input, got ",
             input.defined() ? shape_str(input.shape()) : "undefined");
  WICK_CHECK(weight.defined() && weight.dim() == 3,
             "conv1d: expected a 3-d weight [out_channels, in_channels / groups, k], got ",
             weight.defined() ? shape_str(weight.shape()) : "undefined");
  const ConvParams p = make_params({1, stride}, {0, padding}, {1, dilation}, groups);
  const Tensor x = input.dim() == 2 ? input.unsqueeze(0) : input;
  Tensor out = conv2d_4d("conv1d", x.unsqueeze(2), weight.unsqueeze(2), bias, p).squeeze(2);
  return input.dim() == 2 ? out.squeeze(0) : out;
}

Shape conv_transpose2d_shape(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride,
                             Size2 padding, Size2 output_padding, int64_t groups, Size2 dilation) {
  const char* op = "conv_transpose2d";
  WICK_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), op, ": expected a 3-d or 4-d input, got ",
             input.defined() ? shape_str(input.shape()) : "undefined");
  const Tensor x = input.dim() == 3 ? input.unsqueeze(0) : input;
  const ConvParams p = make_params(stride, padding, dilation, groups);
  check_operands(op, x, weight, bias, p);
  WICK_CHECK(weight.dim() == 4, op, ": expected a 4-d weight [in_channels, out_channels / groups, kH, kW], got ",
             shape_str(weight.shape()));
  const int64_t ci = x.size(1);
  WICK_CHECK(ci % groups == 0, op, ": groups (", groups, ") must divide in_channels; input ",
             shape_str(input.shape()), ", weight ", shape_str(weight.shape()));
  WICK_CHECK(weight.size(0) == ci, op, ": input ", shape_str(input.shape()), " has ", ci, " channels but weight ",
             shape_str(weight.shape()), " expects ", weight.size(0));
  const int64_t co = weight.size(1) * groups;
  check_bias(op, bias, co);
  const int64_t opad[2] = {output_padding.h, output_padding.w};
  Shape out_shape = {x.size(0), co, 0, 0};
  for (int d = 0; d < 2; ++d) {
    // PyTorch's rule: smaller than the stride or the dilation (beyond both it would only add
    // positions no input reaches).
    WICK_CHECK(opad[d] >= 0 && (opad[d] < p.stride[d] || opad[d] < p.dilation[d]), op, ": output_padding (", opad[0],
               ", ", opad[1], ") must be non-negative and smaller than either the stride (", p.stride[0], ", ",
               p.stride[1], ") or the dilation (", p.dilation[0], ", ", p.dilation[1], ")");
    out_shape[2 + d] = (x.size(2 + d) - 1) * p.stride[d] - 2 * p.padding[d] +
                       p.dilation[d] * (weight.size(2 + d) - 1) + opad[d] + 1;
  }
  // A size of 0 is an empty output (as PyTorch); only a negative one is refused.
  for (int d = 0; d < 2; ++d)
    WICK_CHECK(out_shape[2 + d] >= 0, op, ": output size would be < 0 (", shape_str(out_shape), ") for input ",
               shape_str(input.shape()), " and weight ", shape_str(weight.shape()));
  if (input.dim() == 3) out_shape.erase(out_shape.begin());
  return out_shape;
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
                        Size2 output_padding, int64_t groups, Size2 dilation) {
  if (input.defined() && input.dim() == 3)
    return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation)
        .squeeze(0);
  const Shape out_shape =
      conv_transpose2d_shape(input, weight, bias, stride, padding, output_padding, groups, dilation);
  if (numel_of(out_shape) == 0) return empty(out_shape, input.options());
  if (output_padding.h >= stride.h || output_padding.w >= stride.w) {
    // An output_padding of at least the stride has no consistent conv2d (cuDNN refuses it):
    // compute the whole transposed conv (no padding) and cut `padding` off the start and
    // padding - output_padding off the end, where a negative cut adds zeros.
    const Tensor full = conv_transpose2d(input, weight, Tensor(), stride, 0, 0, groups, dilation);
    Tensor out = zeros(out_shape, input.options());
    Tensor kept = full, into = out;
    const int64_t pad[2] = {padding.h, padding.w};
    for (int d = 0; d < 2; ++d) {
      const int64_t n = std::min(out_shape[2 + d], full.size(2 + d) - pad[d]);
      kept = kept.narrow(2 + d, pad[d], n);
      into = into.narrow(2 + d, 0, n);
    }
    into.copy_(kept);
    add_bias(out, bias);
    return out;
  }
  Tensor out = empty(out_shape, input.options());
  kernel_for(&KernelTable::conv2d_backward_input, "conv_transpose2d", input.device())(
      out, input.contiguous(), weight.contiguous(), make_params(stride, padding, dilation, groups));
  add_bias(out, bias);
  return out;
}

Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape, Size2 stride,
                             Size2 padding, Size2 dilation, int64_t groups) {
  const char* op = "conv2d_backward_input";
  const ConvParams p = make_params(stride, padding, dilation, groups);
  check_operands(op, grad_out, weight, Tensor(), p);
  WICK_CHECK(grad_out.dim() == 4 && weight.dim() == 4 && input_shape.size() == 4, op,
             ": expected 4-d shapes, got grad_out ", shape_str(grad_out.shape()), ", weight ",
             shape_str(weight.shape()), ", input ", shape_str(input_shape));
  Tensor grad_in = empty(input_shape, grad_out.options());
  kernel_for(&KernelTable::conv2d_backward_input, op, grad_out.device())(grad_in, grad_out.contiguous(),
                                                                                 weight.contiguous(), p);
  return grad_in;
}

Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& input, const Shape& weight_shape, Size2 stride,
                              Size2 padding, Size2 dilation, int64_t groups) {
  const char* op = "conv2d_backward_weight";
  const ConvParams p = make_params(stride, padding, dilation, groups);
  check_operands(op, grad_out, input, Tensor(), p);
  WICK_CHECK(grad_out.dim() == 4 && input.dim() == 4 && weight_shape.size() == 4, op,
             ": expected 4-d shapes, got grad_out ", shape_str(grad_out.shape()), ", input ",
             shape_str(input.shape()), ", weight ", shape_str(weight_shape));
  Tensor grad_weight = empty(weight_shape, grad_out.options());
  kernel_for(&KernelTable::conv2d_backward_weight, op, grad_out.device())(grad_weight, grad_out.contiguous(),
                                                                                  input.contiguous(), p);
  return grad_weight;
}

}  // namespace wick
