// Backward nodes of the reductions: the gradient of a reduction is the output gradient
// broadcast back over the reduced dims, times the derivative of the reduction at each
// element. Nodes save the input and recompute what they need from it with differentiable
// ops, so double backward works.
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/sort.h>

#include <cmath>

namespace wick {

namespace {

// The output gradient with the reduced dims put back as size 1 (undoing keepdim=false).
Variable restore_reduced_dims(const Variable& g, const Shape& in_shape, const Dims& dims, bool keepdim) {
  if (keepdim || in_shape.empty()) return g;
  Shape s = in_shape;
  int64_t nd = static_cast<int64_t>(in_shape.size());
  std::vector<bool> reduced(in_shape.size(), dims.empty());
  for (int64_t d : dims) reduced[wrap_dim("sum", d, nd)] = true;
  for (size_t i = 0; i < s.size(); ++i)
    if (reduced[i]) s[i] = 1;
  return reshape(g, s);
}

// The number of elements each output of a reduction over `dims` combines.
int64_t reduced_count(const Shape& in, const Dims& dims) {
  if (dims.empty()) return numel_of(in);
  int64_t n = 1;
  for (int64_t d : dims) {
    const int64_t k = wrap_dim("reduce", d, static_cast<int64_t>(in.size()));
    if (!in.empty()) n *= in[static_cast<size_t>(k)];  // a 0-d tensor's dim 0 has one element
  }
  return n;
}

class SumBackward final : public Node {
 public:
  SumBackward(Shape in, Dims dims, bool keepdim) : in_(std::move(in)), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return "SumBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    return {expand(restore_reduced_dims(g[0], in_, dims_, keepdim_), in_)};
  }

 private:
  Shape in_;
  Dims dims_;
  bool keepdim_;
};

class MeanBackward final : public Node {
 public:
  MeanBackward(Shape in, Dims dims, bool keepdim) : in_(std::move(in)), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return "MeanBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const double count = static_cast<double>(reduced_count(in_, dims_));
    return {expand(restore_reduced_dims(div(g[0], count), in_, dims_, keepdim_), in_)};
  }

 private:
  Shape in_;
  Dims dims_;
  bool keepdim_;
};

// prod: g * prod / x where no factor is zero; with exactly one zero in a group, that
// element gets the product of the others and the rest get 0; with more, all get 0.
class ProdBackward final : public Node {
 public:
  ProdBackward(Variable x, Dims dims, bool keepdim) : x_(std::move(x)), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return "ProdBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const Shape& in = x_.shape();
    Tensor is_zero = eq(x_.data(), 0);
    Tensor zeros_in_group = sum(is_zero, dims_, /*keepdim=*/true);
    Variable nonzero_x = where(is_zero, constant_like(x_, 1), x_);
    Variable p = prod(nonzero_x, dims_, /*keepdim=*/true);
    Variable gp = mul(restore_reduced_dims(g[0], in, dims_, keepdim_), p);
    Variable zero = constant_like(x_, 0);
    Variable if_no_zero = where(eq(zeros_in_group, 0), div(gp, nonzero_x), zero);
    Variable at_single_zero = where(logical_and(is_zero, eq(zeros_in_group, 1)), expand(gp, in), zero);
    return {add(if_no_zero, at_single_zero)};
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable x_;
  Dims dims_;
  bool keepdim_;
};

