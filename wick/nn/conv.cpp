#include <wick/nn/conv.h>

#include <wick/autograd/composites.h>
#include <wick/autograd/nn_ops.h>
#include <wick/nn/init.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

// Checks the channel counts and the groups, then registers weight (of `weight_shape`) and bias.
void make_parameters(Module& m, int64_t in, int64_t out, int64_t groups, bool with_bias, const Shape& weight_shape,
                     const Options& o, Variable& weight, Variable& bias) {
  WICK_CHECK(in > 0 && out > 0, m.type_name(), ": channel counts must be positive, got in_channels=", in,
             ", out_channels=", out);
  WICK_CHECK(groups > 0 && in % groups == 0 && out % groups == 0, m.type_name(), ": groups=", groups,
             " must divide in_channels=", in, " and out_channels=", out);
  WICK_CHECK(is_floating(o.dtype), m.type_name(), ": parameters must be floating, not ", dtype_name(o.dtype));
  for (int64_t k : weight_shape)
    WICK_CHECK(k > 0, m.type_name(), ": kernel sizes must be positive, weight shape would be ",
               shape_str(weight_shape));
  weight = m.register_parameter("weight", empty(weight_shape, o));
  if (with_bias) bias = m.register_parameter("bias", empty({out}, o));
}

Tensor data_or_undefined(const Variable& v) { return v.defined() ? v.data() : Tensor(); }

// Per spatial dim: stride, kernel, dilation, and the (before, after) padding.
struct SpatialDim {
  int64_t stride, kernel, dilation, before, after;
};

// Before and after padding of each dim: the given sizes, none (Valid), or Same's
// dilation * (kernel - 1) with the extra one after.
void resolve_padding(const char* op, std::vector<SpatialDim>& dims, const std::vector<int64_t>* sizes,
                     PaddingKind kind) {
  for (size_t i = 0; i < dims.size(); ++i) {
    SpatialDim& d = dims[i];
    if (sizes) {
      WICK_CHECK((*sizes)[i] >= 0, op, ": padding must be non-negative, got ", (*sizes)[i]);
      d.before = d.after = (*sizes)[i];
    } else if (kind == PaddingKind::Valid) {
      d.before = d.after = 0;
    } else {
      const int64_t total = d.dilation * (d.kernel - 1);
      d.before = total / 2;
      d.after = total - d.before;
    }
  }
}

// The convolution of x with dims' padding filled as `mode`: zeros by the convolution itself
// (an odd Same total first padded explicitly after), other modes by pad() and a convolution
// without padding.
Variable padded_conv(const char* op, const Variable& x, const Variable& weight, const Variable& bias,
                     const std::vector<SpatialDim>& dims, int64_t groups, PaddingMode mode) {
  const int64_t nd = static_cast<int64_t>(dims.size());
  WICK_CHECK(x.defined() && (x.dim() == nd + 1 || x.dim() == nd + 2), op, ": expected a ", nd + 1, "-d or ",
             nd + 2, "-d input, got ", x.defined() ? shape_str(x.shape()) : "undefined");
  std::vector<int64_t> pads;  // pad()'s order: (before, after) from the last dim backwards
  bool symmetric = true;
  for (int64_t i = nd - 1; i >= 0; --i) {
    const SpatialDim& d = dims[static_cast<size_t>(i)];
    const int64_t size = x.size(x.dim() - nd + i);
    if (mode == PaddingMode::Reflect)
      WICK_CHECK(d.before < size && d.after < size, op, ": padding_mode reflect needs padding smaller than the input "
                 "size, got padding (", d.before, ", ", d.after, ") for a dim of size ", size, " (input ",
                 shape_str(x.shape()), ")");
    if (mode == PaddingMode::Circular)
      WICK_CHECK(d.before <= size && d.after <= size, op, ": padding_mode circular needs padding no larger than the "
                 "input size, got padding (", d.before, ", ", d.after, ") for a dim of size ", size, " (input ",
                 shape_str(x.shape()), ")");
    if (mode == PaddingMode::Replicate && d.before + d.after > 0)
      WICK_CHECK(size > 0, op, ": padding_mode replicate needs a non-empty input, got ", shape_str(x.shape()));
    if (mode == PaddingMode::Zeros) {
      pads.push_back(0);
      pads.push_back(d.after - d.before);
    } else {
      pads.push_back(d.before);
      pads.push_back(d.after);
    }
    symmetric = symmetric && d.before == d.after;
  }
  Variable input = x;
  std::vector<int64_t> conv_pad(static_cast<size_t>(nd), 0);
  if (mode == PaddingMode::Zeros) {
    if (!symmetric) input = pad(x, pads, PadMode::Constant, 0.0);
    for (int64_t i = 0; i < nd; ++i) conv_pad[static_cast<size_t>(i)] = dims[static_cast<size_t>(i)].before;
  } else {
    const PadMode pm = mode == PaddingMode::Reflect     ? PadMode::Reflect
                       : mode == PaddingMode::Replicate ? PadMode::Replicate
                                                        : PadMode::Circular;
    input = pad(x, pads, pm);
  }
  if (nd == 1) return conv1d(input, weight, bias, dims[0].stride, conv_pad[0], dims[0].dilation, groups);
  return conv2d(input, weight, bias, {dims[0].stride, dims[1].stride}, {conv_pad[0], conv_pad[1]},
                {dims[0].dilation, dims[1].dilation}, groups);
}

