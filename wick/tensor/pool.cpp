// Pooling entry points: argument checks, output shapes, then the pooling slots. Unbatched
// [C, H, W] inputs run as a batch of one.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/pool.h>

namespace wick {

namespace {

void check_input(const char* op, const Tensor& t, const char* what) {
  WICK_CHECK(t.defined() && (t.dim() == 3 || t.dim() == 4), op, ": expected a 3-d or 4-d ", what, ", got ",
             t.defined() ? shape_str(t.shape()) : "undefined");
  WICK_CHECK(is_floating(t.dtype()), op, ": expected a floating ", what, ", got ", dtype_name(t.dtype()), " ",
             shape_str(t.shape()));
}

Tensor as_4d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0).contiguous() : t.contiguous(); }

// The output shape (input's rank) for a window over `input_shape`.
Shape window_out_shape(const char* op, const Shape& input_shape, const PoolParams& p, bool ceil_mode) {
  Shape out = input_shape;
  const size_t base = input_shape.size() - 2;
  for (int d = 0; d < 2; ++d) {
    const int64_t k = p.kernel[d], s = p.stride[d], pad = p.padding[d], dil = p.dilation[d];
    WICK_CHECK(k >= 1 && s >= 1 && dil >= 1 && pad >= 0, op,
               ": kernel, stride and dilation must be positive and padding non-negative, got kernel (", p.kernel[0],
               ", ", p.kernel[1], "), stride (", p.stride[0], ", ", p.stride[1], "), padding (", p.padding[0], ", ",
               p.padding[1], ")");
    WICK_CHECK(2 * pad <= k, op, ": padding (", p.padding[0], ", ", p.padding[1],
               ") must be at most half the kernel (", p.kernel[0], ", ", p.kernel[1], ")");
    const int64_t in = input_shape[base + d], span = dil * (k - 1) + 1;
    // PyTorch's formula: floor (or, in ceil_mode, ceiling) of room / s, plus one, where room
    // may be negative; in ceil_mode a window may then overhang the padded input.
    const int64_t room = in + 2 * pad - span + (ceil_mode ? s - 1 : 0);
    int64_t o = (room >= 0 ? room / s : -((-room + s - 1) / s)) + 1;
    // A window that would start in the right padding is dropped.
    if (ceil_mode && (o - 1) * s >= in + pad) --o;
    WICK_CHECK(o >= 1, op, ": output size would be <= 0: input ", shape_str(input_shape), " padded by ", pad,
               " is smaller than the window (", span, ")", ceil_mode ? "" : " (ceil_mode may allow it)");
    out[base + d] = o;
  }
  return out;
}

PoolParams make_params(Size2 kernel, std::optional<Size2> stride, Size2 padding, Size2 dilation,
                       bool count_include_pad) {
  const Size2 s = stride.value_or(kernel);
  PoolParams p;
  p.kernel[0] = kernel.h, p.kernel[1] = kernel.w;
  p.stride[0] = s.h, p.stride[1] = s.w;
  p.padding[0] = padding.h, p.padding[1] = padding.w;
  p.dilation[0] = dilation.h, p.dilation[1] = dilation.w;
  p.count_include_pad = count_include_pad;
  return p;
}

// grad_out must have the shape the forward produced from `input_shape`.
void check_grad(const char* op, const Tensor& grad_out, const Shape& input_shape, const Shape& expected) {
  check_input(op, grad_out, "grad_out");
  WICK_CHECK(grad_out.shape() == expected, op, ": grad_out ", shape_str(grad_out.shape()), " does not match ",
             shape_str(expected), ", the output for input ", shape_str(input_shape));
}

// A 4-d view of a 3- or 4-d result tensor (its memory is contiguous).
Tensor view_4d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

}  // namespace

std::pair<Tensor, Tensor> max_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride, Size2 padding,
                                     Size2 dilation, bool ceil_mode) {
  const char* op = "max_pool2d";
  check_input(op, input, "input");
  const PoolParams p = make_params(kernel, stride, padding, dilation, true);
  const Shape shape = window_out_shape(op, input.shape(), p, ceil_mode);
  Tensor out = empty(shape, input.options());
  Tensor indices = empty(shape, Options(DType::Int64, input.device()));
  kernel_for(&KernelTable::max_pool2d_forward, op, input.device())(view_4d(out), view_4d(indices),
                                                                        as_4d(input), p);
  return {out, indices};
}

