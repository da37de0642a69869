// Backward nodes of the elementwise ops. For out = f(a, b) with broadcasting, the gradient
// w.r.t. each input is the chain-rule product summed back to that input's shape (sum_to).
#include <wick/autograd/autocast.h>
#include <wick/autograd/derivatives.h>
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

#include <cmath>

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
  bool release_saved() override { return release(a_, b_); }

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
  bool release_saved() override { return release(a_, b_); }

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
    return {mul(mul(g[0], pow(x_, p_ - 1)), p_)};  // p != 0: no 0 * 0^-1
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable x_;
  double p_;
};

// d(exp x) = g * exp(x), reusing the forward result (saved without its graph link: the
// output's own node must not be kept alive by itself). Under create_graph exp(x) is
// recomputed from the input so that the gradient stays differentiable in x.
class ExpBackward final : public Node {
 public:
  ExpBackward(Variable x, Tensor out) : x_(std::move(x)), out_(std::move(out)) {}
  const char* name() const override { return "ExpBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {mul(g[0], grad_enabled() ? exp(x_) : Variable(out_))};
  }
  bool release_saved() override { return release(x_, out_); }

 private:
  Variable x_;
  Tensor out_;
};

class LogBackward final : public Node {
 public:
  explicit LogBackward(Variable x) : x_(std::move(x)) {}
  const char* name() const override { return "LogBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {div(g[0], x_)}; }
  bool release_saved() override { return release(x_); }

 private:
  Variable x_;
};

// Unary ops whose derivative is written with differentiable ops of the saved input, so
// double backward works: g * f'(x).
class UnaryBackward final : public Node {
 public:
  using Derivative = Variable (*)(const Variable& g, const Variable& x);
  UnaryBackward(const char* name, Derivative d, Variable x) : name_(name), d_(d), x_(std::move(x)) {}
  const char* name() const override { return name_; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {d_(g[0], x_)}; }
  bool release_saved() override { return release(x_); }

 private:
  const char* name_;
  Derivative d_;
  Variable x_;
};

// d(a/s) = g/s
class DivScalarBackward final : public Node {
 public:
  explicit DivScalarBackward(Scalar s) : s_(s) {}
  const char* name() const override { return "DivScalarBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {div(g[0], s_)}; }

 private:
  Scalar s_;
};

// d(s/b) = -g*s/b^2
class ScalarDivBackward final : public Node {
 public:
  ScalarDivBackward(Scalar s, Variable b) : s_(s), b_(std::move(b)) {}
  const char* name() const override { return "ScalarDivBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {mul(div(g[0], square(b_)), -s_.to_double())};
  }
  bool release_saved() override { return release(b_); }

 private:
  Scalar s_;
  Variable b_;
};

// d(a^b) = g*b*a^(b-1), g*a^b*ln(a); as PyTorch, the first is 0 where b = 0 (not 0 * 0^-1)
// and the second 0 where a = 0 and b >= 0 (not 0 * ln 0). ln(a) is taken in the result's
// dtype: a float32 base with a float64 exponent gets a float64-accurate gradient.
class PowTensorBackward final : public Node {
 public:
  PowTensorBackward(Variable a, Variable b) : a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override { return "PowTensorBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable zero = constant_like(g[0], 0);
    Variable ga = where(eq(b_.data(), 0), zero, mul(mul(g[0], b_), pow(a_, sub(b_, 1.0))));
    Tensor zero_base = logical_and(eq(a_.data(), 0), ge(b_.data(), 0));
    Variable wide_a = a_.dtype() == g[0].dtype() ? a_ : to(a_, g[0].dtype());
    Variable gb = where(zero_base, zero, mul(mul(g[0], pow(a_, b_)), log(wide_a)));
    return {sum_to(ga, a_.shape()), sum_to(gb, b_.shape())};
  }
  bool release_saved() override { return release(a_, b_); }

 private:
  Variable a_, b_;
};

// d(s^b) = g*s^b*ln(s); 0^b has derivative 0 for b > 0.
class ScalarPowBackward final : public Node {
 public:
  ScalarPowBackward(Scalar s, Variable b) : s_(s), b_(std::move(b)) {}
  const char* name() const override { return "ScalarPowBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (s_.to_double() == 0) return {mul(g[0], 0.0)};
    return {mul(mul(g[0], pow(s_, b_)), std::log(s_.to_double()))};
  }
  bool release_saved() override { return release(b_); }

