// Backward nodes of the activations: g * f'(x), f' evaluated from the saved input.
#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

#include <cmath>

namespace wick {

namespace {

// Activations whose derivative is an elementwise function of the input: g * f'(x). A plain
// backward takes f'(x) from the tensor kernels' fused *Grad ops (relu: x > 0); with
// create_graph (grad mode on during backward) f'(x) is built from differentiable ops
// instead, so double backward works.
class ActivationBackward final : public Node {
 public:
  // grad_op: the *Grad UnaryOp giving f'(x); Relu stands for the step function x > 0.
  ActivationBackward(const char* name, UnaryOp grad_op, Variable x) : name_(name), grad_op_(grad_op), x_(std::move(x)) {}
  const char* name() const override { return name_; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const Tensor& x = x_.data();
    // PyTorch's threshold_backward: 0 where x <= 0, so a NaN input passes the gradient.
    if (grad_op_ == UnaryOp::Relu) return {mul(g[0], Variable(logical_not(le(x, 0)).to(x.dtype())))};
    if (!grad_enabled()) return {mul(g[0], Variable(unary_grad(grad_op_, x)))};
    return {mul(g[0], differentiable_derivative())};
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable differentiable_derivative() const {
    const Variable& x = x_;
    switch (grad_op_) {
      case UnaryOp::TanhGrad:  // 1 - tanh^2
        return sub(1.0, square(tanh(x)));
      case UnaryOp::SigmoidGrad: {  // s (1 - s)
        Variable sg = sigmoid(x);
        return mul(sg, sub(1.0, sg));
      }
      case UnaryOp::SiluGrad: {  // s (1 + x (1 - s))
        Variable sg = sigmoid(x);
        return mul(sg, add(mul(x, sub(1.0, sg)), 1.0));
      }
      case UnaryOp::GeluErfGrad:  // Phi(x) + x phi(x)
        return add(mul(add(erf(mul(x, M_SQRT1_2)), 1.0), 0.5),
                   mul(mul(x, exp(mul(square(x), -0.5))), 1.0 / std::sqrt(2 * M_PI)));
      default: {  // GeluTanhGrad: u = k (x + c x^3); 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 c x^2)
        const double k = std::sqrt(2 / M_PI), c = 0.044715;
        Variable t = tanh(mul(add(x, mul(pow(x, 3.0), c)), k));
        Variable du = mul(add(mul(square(x), 3 * c), 1.0), k);
        return add(mul(add(t, 1.0), 0.5), mul(mul(mul(x, sub(1.0, square(t))), du), 0.5));
      }
    }
  }

  const char* name_;
  UnaryOp grad_op_;
  Variable x_;
};


// Piecewise-linear activations: g * mask, the mask (a constant of x) built at backward.
class MaskedLinearBackward final : public Node {
 public:
  enum class Kind { LeakyRelu, Clamp };
  MaskedLinearBackward(Kind kind, Tensor x, double p0, double p1, bool has_lo, bool has_hi)
      : kind_(kind), x_(std::move(x)), p0_(p0), p1_(p1), has_lo_(has_lo), has_hi_(has_hi) {}
  const char* name() const override { return kind_ == Kind::LeakyRelu ? "LeakyReluBackward" : "ClampBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Tensor m;
    if (kind_ == Kind::LeakyRelu) {
      m = where(gt(x_, 0), Scalar(1.0), scalar_tensor(p0_, x_.options()));
    } else {
      // Strictly inside the bounds (PyTorch 2.15 gives 0 at a bound, and at NaN).
      m = ones_like(x_);
      if (has_lo_) m = mul(m, gt(x_, p0_));
      if (has_hi_) m = mul(m, lt(x_, p1_));
      m = m.to(x_.dtype());
    }
    return {mul(g[0], Variable(m))};
  }
  bool release_saved() override { return release(x_); }

 private:
  Kind kind_;
  Tensor x_;
  double p0_, p1_;
  bool has_lo_, has_hi_;
};

// softplus'(x) = sigmoid(beta*x), 1 where beta*x > threshold (the linear region).
class SoftplusBackward final : public Node {
 public:
  SoftplusBackward(Variable x, double beta, double threshold) : x_(std::move(x)), beta_(beta), threshold_(threshold) {}
  const char* name() const override { return "SoftplusBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable bx = mul(x_, beta_);
    Tensor linear = gt(bx.data(), threshold_);
    return {mul(g[0], where(linear, constant_like(g[0], 1), sigmoid(bx)))};
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable x_;
  double beta_, threshold_;
};

}  // namespace

Variable relu(const Variable& x) {
  Variable out(relu(x.data()));
  record<ActivationBackward>({&x}, {&out}, "ReluBackward", UnaryOp::Relu, x);
  return out;
}

Variable tanh(const Variable& x) {
  Variable out(tanh(x.data()));
  record<ActivationBackward>({&x}, {&out}, "TanhBackward", UnaryOp::TanhGrad, x);
  return out;
}

Variable sigmoid(const Variable& x) {
  Variable out(sigmoid(x.data()));
  record<ActivationBackward>({&x}, {&out}, "SigmoidBackward", UnaryOp::SigmoidGrad, x);
  return out;
}

Variable gelu(const Variable& x, GeluApproximation approximate) {
  Variable out(gelu(x.data(), approximate));
  if (approximate == GeluApproximation::Tanh)
    record<ActivationBackward>({&x}, {&out}, "GeluTanhBackward", UnaryOp::GeluTanhGrad, x);
  else
    record<ActivationBackward>({&x}, {&out}, "GeluBackward", UnaryOp::GeluErfGrad, x);
  return out;
}

Variable silu(const Variable& x) {
  Variable out(silu(x.data()));
  record<ActivationBackward>({&x}, {&out}, "SiluBackward", UnaryOp::SiluGrad, x);
  return out;
}

Variable softplus(const Variable& x_in, double beta, double threshold) {
  AutocastArgs autocast(AutocastOp::softplus, x_in);
  const Variable& x = autocast[0];
  Variable out(softplus(x.data(), beta, threshold));
  record<SoftplusBackward>({&x}, {&out}, x, beta, threshold);
  return out;
}

Variable leaky_relu(const Variable& x, double negative_slope) {
  Variable out(leaky_relu(x.data(), negative_slope));
  record<MaskedLinearBackward>({&x}, {&out}, MaskedLinearBackward::Kind::LeakyRelu, x.data(), negative_slope, 0.0,
                               false, false);
  return out;
}

Variable clamp(const Variable& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  Variable out(clamp(x.data(), lo, hi));
  record<MaskedLinearBackward>({&x}, {&out}, MaskedLinearBackward::Kind::Clamp, x.data(),
                               lo ? lo->to_double() : 0.0, hi ? hi->to_double() : 0.0, lo.has_value(), hi.has_value());
  return out;
}

}  // namespace wick