void check_same_stride(const char* op, const std::vector<SpatialDim>& dims, bool same) {
  if (!same) return;
  for (const SpatialDim& d : dims)
    WICK_CHECK(d.stride == 1, op, ": padding Same is not supported for strided convolutions, got stride ", d.stride);
}

std::vector<SpatialDim> dims_2d(const Variable& weight, Size2 stride, Size2 dilation) {
  WICK_CHECK(weight.defined() && weight.dim() == 4, "conv2d: weight must be [out, in / groups, kh, kw], got ",
             weight.defined() ? shape_str(weight.shape()) : "undefined");
  return {{stride.h, weight.size(2), dilation.h, 0, 0}, {stride.w, weight.size(3), dilation.w, 0, 0}};
}

std::vector<SpatialDim> dims_1d(const Variable& weight, int64_t stride, int64_t dilation) {
  WICK_CHECK(weight.defined() && weight.dim() == 3, "conv1d: weight must be [out, in / groups, k], got ",
             weight.defined() ? shape_str(weight.shape()) : "undefined");
  return {{stride, weight.size(2), dilation, 0, 0}};
}

}  // namespace

Variable conv2d(const Variable& input, const Variable& weight, const Variable& bias, Size2 stride,
                PaddingKind padding, Size2 dilation, int64_t groups) {
  std::vector<SpatialDim> dims = dims_2d(weight, stride, dilation);
  check_same_stride("conv2d", dims, padding == PaddingKind::Same);
  resolve_padding("conv2d", dims, nullptr, padding);
  return padded_conv("conv2d", input, weight, bias, dims, groups, PaddingMode::Zeros);
}

Variable conv1d(const Variable& input, const Variable& weight, const Variable& bias, int64_t stride,
                PaddingKind padding, int64_t dilation, int64_t groups) {
  std::vector<SpatialDim> dims = dims_1d(weight, stride, dilation);
  check_same_stride("conv1d", dims, padding == PaddingKind::Same);
  resolve_padding("conv1d", dims, nullptr, padding);
  return padded_conv("conv1d", input, weight, bias, dims, groups, PaddingMode::Zeros);
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel, const Conv2dOptions& conv,
               const Options& o, Generator* g)
    : conv_(conv) {
  make_parameters(*this, in_channels, out_channels, conv.groups, conv.bias,
                  {out_channels, in_channels / std::max<int64_t>(conv.groups, 1), kernel.h, kernel.w}, o, weight, bias);
  if (const PaddingKind* kind = std::get_if<PaddingKind>(&conv.padding))
    check_same_stride("Conv2d", dims_2d(weight, conv.stride, conv.dilation), *kind == PaddingKind::Same);
  reset_parameters(g);
}

void Conv2d::reset_parameters(Generator* g) { init::layer_default_(weight.data(), data_or_undefined(bias), g); }

Variable Conv2d::forward(const Variable& x) {
  std::vector<SpatialDim> dims = dims_2d(weight, conv_.stride, conv_.dilation);
  if (const Size2* sizes = std::get_if<Size2>(&conv_.padding)) {
    const std::vector<int64_t> hw = {sizes->h, sizes->w};
    resolve_padding("Conv2d", dims, &hw, PaddingKind::Valid);
  } else {
    resolve_padding("Conv2d", dims, nullptr, std::get<PaddingKind>(conv_.padding));
  }
  return padded_conv("Conv2d", x, weight, bias, dims, conv_.groups, conv_.padding_mode);
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel, const Conv1dOptions& conv,
               const Options& o, Generator* g)
    : conv_(conv) {
  make_parameters(*this, in_channels, out_channels, conv.groups, conv.bias,
                  {out_channels, in_channels / std::max<int64_t>(conv.groups, 1), kernel}, o, weight, bias);
  if (const PaddingKind* kind = std::get_if<PaddingKind>(&conv.padding))
    check_same_stride("Conv1d", dims_1d(weight, conv.stride, conv.dilation), *kind == PaddingKind::Same);
  reset_parameters(g);
}

void Conv1d::reset_parameters(Generator* g) { init::layer_default_(weight.data(), data_or_undefined(bias), g); }

Variable Conv1d::forward(const Variable& x) {
  std::vector<SpatialDim> dims = dims_1d(weight, conv_.stride, conv_.dilation);
  if (const int64_t* size = std::get_if<int64_t>(&conv_.padding)) {
    const std::vector<int64_t> l = {*size};
    resolve_padding("Conv1d", dims, &l, PaddingKind::Valid);
  } else {
    resolve_padding("Conv1d", dims, nullptr, std::get<PaddingKind>(conv_.padding));
  }
  return padded_conv("Conv1d", x, weight, bias, dims, conv_.groups, conv_.padding_mode);
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2 kernel,
                                 const ConvTranspose2dOptions& conv, const Options& o, Generator* g)
    : conv_(conv) {
  make_parameters(*this, in_channels, out_channels, conv.groups, conv.bias,
                  {in_channels, out_channels / std::max<int64_t>(conv.groups, 1), kernel.h, kernel.w}, o, weight,
                  bias);
  reset_parameters(g);
}

void ConvTranspose2d::reset_parameters(Generator* g) {
  init::layer_default_(weight.data(), data_or_undefined(bias), g);
}

Variable ConvTranspose2d::forward(const Variable& x) {
  return conv_transpose2d(x, weight, bias, conv_.stride, conv_.padding, conv_.output_padding, conv_.groups,
                          conv_.dilation);
}

}  // namespace wick
