// Backward of batch, layer and group norm: one node per op calling the fused backward helper
// of wick/tensor/norm.h with the statistics saved by the forward. Weight and bias are optional
// inputs, so each node records which of them it has and which edge each gradient goes to.
#include <wick/autograd/autocast.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>

#include <functional>

namespace wick {

namespace {

// The gradient function a node calls: (grad_out, mask) -> NormGrads.
using NormBackwardFn = std::function<NormGrads(const Tensor&, std::array<bool, 3>)>;

class NormBackward final : public Node {
 public:
  NormBackward(const char* name, bool has_weight, bool has_bias, NormBackwardFn fn)
      : name_(name), has_weight_(has_weight), has_bias_(has_bias), fn_(std::move(fn)) {}
  const char* name() const override { return name_; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    // The gradients come from a fused kernel, so under create_graph they would silently be
    // constants (a wrong second derivative): refuse instead, as conv does.
    WICK_CHECK(!grad_enabled(), name_, ": double backward (create_graph) is not supported");
    const size_t w_edge = 1, b_edge = has_weight_ ? 2 : 1;
    auto wanted = [&](bool has, size_t edge) { return has && next_edges()[edge].fn != nullptr; };
    const std::array<bool, 3> mask{next_edges()[0].fn != nullptr, wanted(has_weight_, w_edge),
                                   wanted(has_bias_, b_edge)};
    NormGrads r = fn_(g[0].data(), mask);
    std::vector<Variable> out(next_edges().size());
    if (r.input.defined()) out[0] = Variable(r.input);
    if (has_weight_ && r.weight.defined()) out[w_edge] = Variable(r.weight);
    if (has_bias_ && r.bias.defined()) out[b_edge] = Variable(r.bias);
    return out;
  }
  bool release_saved() override {
    fn_ = nullptr;
    return true;
  }

 private:
  const char* name_;
  bool has_weight_, has_bias_;
  NormBackwardFn fn_;
};

Tensor data_or_none(const Variable& v) { return v.defined() ? v.data() : Tensor(); }

// Records a NormBackward over input and whichever of weight, bias are defined.
void record_norm(const char* name, const Variable& input, const Variable& weight, const Variable& bias, Variable& out,
                 NormBackwardFn fn) {
  const bool w = weight.defined(), b = bias.defined();
  if (w && b)
    record<NormBackward>({&input, &weight, &bias}, {&out}, name, w, b, std::move(fn));
  else if (w)
    record<NormBackward>({&input, &weight}, {&out}, name, w, b, std::move(fn));
  else if (b)
    record<NormBackward>({&input, &bias}, {&out}, name, w, b, std::move(fn));
  else
    record<NormBackward>({&input}, {&out}, name, w, b, std::move(fn));
}

}  // namespace

Variable batch_norm(const Variable& input_in, const Variable& weight_in, const Variable& bias_in,
                    const Tensor& running_mean, const Tensor& running_var, bool training, double momentum, double eps) {
  AutocastArgs autocast(AutocastOp::batch_norm, input_in, weight_in, bias_in);
  const Variable& input = autocast[0];
  const Variable& weight = autocast[1];
  const Variable& bias = autocast[2];
  NormResult r = batch_norm(input.data(), data_or_none(weight), data_or_none(bias), running_mean, running_var, training,
                            momentum, eps);
  Variable out(r.out);
  record_norm("BatchNormBackward", input, weight, bias, out,
              [x = input.data(), w = data_or_none(weight), mean = r.mean, invstd = r.invstd, training](
                  const Tensor& g, std::array<bool, 3> mask) {
                return batch_norm_backward(g, x, w, mean, invstd, training, mask);
              });
  return out;
}

Variable layer_norm(const Variable& input_in, const Shape& normalized_shape, const Variable& weight_in,
                    const Variable& bias_in, double eps) {
  AutocastArgs autocast(AutocastOp::layer_norm, input_in, weight_in, bias_in);
  const Variable& input = autocast[0];
  const Variable& weight = autocast[1];
  const Variable& bias = autocast[2];
  NormResult r = layer_norm(input.data(), normalized_shape, data_or_none(weight), data_or_none(bias), eps);
  Variable out(r.out);
  record_norm("LayerNormBackward", input, weight, bias, out,
              [x = input.data(), normalized_shape, w = data_or_none(weight), mean = r.mean, invstd = r.invstd](
                  const Tensor& g, std::array<bool, 3> mask) {
                return layer_norm_backward(g, x, normalized_shape, w, mean, invstd, mask);
              });
  return out;
}

Variable group_norm(const Variable& input_in, int64_t groups, const Variable& weight_in, const Variable& bias_in,
                    double eps) {
  AutocastArgs autocast(AutocastOp::group_norm, input_in, weight_in, bias_in);
  const Variable& input = autocast[0];
  const Variable& weight = autocast[1];
  const Variable& bias = autocast[2];
  NormResult r = group_norm(input.data(), groups, data_or_none(weight), data_or_none(bias), eps);
  Variable out(r.out);
  record_norm("GroupNormBackward", input, weight, bias, out,
              [x = input.data(), groups, w = data_or_none(weight), mean = r.mean, invstd = r.invstd](
                  const Tensor& g, std::array<bool, 3> mask) {
                return group_norm_backward(g, x, groups, w, mean, invstd, mask);
              });
  return out;
}

}  // namespace wick