// var = sum((x - mean)^2) / (n - c): d var = g * 2 (x - mean) / (n - c).
// std = sqrt(var): d std = g * (x - mean) / ((n - c) std), and 0 where std = 0 (as PyTorch:
// not 0/0).
class VarStdBackward final : public Node {
 public:
  VarStdBackward(bool is_std, Variable x, Dims dims, double correction, bool keepdim)
      : is_std_(is_std), x_(std::move(x)), dims_(std::move(dims)), correction_(correction), keepdim_(keepdim) {}
  const char* name() const override { return is_std_ ? "StdBackward" : "VarBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const Shape& in = x_.shape();
    // n - correction, not clamped at 0 as the forward's divisor is: PyTorch's gradient.
    const double denom = static_cast<double>(reduced_count(in, dims_)) - correction_;
    Variable centred = sub(x_, mean(x_, dims_, /*keepdim=*/true));
    Variable gk = restore_reduced_dims(g[0], in, dims_, keepdim_);
    if (is_std_) {
      Variable s = std(x_, dims_, correction_, /*keepdim=*/true);
      Tensor zero_std = eq(s.data(), 0);
      Variable safe_s = where(zero_std, constant_like(s, 1), s);
      return {where(zero_std, constant_like(x_, 0), div(mul(centred, gk), mul(safe_s, denom)))};
    }
    return {mul(mul(centred, gk), 2.0 / denom)};
  }
  bool release_saved() override { return release(x_); }

 private:
  bool is_std_;
  Variable x_;
  Dims dims_;
  double correction_;
  bool keepdim_;
};

// ||x||_p: d = g * sign(x) |x|^(p-1) / ||x||^(p-1) (p = 2: g x / ||x||), zero where the norm
// is zero and, for p < 1, where x is zero (|0|^(p-1) is inf there); p = inf: g shared
// equally by the elements whose |x| equals the norm.
class NormBackward final : public Node {
 public:
  NormBackward(Variable x, double p, Dims dims, bool keepdim)
      : x_(std::move(x)), p_(p), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return "NormBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const Shape& in = x_.shape();
    Variable zero = constant_like(x_, 0);
    if (p_ == 0) return {Variable(zeros_like(x_.data()))};  // a count: flat almost everywhere
    Variable gk = restore_reduced_dims(g[0], in, dims_, keepdim_);
    Variable n = norm(x_, p_, dims_, /*keepdim=*/true);
    if (std::isinf(p_)) {
      Tensor hit = eq(abs(x_.data()), n.data());
      Tensor count = sum(hit, dims_, /*keepdim=*/true).to(x_.dtype());
      Variable share = div(mul(gk, Variable(sign(x_.data()))), Variable(count));
      return {where(hit, share, zero)};
    }
    Tensor zero_norm = eq(n.data(), 0);
    Variable safe_n = where(zero_norm, constant_like(x_, 1), n);
    Variable d = p_ == 2 ? div(x_, safe_n)
                         : mul(Variable(sign(x_.data())), pow(div(abs(x_), safe_n), p_ - 1));
    Tensor dead = p_ < 1 ? logical_or(zero_norm, eq(x_.data(), 0)) : zero_norm;
    return {where(dead, zero, mul(gk, d))};
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable x_;
  double p_;
  Dims dims_;
  bool keepdim_;
};

// logsumexp: d = g * exp(x - lse).
class LogsumexpBackward final : public Node {
 public:
  LogsumexpBackward(Variable x, Dims dims, bool keepdim) : x_(std::move(x)), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return "LogsumexpBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable gk = restore_reduced_dims(g[0], x_.shape(), dims_, keepdim_);
    return {mul(gk, exp(sub(x_, logsumexp(x_, dims_, /*keepdim=*/true))))};
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable x_;
  Dims dims_;
  bool keepdim_;
};

// max()/min()/median()/nanmedian() of all elements, and amax/amin over dims: the gradient
// of each output is shared equally by the elements equal to it (PyTorch's
// evenly_distribute_backward). Where the result is NaN, the ops of all elements give it to
// the NaN elements; amax/amin compare with ==, which no NaN passes, so their share is 0/0 =
// NaN over that slice, as PyTorch's.
class ExtremumBackward final : public Node {
 public:
  ExtremumBackward(const char* name, Tensor x, Tensor out_kept, Dims dims, bool keepdim, bool nan_shares)
      : name_(name), x_(std::move(x)), out_(std::move(out_kept)), dims_(std::move(dims)), keepdim_(keepdim),
        nan_shares_(nan_shares) {}
  const char* name() const override { return name_; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Tensor hit = (nan_shares_ ? where(isnan(out_), isnan(x_), eq(x_, out_)) : eq(x_, out_)).to(g[0].dtype());
    hit.div_(sum(hit, dims_, /*keepdim=*/true));
    return {mul(expand(restore_reduced_dims(g[0], x_.shape(), dims_, keepdim_), x_.shape()), Variable(hit))};
  }
  bool release_saved() override { return release(x_, out_); }