 private:
  Scalar s_;
  Variable b_;
};

// atan2, remainder, fmod and floor_divide: both inputs' gradients from differentiable ops of
// the saved inputs (floor_divide's are 0; remainder's b gets -floor(a / b), fmod's -trunc).
class Atan2RemainderBackward final : public Node {
 public:
  enum class Kind { Atan2, Remainder, Fmod, FloorDivide };
  Atan2RemainderBackward(Kind kind, Variable a, Variable b) : kind_(kind), a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override {
    switch (kind_) {
      case Kind::Atan2: return "Atan2Backward";
      case Kind::Remainder: return "RemainderBackward";
      case Kind::Fmod: return "FmodBackward";
      case Kind::FloorDivide: break;
    }
    return "FloorDivideBackward";
  }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable ga, gb;
    if (kind_ == Kind::Atan2) {
      Variable r2 = add(square(a_), square(b_));
      ga = div(mul(g[0], b_), r2);
      gb = neg(div(mul(g[0], a_), r2));
    } else if (kind_ == Kind::Remainder || kind_ == Kind::Fmod) {
      ga = g[0];
      const Tensor q = div(a_.data(), b_.data());
      gb = neg(mul(g[0], Variable(kind_ == Kind::Fmod ? trunc(q) : floor(q))));
    } else {
      ga = Variable(zeros_like(g[0].data()));
      gb = ga;
    }
    return {sum_to(ga, a_.shape()), sum_to(gb, b_.shape())};
  }
  bool release_saved() override { return release(a_, b_); }

 private:
  Kind kind_;
  Variable a_, b_;
};

// maximum/minimum, as PyTorch: the gradient goes to the selected input, split in half at
// ties, and to both where either is NaN (the output is NaN; neither "lost").
class MinMaxBackward final : public Node {
 public:
  MinMaxBackward(bool is_max, Tensor a, Tensor b) : is_max_(is_max), a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override { return is_max_ ? "MaximumBackward" : "MinimumBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    DType t = g[0].dtype();
    Tensor a_loses = is_max_ ? lt(a_, b_) : gt(a_, b_);
    Tensor b_loses = is_max_ ? gt(a_, b_) : lt(a_, b_);
    Tensor half = eq(a_, b_).to(t).mul_(0.5);
    Tensor wa = sub(sub(ones_like(half), a_loses.to(t)), half);
    Tensor wb = sub(sub(ones_like(half), b_loses.to(t)), half);
    return {sum_to(mul(g[0], Variable(wa)), a_.shape()), sum_to(mul(g[0], Variable(wb)), b_.shape())};
  }
  bool release_saved() override { return release(a_, b_); }

 private:
  bool is_max_;
  Tensor a_, b_;
};

class WhereBackward final : public Node {
 public:
  WhereBackward(Tensor cond, Shape a, Shape b) : cond_(std::move(cond)), a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override { return "WhereBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable zero = constant_like(g[0], 0);
    return {sum_to(where(cond_, g[0], zero), a_), sum_to(where(cond_, zero, g[0]), b_)};
  }
  bool release_saved() override { return release(cond_); }

 private:
  Tensor cond_;
  Shape a_, b_;
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

Variable pow(const Variable& a_in, double exponent) {
  AutocastArgs autocast(AutocastOp::pow, a_in);
  const Variable& a = autocast[0];
  Variable out(pow(a.data(), Scalar(exponent)));
  record<PowBackward>({&a}, {&out}, a, exponent);
  return out;
}

Variable add(const Scalar& a, const Variable& b) { return add(b, a); }
Variable mul(const Scalar& a, const Variable& b) { return mul(b, a); }

Variable sub(const Scalar& a, const Variable& b) {
  Variable out(a - b.data());
  record<NegBackward>({&b}, {&out});
  return out;
}

Variable div(const Scalar& a, const Variable& b) {
  Variable out(a / b.data());
  record<ScalarDivBackward>({&b}, {&out}, a, b);
  return out;
}

Variable pow(const Scalar& base, const Variable& exponent_in) {
  AutocastArgs autocast(AutocastOp::pow, exponent_in);
  const Variable& exponent = autocast[0];
  Variable out(pow(base, exponent.data()));
  record<ScalarPowBackward>({&exponent}, {&out}, base, exponent);
  return out;
}

// The binary table's Compare, Node and Numbers rows and the unary table's Node rows of this
// file's nodes (wick/tensor/op_kinds.h, wick/autograd/derivatives.h).
#include "wick/autograd/generated/binary_ops_defs.inc"
#include "wick/autograd/generated/unary_nodes_defs.inc"
#include "wick/autograd/generated/elementwise_more_ops_defs.inc"

namespace {

Variable unary(const char* name, UnaryBackward::Derivative d, Tensor (*f)(const Tensor&), const Variable& x) {
  Variable out(f(x.data()));
  record<UnaryBackward>({&x}, {&out}, name, d, x);
  return out;
}

// The same for an op of the autocast policy: x cast as autocast says first.
Variable unary(AutocastOp op, const char* name, UnaryBackward::Derivative d, Tensor (*f)(const Tensor&),
               const Variable& x) {
  AutocastArgs autocast(op, x);
  return unary(name, d, f, autocast[0]);
}

}  // namespace

// The table's Formula rows (wick/tensor/op_kinds.h): the Tensor op, then a UnaryBackward
// node named after the enumerator (Expm1Backward) whose derivative is the row's expression
// of g and x; rows on the float32 autocast list cast their input first.
#include "wick/autograd/generated/unary_ops_defs.inc"

}  // namespace wick