Tensor avg_pool2d(const Tensor& input, Size2 kernel, std::optional<Size2> stride, Size2 padding, bool ceil_mode,
                  bool count_include_pad) {
  const char* op = "avg_pool2d";
  check_input(op, input, "input");
  const PoolParams p = make_params(kernel, stride, padding, 1, count_include_pad);
  Tensor out = empty(window_out_shape(op, input.shape(), p, ceil_mode), input.options());
  kernel_for(&KernelTable::avg_pool2d_forward, op, input.device())(view_4d(out), as_4d(input), p);
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  const char* op = "adaptive_avg_pool2d";
  check_input(op, input, "input");
  WICK_CHECK(output_size.h >= 0 && output_size.w >= 0, op, ": output size must be non-negative, got (",
             output_size.h, ", ", output_size.w, ") for input ", shape_str(input.shape()));
  Shape shape = input.shape();
  shape[shape.size() - 2] = output_size.h;
  shape[shape.size() - 1] = output_size.w;
  WICK_CHECK(input.numel() == 0 || (input.size(-2) > 0 && input.size(-1) > 0), op,
             ": input ", shape_str(input.shape()), " has an empty plane");
  Tensor out = empty(shape, input.options());
  if (out.numel() == 0) return out;  // an output size of 0, as PyTorch allows
  kernel_for(&KernelTable::adaptive_avg_pool2d_forward, op, input.device())(view_4d(out), as_4d(input));
  return out;
}

Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& input_shape) {
  const char* op = "max_pool2d_backward";
  check_input(op, grad_out, "grad_out");
  WICK_CHECK(indices.defined() && indices.dtype() == DType::Int64 && indices.shape() == grad_out.shape() &&
                 indices.device() == grad_out.device(),
             op, ": expected int64 indices of grad_out's shape ", shape_str(grad_out.shape()), " and device");
  WICK_CHECK(input_shape.size() == static_cast<size_t>(grad_out.dim()), op, ": input shape ",
             shape_str(input_shape), " and grad_out ", shape_str(grad_out.shape()), " differ in rank");
  Tensor grad_in = empty(input_shape, grad_out.options());
  kernel_for(&KernelTable::max_pool2d_backward, op, grad_out.device())(view_4d(grad_in), as_4d(grad_out),
                                                                               as_4d(indices));
  return grad_in;
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, Size2 kernel,
                           std::optional<Size2> stride, Size2 padding, bool ceil_mode, bool count_include_pad) {
  const char* op = "avg_pool2d_backward";
  const PoolParams p = make_params(kernel, stride, padding, 1, count_include_pad);
  WICK_CHECK(input_shape.size() == 3 || input_shape.size() == 4, op, ": expected a 3-d or 4-d input shape, got ",
             shape_str(input_shape));
  check_grad(op, grad_out, input_shape, window_out_shape(op, input_shape, p, ceil_mode));
  Tensor grad_in = empty(input_shape, grad_out.options());
  kernel_for(&KernelTable::avg_pool2d_backward, op, grad_out.device())(view_4d(grad_in), as_4d(grad_out), p);
  return grad_in;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape) {
  const char* op = "adaptive_avg_pool2d_backward";
  check_input(op, grad_out, "grad_out");
  WICK_CHECK(input_shape.size() == static_cast<size_t>(grad_out.dim()), op, ": input shape ",
             shape_str(input_shape), " and grad_out ", shape_str(grad_out.shape()), " differ in rank");
  // No output cell (an output size of 0) reads the input: its gradient is 0.
  if (grad_out.numel() == 0) return zeros(input_shape, grad_out.options());
  Tensor grad_in = empty(input_shape, grad_out.options());
  kernel_for(&KernelTable::adaptive_avg_pool2d_backward, op, grad_out.device())(view_4d(grad_in),
                                                                                        as_4d(grad_out));
  return grad_in;
}

}  // namespace wick
