// Backward of batch, layer, group and RMS norm: one node per op calling the fused backward
// helper of wick/tensor/norm.h with the statistics saved by the forward. Weight and bias are
// optional inputs, so each node records which of them it has and which edge each gradient
// goes to. RMS norm's node computes with the kernel, or under create_graph with
// differentiable ops (so rms_norm stays twice differentiable, as the composite it replaced).
#include <wick/autograd/autocast.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>

#include <functional>
#include <limits>

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

// The trailing `k` dims of a tensor of `rank` dims, and the leading ones.
Dims trailing_dims(int64_t rank, int64_t k) {
  Dims d;
  for (int64_t i = rank - k; i < rank; ++i) d.push_back(i);
  return d;
}
Dims leading_dims(int64_t rank, int64_t k) {
  Dims d;
  for (int64_t i = 0; i < rank - k; ++i) d.push_back(i);
  return d;
}

// x / sqrt(mean(x^2) + e) * w over the trailing k dims, composed of differentiable ops in the
// statistics dtype `compute`, then cast back to x's dtype: the form rms_norm takes when its
// weight's dtype is not its input's.
Variable rms_norm_composite(const Variable& input, int64_t k, const Variable& weight, DType compute, double e) {
  const Variable x = to(input, compute);
  Variable y = mul(x, rsqrt(add(mean(square(x), trailing_dims(input.dim(), k), /*keepdim=*/true), e)));
  if (weight.defined()) y = mul(y, to(weight, compute));
  return to(y, input.dtype());
}

// The gradients of y = x * invstd * w with invstd = (mean(x^2) + e)^(-1/2) over the trailing
// k dims: dx = invstd * (g - xhat * mean(g xhat)) with g = dy * w and xhat = x * invstd, and
// dw = the sum of dy * xhat over the leading dims.
class RmsNormBackward final : public Node {
 public:
  RmsNormBackward(Variable input, Variable weight, Shape normalized_shape, Tensor invstd, double eps)
      : input_(std::move(input)), weight_(std::move(weight)), shape_(std::move(normalized_shape)),
        invstd_(std::move(invstd)), eps_(eps) {}
  const char* name() const override { return "RmsNormBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const bool has_weight = weight_.defined();
    const bool want_input = next_edges()[0].fn != nullptr, want_weight = has_weight && next_edges()[1].fn != nullptr;
    Variable dx, dw;
    if (grad_enabled()) {
      const int64_t k = static_cast<int64_t>(shape_.size()), rank = input_.dim();
      const DType compute = invstd_.dtype();
      const Variable x = to(input_, compute), dy = to(g[0], compute);
      const Variable inv = rsqrt(add(mean(square(x), trailing_dims(rank, k), true), eps_));
      const Variable xhat = mul(x, inv);
      const Variable gw = has_weight ? mul(dy, to(weight_, compute)) : dy;
      if (want_input)
        dx = to(mul(inv, sub(gw, mul(xhat, mean(mul(gw, xhat), trailing_dims(rank, k), true)))), input_.dtype());
      if (want_weight) {
        Variable p = mul(dy, xhat);
        if (rank > k) p = sum(p, leading_dims(rank, k));
        dw = to(p, weight_.dtype());
      }
    } else {
      NormGrads r = rms_norm_backward(g[0].data(), input_.data(), shape_, has_weight ? weight_.data() : Tensor(),
                                      invstd_, {want_input, want_weight});
      if (r.input.defined()) dx = Variable(r.input);
      if (r.weight.defined()) dw = Variable(r.weight);
    }
    if (has_weight) return {dx, dw};
    return {dx};
  }
  bool release_saved() override {
    input_ = Variable();
    weight_ = Variable();
    invstd_ = Tensor();
    return true;
  }

 private:
  Variable input_, weight_;
  Shape shape_;
  Tensor invstd_;
  double eps_;
};

}  // namespace

Variable rms_norm(const Variable& input_in, const Shape& normalized_shape, const Variable& weight_in,
                  std::optional<double> eps) {
  AutocastArgs autocast(AutocastOp::rms_norm, input_in, weight_in);
  const Variable& input = autocast[0];
  const Variable& weight = autocast[1];
  WICK_CHECK(input.defined() && input.data().is_floating_point(), "rms_norm: needs a floating input, got ",
             input.defined() ? dtype_name(input.dtype()) : "undefined");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  WICK_CHECK(k >= 1, "rms_norm: normalized_shape must have at least one dim");
  WICK_CHECK(input.dim() >= k && Shape(input.shape().end() - k, input.shape().end()) == normalized_shape,
             "rms_norm: normalized_shape ", shape_str(normalized_shape), " does not match the trailing dims of input ",
             shape_str(input.shape()));
  WICK_CHECK(!weight.defined() || weight.shape() == normalized_shape, "rms_norm: weight ",
             weight.defined() ? shape_str(weight.shape()) : "", " must have shape normalized_shape ",
             shape_str(normalized_shape));
  const DType compute = input.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const double e = eps.value_or(compute == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                          : std::numeric_limits<float>::epsilon());
  // A weight of another dtype (or device) than the input's: the composite's type promotion.
  if (weight.defined() && (weight.dtype() != input.dtype() || weight.device() != input.device()))
    return rms_norm_composite(input, k, weight, compute, e);
  NormResult r = rms_norm(input.data(), normalized_shape, data_or_none(weight), e);
  Variable out(r.out);
  if (weight.defined())
    record<RmsNormBackward>({&input, &weight}, {&out}, input, weight, normalized_shape, r.invstd, e);
  else
    record<RmsNormBackward>({&input}, {&out}, input, weight, normalized_shape, r.invstd, e);
  return out;
}

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