 private:
  const char* name_;
  Tensor x_, out_;  // out_ keeps the reduced dims (size 1)
  Dims dims_;
  bool keepdim_, nan_shares_;
};

// max/min along a dim: the gradient goes to the returned index (scatter_add into zeros, so
// it is differentiable in g).
class MaxDimBackward final : public Node {
 public:
  MaxDimBackward(bool is_max, Shape in, int64_t dim, Tensor indices, bool keepdim)
      : is_max_(is_max), in_(std::move(in)), dim_(dim), indices_(std::move(indices)), keepdim_(keepdim) {}
  const char* name() const override { return is_max_ ? "MaxDimBackward" : "MinDimBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable gk = restore_reduced_dims(g[0], in_, {dim_}, keepdim_);
    Tensor idx = keepdim_ || in_.empty() ? indices_ : indices_.unsqueeze(dim_);
    return {scatter_add(zeros_like_shape(in_, g[0]), dim_, idx, gk)};
  }
  bool release_saved() override { return release(indices_); }

 private:
  bool is_max_;
  Shape in_;
  int64_t dim_;
  Tensor indices_;
  bool keepdim_;
};

// softmax: d = y * (g - sum(g * y)); log_softmax: d = g - softmax * sum(g); y recomputed
// from the saved input.
class SoftmaxBackward final : public Node {
 public:
  SoftmaxBackward(bool is_log, Variable x, int64_t dim) : is_log_(is_log), x_(std::move(x)), dim_(dim) {}
  const char* name() const override { return is_log_ ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    Variable y = softmax(x_, dim_);
    if (is_log_) return {sub(g[0], mul(y, sum(g[0], {dim_}, /*keepdim=*/true)))};
    return {mul(y, sub(g[0], sum(mul(g[0], y), {dim_}, /*keepdim=*/true)))};
  }
  bool release_saved() override { return release(x_); }

 private:
  bool is_log_;
  Variable x_;
  int64_t dim_;
};

// cumsum: each input feeds every later output, so d = reverse cumsum of g
// = sum(g) - cumsum(g) + g.
class CumsumBackward final : public Node {
 public:
  explicit CumsumBackward(int64_t dim) : dim_(dim) {}
  const char* name() const override { return "CumsumBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (g[0].dim() == 0) return {g[0]};
    return {add(sub(sum(g[0], {dim_}, /*keepdim=*/true), cumsum(g[0], dim_)), g[0])};
  }

 private:
  int64_t dim_;
};

}  // namespace

Variable sum(const Variable& x, const Dims& dims, bool keepdim) {
  Variable out(sum(x.data(), dims, keepdim));
  record<SumBackward>({&x}, {&out}, x.shape(), dims, keepdim);
  return out;
}

// The forward is the tensor kernel's mean (float16 accumulates in float32 and is divided
// before rounding: the mean of 100,000 float16 ones is 1, not sum = inf times 1/n), so it
// has its own node: the gradient is g / count over each group.
Variable mean(const Variable& x, const Dims& dims, bool keepdim) {
  Variable out(mean(x.data(), dims, keepdim));
  record<MeanBackward>({&x}, {&out}, x.shape(), dims, keepdim);
  return out;
}

Variable prod(const Variable& x, const Dims& dims, bool keepdim) {
  Variable out(prod(x.data(), dims, keepdim));
  record<ProdBackward>({&x}, {&out}, x, dims, keepdim);
  return out;
}

