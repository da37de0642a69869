#include <wick/nn/conv.h>

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

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel, const Conv2dOptions& conv,
               const Options& o, Generator* g)
    : conv_(conv) {
  make_parameters(*this, in_channels, out_channels, conv.groups, conv.bias,
                  {out_channels, in_channels / std::max<int64_t>(conv.groups, 1), kernel.h, kernel.w}, o, weight, bias);
  reset_parameters(g);
}

void Conv2d::reset_parameters(Generator* g) { init::layer_default_(weight.data(), data_or_undefined(bias), g); }

Variable Conv2d::forward(const Variable& x) {
  return conv2d(x, weight, bias, conv_.stride, conv_.padding, conv_.dilation, conv_.groups);
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel, const Conv1dOptions& conv,
               const Options& o, Generator* g)
    : conv_(conv) {
  make_parameters(*this, in_channels, out_channels, conv.groups, conv.bias,
                  {out_channels, in_channels / std::max<int64_t>(conv.groups, 1), kernel}, o, weight, bias);
  reset_parameters(g);
}

void Conv1d::reset_parameters(Generator* g) { init::layer_default_(weight.data(), data_or_undefined(bias), g); }

Variable Conv1d::forward(const Variable& x) {
  return conv1d(x, weight, bias, conv_.stride, conv_.padding, conv_.dilation, conv_.groups);
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
