// Backward of the matrix products. For C = A @ B (batched, broadcasting): dA = dC @ B^T and
// dB = A^T @ dC, each summed back over the batch dims its input was broadcast along (for a
// matrix B, A's batch dims fold into its rows instead: one product, no sum).
// 1-d operands are handled by reshaping them to matrices with differentiable reshapes;
// mm and bmm are matmuls with stricter shape checks, outer is a composite.
#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/linalg.h>
#include <wick/tensor/matmul_promotion.h>

namespace wick {

namespace {

// The rows of a matrix product over x's last dim: the product of the other dims.
int64_t rows_before_last(const Shape& s) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < s.size(); ++d) rows *= s[d];
  return rows;
}

class MatmulBackward final : public Node {
 public:
  // bmm: the gradients are bmm's too, which (as bmm's forward, and PyTorch's) accepts
  // operands of different dtypes where the product is empty or has nothing to contract.
  MatmulBackward(Variable a, Variable b, bool bmm = false) : a_(std::move(a)), b_(std::move(b)), bmm_(bmm) {}
  const char* name() const override { return "MatmulBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (bmm_) return {bmm(g[0], transpose(b_, 1, 2)), bmm(transpose(a_, 1, 2), g[0])};
    Variable ga = sum_to(matmul(g[0], transpose(b_, -1, -2)), a_.shape());
    return {ga, b_.dim() == 2 ? grad_of_matrix_b(g[0]) : sum_to(matmul(transpose(a_, -1, -2), g[0]), b_.shape())};
  }
  bool release_saved() override { return release(a_, b_); }

 private:
  // dB for a matrix B ([K, N]) and A of any batch dims: A's rows fold into one [rows, K], so
  // dB = A^T @ dC is one product over all rows, not a product per batch summed afterwards.
  // When B is a transposed view (linear's weight^T, column-major), dB is computed as
  // (dC^T @ A)^T, so that its transpose, the weight's gradient, is contiguous as it is.
  Variable grad_of_matrix_b(const Variable& g) const {
    const int64_t rows = rows_before_last(a_.shape());
    const Variable a2 = reshape(a_, {rows, a_.size(-1)}), g2 = reshape(g, {rows, g.size(-1)});
    const Tensor& b = b_.data();
    const bool b_column_major = b.stride(0) == 1 && b.stride(1) != 1 && b.size(1) > 1;
    if (b_column_major) return transpose(matmul(transpose(g2, 0, 1), a2), 0, 1);
    return matmul(transpose(a2, 0, 1), g2);
  }

  Variable a_, b_;
  bool bmm_;
};

// dot(a, b) = sum(a * b): d a = g * b, d b = g * a. The forward is the tensor dot, so the
// checks (equal lengths, one dtype) do not depend on requires_grad.
class DotBackward final : public Node {
 public:
  DotBackward(Variable a, Variable b) : a_(std::move(a)), b_(std::move(b)) {}
  const char* name() const override { return "DotBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override { return {mul(g[0], b_), mul(g[0], a_)}; }
  bool release_saved() override { return release(a_, b_); }

 private:
  Variable a_, b_;
};

// out = beta * input + alpha * (a @ b): d input = beta * g (summed to input's shape),
// d a = alpha * g @ b^T, d b = alpha * a^T @ g.
class AddmmBackward final : public Node {
 public:
  AddmmBackward(Shape input, Variable a, Variable b, double beta, double alpha)
      : input_(std::move(input)), a_(std::move(a)), b_(std::move(b)), beta_(beta), alpha_(alpha) {}
  const char* name() const override { return "AddmmBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable ga = scaled(matmul(g[0], transpose(b_, 0, 1)), alpha_);
    Variable gb = scaled(matmul(transpose(a_, 0, 1), g[0]), alpha_);
    return {sum_to(scaled(g[0], beta_), input_), ga, gb};
  }
  bool release_saved() override { return release(a_, b_); }

 private:
  Shape input_;
  Variable a_, b_;
  double beta_, alpha_;
};

// linear with a bias over x's rows [rows, in]: out = x W^T + b. dx = g W, dW = g^T x (as
// contiguous as the weight itself), db = g summed over the rows.
class LinearBackward final : public Node {
 public:
  LinearBackward(Variable x, Variable weight) : x_(std::move(x)), w_(std::move(weight)) {}
  const char* name() const override { return "LinearBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const int64_t rows = rows_before_last(x_.shape());
    const Variable g2 = reshape(g[0], {rows, w_.size(0)}), x2 = reshape(x_, {rows, w_.size(1)});
    return {reshape(matmul(g2, w_), x_.shape()), matmul(transpose(g2, 0, 1), x2), sum(g2, {0})};
  }
  bool release_saved() override { return release(x_, w_); }

 private:
  Variable x_, w_;
};

}  // namespace

Variable matmul(const Variable& a_in, const Variable& b_in) {
  AutocastArgs autocast(AutocastOp::matmul, a_in, b_in);
  return matmul_promotion::matmul_of(autocast[0], autocast[1], [](const Variable& a, const Variable& b) {
    Variable out(matmul(a.data(), b.data()));
    record<MatmulBackward>({&a, &b}, {&out}, a, b);
    return out;
  });
}

Variable linear(const Variable& x_in, const Variable& weight_in, const Variable& bias_in) {
  AutocastArgs autocast(AutocastOp::linear, x_in, weight_in, bias_in);
  const Variable& x = autocast[0];
  const Variable& weight = autocast[1];
  const Variable& bias = autocast[2];
  WICK_CHECK(weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ",
             shape_str(x.shape()), " does not end in weight ", shape_str(weight.shape()), "'s in_features");
  if (!bias.defined()) return matmul(x, transpose(weight, 0, 1));
  if (bias.dim() != 1 || bias.size(0) != weight.size(0)) return add(matmul(x, transpose(weight, 0, 1)), bias);
  // One product over x's rows that adds into the bias written to the output (addmm's beta = 1),
  // instead of a product and then a pass to add the bias.
  const int64_t rows = rows_before_last(x.shape());
  Shape out_shape = x.shape();
  out_shape.back() = weight.size(0);
  Variable out(addmm(bias.data(), x.data().reshape({rows, x.size(-1)}), weight.data().t(), 1.0, 1.0).view(out_shape));
  record<LinearBackward>({&x, &weight, &bias}, {&out}, x, weight);
  return out;
}

Variable outer(const Variable& a, const Variable& b) {
  if (!needs_grad({&a, &b})) return Variable(outer(a.data(), b.data()));
  WICK_CHECK(a.dim() == 1 && b.dim() == 1, "outer: needs two 1-d arguments, got shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  return mul(unsqueeze(a, 1), unsqueeze(b, 0));
}

#include "wick/autograd/generated/linalg_ops_defs.inc"

}  // namespace wick