Variable var(const Variable& x, const Dims& dims, double correction, bool keepdim) {
  Variable out(var(x.data(), dims, correction, keepdim));
  record<VarStdBackward>({&x}, {&out}, false, x, dims, correction, keepdim);
  return out;
}

Variable std(const Variable& x, const Dims& dims, double correction, bool keepdim) {
  Variable out(std(x.data(), dims, correction, keepdim));
  record<VarStdBackward>({&x}, {&out}, true, x, dims, correction, keepdim);
  return out;
}

Variable norm(const Variable& x, double p, const Dims& dims, bool keepdim) {
  Variable out(norm(x.data(), p, dims, keepdim));
  record<NormBackward>({&x}, {&out}, x, p, dims, keepdim);
  return out;
}

Variable logsumexp(const Variable& x, const Dims& dims, bool keepdim) {
  Variable out(logsumexp(x.data(), dims, keepdim));
  record<LogsumexpBackward>({&x}, {&out}, x, dims, keepdim);
  return out;
}

Variable max(const Variable& x) {
  Variable out(max(x.data()));
  record<ExtremumBackward>({&x}, {&out}, "MaxBackward", x.data(), out.data(), Dims{}, false, true);
  return out;
}

Variable min(const Variable& x) {
  Variable out(min(x.data()));
  record<ExtremumBackward>({&x}, {&out}, "MinBackward", x.data(), out.data(), Dims{}, false, true);
  return out;
}

Variable amax(const Variable& x, const Dims& dims, bool keepdim) {
  Tensor kept = amax(x.data(), dims, /*keepdim=*/true);
  Variable out(keepdim ? kept : amax(x.data(), dims, false));
  if (x.data().is_floating_point())
    record<ExtremumBackward>({&x}, {&out}, "AmaxBackward", x.data(), kept, dims, keepdim, false);
  return out;
}

Variable amin(const Variable& x, const Dims& dims, bool keepdim) {
  Tensor kept = amin(x.data(), dims, /*keepdim=*/true);
  Variable out(keepdim ? kept : amin(x.data(), dims, false));
  if (x.data().is_floating_point())
    record<ExtremumBackward>({&x}, {&out}, "AminBackward", x.data(), kept, dims, keepdim, false);
  return out;
}

Variable median(const Variable& x) {
  Variable out(median(x.data()));
  record<ExtremumBackward>({&x}, {&out}, "MedianBackward", x.data(), out.data(), Dims{}, false, true);
  return out;
}

Variable nanmedian(const Variable& x) {
  Variable out(nanmedian(x.data()));
  record<ExtremumBackward>({&x}, {&out}, "NanmedianBackward", x.data(), out.data(), Dims{}, false, true);
  return out;
}

std::pair<Variable, Tensor> max(const Variable& x, int64_t dim, bool keepdim) {
  auto [values, indices] = max(x.data(), dim, keepdim);
  Variable out(values);
  record<MaxDimBackward>({&x}, {&out}, true, x.shape(), dim, indices, keepdim);
  return {out, indices};
}

std::pair<Variable, Tensor> min(const Variable& x, int64_t dim, bool keepdim) {
  auto [values, indices] = min(x.data(), dim, keepdim);
  Variable out(values);
  record<MaxDimBackward>({&x}, {&out}, false, x.shape(), dim, indices, keepdim);
  return {out, indices};
}

Variable softmax(const Variable& x, int64_t dim) {
  Variable out(softmax(x.data(), dim));
  record<SoftmaxBackward>({&x}, {&out}, false, x, dim);
  return out;
}

Variable log_softmax(const Variable& x, int64_t dim) {
  Variable out(log_softmax(x.data(), dim));
  record<SoftmaxBackward>({&x}, {&out}, true, x, dim);
  return out;
}

Variable cumsum(const Variable& x, int64_t dim) {
  Variable out(cumsum(x.data(), dim));
  record<CumsumBackward>({&x}, {&out}, dim);
  return out;
}

}  // namespace wick
