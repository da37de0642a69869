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
  ActivationBackward(const char* name, UnaryOp grad_op, Variable x)
      : name_(name), grad_op_(grad_op), x_(std::move(x)) {}
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

}  // namespace

// The unary table's Node rows with these nodes (WICK_ACTIVATION_NODES in wick/autograd/derivatives.h).
#include "wick/autograd/generated/activation_nodes_defs.inc"

Variable gelu(const Variable& x, GeluApproximation approximate) {
  Variable out(gelu(x.data(), approximate));
  if (approximate == GeluApproximation::Tanh)
    record<ActivationBackward>({&x}, {&out}, "GeluTanhBackward", UnaryOp::GeluTanhGrad, x);
  else record<ActivationBackward>({&x}, {&out}, "GeluBackward", UnaryOp::GeluErfGrad, x);
  return out;
}

}  // namespace wick
