// Backward nodes of the elementwise ops. For out = f(a, b) with broadcasting, the gradient
// w.r.t. each input is the chain-rule product summed back to that input's shape (sum_to).
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>

namespace wick {

namespace {

class AddBackward final : public Node {
 public:
  AddBackward(Shape a, Shape b, double b_sign) : a_(std::move(a)), b_(std::move(b)), b_sign_(b_sign) {}
  const char* name() const override { return b_sign_ > 0 ? "AddBackward" : "SubBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable gb = b_sign_ > 0 ? g[0] : neg(g[0]);
    return {sum_to(g[0], a_), sum_to(gb, b_)};
  }

 private:
  Shape a_, b_;
  double b_sign_;
};

// d(a*b) = g*b, g*a
class MulBackward final : public Node {
 public:
  MulBackward(Variable a, Variable b) : a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override { return "MulBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {sum_to(mul(g[0], b_), a_.shape()), sum_to(mul(g[0], a_), b_.shape())};
  }
  bool release_saved() override {
    a_ = b_ = Variable();
    return true;
  }

 private:
  Variable a_, b_;
};

// d(a/b) = g/b, -g*a/b^2
class DivBackward final : public Node {
 public:
  DivBackward(Variable a, Variable b) : a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override { return "DivBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable ga = div(g[0], b_);
    Variable gb = neg(div(mul(ga, a_), b_));
    return {sum_to(ga, a_.shape()), sum_to(gb, b_.shape())};
  }
  bool release_saved() override {
    a_ = b_ = Variable();
    return true;
  }

 private:
  Variable a_, b_;
};

// d(a*s) = g*s
class MulScalarBackward final : public Node {
 public:
  explicit MulScalarBackward(Scalar s) : s_(s) {}
  const char* name() const override { return "MulScalarBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {mul(g[0], s_)}; }

 private:
  Scalar s_;
};

class AddScalarBackward final : public Node {
 public:
  const char* name() const override { return "AddScalarBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {g[0]}; }
};

class NegBackward final : public Node {
 public:
  const char* name() const override { return "NegBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {neg(g[0])}; }
};

// d(x^p) = g * p * x^(p-1)
class PowBackward final : public Node {
 public:
  PowBackward(Variable x, double p) : x_(std::move(x)), p_(p) {}
  const char* name() const override { return "PowBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (p_ == 0) return {mul(g[0], 0.0)};
    return {mul(mul(g[0], pow(x_, p_ - 1)), p_)};
  }
  bool release_saved() override {
    x_ = Variable();
    return true;
  }

 private:
  Variable x_;
  double p_;
};

// d(exp x) = g * exp(x), reusing the forward result (saved without its graph link: the
// output's own node must not be kept alive by itself).
class ExpBackward final : public Node {
 public:
  explicit ExpBackward(Tensor out) : out_(std::move(out)) {}
  const char* name() const override { return "ExpBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {mul(g[0], Variable(out_))}; }
  bool release_saved() override {
    out_ = Tensor();
    return true;
  }

 private:
  Tensor out_;
};

class LogBackward final : public Node {
 public:
  explicit LogBackward(Variable x) : x_(std::move(x)) {}
  const char* name() const override { return "LogBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {div(g[0], x_)}; }
  bool release_saved() override {
    x_ = Variable();
    return true;
  }

 private:
  Variable x_;
};

// Activations whose derivative is an elementwise function of the input: g * f'(x), with
// f'(x) from the tensor kernels' *Grad ops (relu: x > 0). f'(x) is a constant of the
// backward graph, so these have no double backward yet.
class ActivationBackward final : public Node {
 public:
  // grad_op: the *Grad UnaryOp giving f'(x); Relu stands for the step function x > 0.
  ActivationBackward(const char* name, UnaryOp grad_op, Tensor x) : name_(name), grad_op_(grad_op), x_(std::move(x)) {}
  const char* name() const override { return name_; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Tensor d = grad_op_ == UnaryOp::Relu ? gt(x_, 0).to(x_.dtype()) : unary_grad(grad_op_, x_);
    return {mul(g[0], Variable(d))};
  }
  bool release_saved() override {
    x_ = Tensor();
    return true;
  }

 private:
  const char* name_;
  UnaryOp grad_op_;
  Tensor x_;
};

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  Variable out(add(a.data(), b.data()));
  record<AddBackward>({&a, &b}, {&out}, a.shape(), b.shape(), 1.0);
  return out;
}

Variable sub(const Variable& a, const Variable& b) {
  Variable out(sub(a.data(), b.data()));
  record<AddBackward>({&a, &b}, {&out}, a.shape(), b.shape(), -1.0);
  return out;
}

Variable mul(const Variable& a, const Variable& b) {
  Variable out(mul(a.data(), b.data()));
  record<MulBackward>({&a, &b}, {&out}, a, b);
  return out;
}

Variable div(const Variable& a, const Variable& b) {
  Variable out(div(a.data(), b.data()));
  record<DivBackward>({&a, &b}, {&out}, a, b);
  return out;
}

Variable add(const Variable& a, const Scalar& b) {
  Variable out(add(a.data(), b));
  record<AddScalarBackward>({&a}, {&out});
  return out;
}

Variable mul(const Variable& a, const Scalar& b) {
  Variable out(mul(a.data(), b));
  record<MulScalarBackward>({&a}, {&out}, b);
  return out;
}

Variable pow(const Variable& a, double exponent) {
  Variable out(pow(a.data(), Scalar(exponent)));
  record<PowBackward>({&a}, {&out}, a, exponent);
  return out;
}

Variable neg(const Variable& x) {
  Variable out(neg(x.data()));
  record<NegBackward>({&x}, {&out});
  return out;
}

Variable exp(const Variable& x) {
  Variable out(exp(x.data()));
  record<ExpBackward>({&x}, {&out}, out.data());
  return out;
}

Variable log(const Variable& x) {
  Variable out(log(x.data()));
  record<LogBackward>({&x}, {&out}, x);
  return out;
}

Variable relu(const Variable& x) {
  Variable out(relu(x.data()));
  record<ActivationBackward>({&x}, {&out}, "ReluBackward", UnaryOp::Relu, x.data());
  return out;
}

Variable tanh(const Variable& x) {
  Variable out(tanh(x.data()));
  record<ActivationBackward>({&x}, {&out}, "TanhBackward", UnaryOp::TanhGrad, x.data());
  return out;
}

Variable sigmoid(const Variable& x) {
  Variable out(sigmoid(x.data()));
  record<ActivationBackward>({&x}, {&out}, "SigmoidBackward", UnaryOp::SigmoidGrad, x.data());
  return out;
}

}  // namespace wick
