// Backward of the convolutions. For out = conv2d(x, w) + b, with g = d loss / d out:
//   dx = conv2d_backward_input(g, w)  (a transposed convolution of g),
//   dw = conv2d_backward_weight(g, x) (the correlation of g with x), db = g summed over N, H, W.
// conv_transpose2d is conv2d's input gradient, so its gradients swap roles:
//   dx = conv2d(g, w), dw = conv2d_backward_weight(x, g).
// conv1d and unbatched inputs run as 4-d conv2d; the gradients are reshaped back.
#include <wick/autograd/autocast.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/composites.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/autograd/node.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

// What both convolution nodes keep: 4-d views of the operands and the 4-d output shape,
// and the geometry.
struct ConvSaved {
  Tensor input4, weight4;
  Shape out4;
  Size2 stride, padding, dilation;
  int64_t groups;
};

class ConvolutionBackward final : public Node {
 public:
  ConvolutionBackward(ConvSaved s, bool transposed) : s_(std::move(s)), transposed_(transposed) {}
  // (Names without digits: the gradcheck coverage scan matches [A-Za-z]+Backward.)
  const char* name() const override { return transposed_ ? "ConvTransposeBackward" : "ConvolutionBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    // The gradients below are computed with tensor kernels, so they would silently be
    // constants in a create_graph backward: refuse instead.
    WICK_CHECK(!grad_enabled(), name(), ": double backward (create_graph) is not supported");
    const Tensor g4 = g[0].data().reshape(s_.out4);
    std::vector<Variable> grads(next_edges().size());
    if (g4.numel() == 0) {
      // An empty output (a transposed conv's zero-size dim, or no batch) passes no gradient;
      // the kernels are not asked to convolve with nothing.
      for (size_t i = 0; i < grads.size(); ++i)
        if (next_edges()[i].fn) grads[i] = Variable(zeros(input_meta()[i].shape, g4.options()));
      return grads;
    }
    if (next_edges()[0].fn) {
      Tensor gi = transposed_ ? conv2d(g4, s_.weight4, Tensor(), s_.stride, s_.padding, s_.dilation, s_.groups)
                              : conv2d_backward_input(g4, s_.weight4, s_.input4.shape(), s_.stride, s_.padding,
                                                      s_.dilation, s_.groups);
      grads[0] = Variable(gi.reshape(input_meta()[0].shape));
    }
    if (next_edges()[1].fn) {
      Tensor gw = transposed_ ? conv2d_backward_weight(s_.input4, g4, s_.weight4.shape(), s_.stride, s_.padding,
                                                       s_.dilation, s_.groups)
                              : conv2d_backward_weight(g4, s_.input4, s_.weight4.shape(), s_.stride, s_.padding,
                                                       s_.dilation, s_.groups);
      grads[1] = Variable(gw.reshape(input_meta()[1].shape));
    }
    if (grads.size() == 3 && next_edges()[2].fn) grads[2] = Variable(g4.sum({0, 2, 3}));
    return grads;
  }
  bool release_saved() override { return release(s_.input4, s_.weight4); }

 private:
  ConvSaved s_;
  bool transposed_;
};

// Records the node over input, weight and (when defined) bias.
void record_conv(const Variable& input, const Variable& weight, const Variable& bias, Variable& out, ConvSaved s,
                 bool transposed) {
  if (bias.defined())
    record<ConvolutionBackward>({&input, &weight, &bias}, {&out}, std::move(s), transposed);
  else
    record<ConvolutionBackward>({&input, &weight}, {&out}, std::move(s), transposed);
}

Tensor data_or_none(const Variable& v) { return v.defined() ? v.data() : Tensor(); }

// A 3-d input, output or shape as its batch of one.
Tensor batched(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

}  // namespace

Variable conv2d(const Variable& input_in, const Variable& weight_in, const Variable& bias_in, Size2 stride,
                Size2 padding, Size2 dilation, int64_t groups) {
  AutocastArgs autocast(AutocastOp::conv2d, input_in, weight_in, bias_in);
  const Variable& input = autocast[0];
  const Variable& weight = autocast[1];
  const Variable& bias = autocast[2];
  Tensor y = conv2d(input.data(), weight.data(), data_or_none(bias), stride, padding, dilation, groups);
  Variable out(y);
  ConvSaved s{batched(input.data()), weight.data(), batched(y).shape(), stride, padding, dilation, groups};
  record_conv(input, weight, bias, out, std::move(s), false);
  return out;
}

Variable conv1d(const Variable& input_in, const Variable& weight_in, const Variable& bias_in, int64_t stride,
                int64_t padding, int64_t dilation, int64_t groups) {
  AutocastArgs autocast(AutocastOp::conv1d, input_in, weight_in, bias_in);
  const Variable& input = autocast[0];
  const Variable& weight = autocast[1];
  const Variable& bias = autocast[2];
  Tensor y = conv1d(input.data(), weight.data(), data_or_none(bias), stride, padding, dilation, groups);
  Variable out(y);
  const Tensor x3 = input.dim() == 2 ? input.data().unsqueeze(0) : input.data();
  const Tensor y3 = y.dim() == 2 ? y.unsqueeze(0) : y;
  ConvSaved s{x3.unsqueeze(2), weight.data().unsqueeze(2), y3.unsqueeze(2).shape(), Size2(1, stride),
              Size2(0, padding), Size2(1, dilation), groups};
  record_conv(input, weight, bias, out, std::move(s), false);
  return out;
}

Variable conv_transpose2d(const Variable& input_in, const Variable& weight_in, const Variable& bias_in, Size2 stride,
                          Size2 padding, Size2 output_padding, int64_t groups, Size2 dilation) {
  AutocastArgs autocast(AutocastOp::conv_transpose2d, input_in, weight_in, bias_in);
  const Variable& input = autocast[0];
  const Variable& weight = autocast[1];
  const Variable& bias = autocast[2];
  if ((output_padding.h >= stride.h || output_padding.w >= stride.w) && needs_grad({&input, &weight, &bias})) {
    // As the Tensor form: the whole transposed conv, then cut (or zero-extended) by pad,
    // so that the node only ever sees a consistent geometry.
    conv_transpose2d_shape(input.data(), weight.data(), data_or_none(bias), stride, padding, output_padding, groups,
                           dilation);  // the argument checks and their messages
    Variable full = conv_transpose2d(input, weight, Variable(), stride, 0, 0, groups, dilation);
    Variable y = pad(full, {-padding.w, output_padding.w - padding.w, -padding.h, output_padding.h - padding.h});
    if (!bias.defined()) return y;
    return add(y, reshape(bias, {bias.size(0), 1, 1}));
  }
  Tensor y = conv_transpose2d(input.data(), weight.data(), data_or_none(bias), stride, padding, output_padding,
                              groups, dilation);
  Variable out(y);
  ConvSaved s{batched(input.data()), weight.data(), batched(y).shape(), stride, padding, dilation, groups};
  record_conv(input, weight, bias, out, std::move(s), true);
  return out;
}

}  // namespace wick
