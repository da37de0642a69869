// Backward nodes of the reductions: the gradient of a reduction is the output gradient
// broadcast back over the reduced dims, times the derivative of the reduction at each
// element. Nodes save the input and recompute what they need from it with differentiable
// ops, so double backward works.
#include <wick/autograd/autocast.h>
#include <wick/autograd/derivatives.h>
#include <wick/autograd/composites.h>
#include <wick/autograd/functions/constants.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/dtype_limits.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/sort.h>

#include <cmath>
#include <limits>

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

// A Formula row's backward (WICK_REDUCE_TABLE in wick/tensor/op_kinds.h): the row's
// derivative of g (restored to x's rank) and x, broadcast to x's shape. x is saved only by
// the rows whose derivative reads it.
class ReduceBackward final : public Node {
 public:
  using Derivative = Variable (*)(const Variable& g, const Variable& x, const Dims& dims, double n);
  ReduceBackward(const char* name, Derivative d, Shape in, Variable x, Dims dims, bool keepdim)
      : name_(name), d_(d), in_(std::move(in)), x_(std::move(x)), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return name_; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const double n = static_cast<double>(reduced_count(in_, dims_));
    Variable gx = d_(restore_reduced_dims(g[0], in_, dims_, keepdim_), x_, dims_, n);
    return {gx.shape() == in_ ? gx : expand(gx, in_)};
  }
  bool release_saved() override { return x_.defined() && release(x_); }

 private:
  const char* name_;
  Derivative d_;
  Shape in_;
  Variable x_;
  Dims dims_;
  bool keepdim_;
};

// flip(cumsum(flip(g))): each input of a cumulative op feeds every later output.
Variable reversed_cumsum(const Variable& g, int64_t dim) { return flip(cumsum(flip(g, {dim}), dim), {dim}); }

// The product of all the other factors of each x along dim, from an exclusive cumprod from
// each side (no division, so exact with zeros), times g (x's shape with dim of size 1).
// PyTorch's prod_safe_zeros_backward.
Variable prod_of_others(const Variable& g, const Variable& x, int64_t dim) {
  if (x.numel() == 0) return expand(g, x.shape());
  const int64_t n = x.shape()[static_cast<size_t>(dim)];
  Shape one = x.shape();
  one[static_cast<size_t>(dim)] = 1;
  const Variable ones(wick::ones(one, x.data().options()));
  Variable before = cumprod(cat({ones, narrow(x, dim, 0, n - 1)}, dim), dim);
  Variable after = flip(cumprod(cat({ones, flip(narrow(x, dim, 1, n - 1), {dim})}, dim), dim), {dim});
  return mul(g, mul(before, after));
}

// prod, as PyTorch's prod_backward: without a zero anywhere in x, g * (prod / x); else the
// products of the other factors (so an inf factor next to a zero gives inf or nan exactly
// where PyTorch does). A full reduction with two or more zeros gives 0 without create_graph
// (every such product has a zero factor); with it, the zero-safe form, whose derivative is
// the second derivative. Several dims are flattened into one.
class ProdBackward final : public Node {
 public:
  ProdBackward(Variable x, Dims dims, bool keepdim) : x_(std::move(x)), dims_(std::move(dims)), keepdim_(keepdim) {}
  const char* name() const override { return "ProdBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    const Shape& in = x_.shape();
    if (in.empty()) return {g[0]};
    Variable gk = restore_reduced_dims(g[0], in, dims_, keepdim_);
    const int64_t zeros = sum(eq(x_.data(), 0)).item<int64_t>();
    if (zeros == 0) return {mul(gk, div(prod(x_, dims_, /*keepdim=*/true), x_))};
    if (dims_.empty() && zeros > 1 && !grad_enabled()) return {Variable(zeros_like(x_.data()))};
    const int64_t nd = static_cast<int64_t>(in.size());
    std::vector<bool> reduced(in.size(), dims_.empty());
    for (int64_t d : dims_) reduced[static_cast<size_t>(wrap_dim("prod", d, nd))] = true;
    std::vector<int64_t> perm;  // kept dims first, then the reduced ones
    for (int64_t d = 0; d < nd; ++d)
      if (!reduced[static_cast<size_t>(d)]) perm.push_back(d);
    const int64_t kept = static_cast<int64_t>(perm.size());
    for (int64_t d = 0; d < nd; ++d)
      if (reduced[static_cast<size_t>(d)]) perm.push_back(d);
    if (nd - kept == 1) return {prod_of_others(gk, x_, perm.back())};
    Variable xp = permute(x_, perm);
    Shape flat(xp.shape().begin(), xp.shape().begin() + kept);
    flat.push_back(-1);
    Variable r = prod_of_others(reshape(permute(gk, perm), flat), reshape(xp, flat), kept);
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    return {permute(reshape(r, xp.shape()), inverse)};
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
// When n <= c the forward divides by max(0, n - c) = 0 and is inf (NaN for a constant
// slice): no derivative exists, and wick gives PyTorch's values. Over all elements (no dims,
// or a 0-d x) that is var: g * inf, NaN where x equals the mean; std: NaN. Over given dims
// PyTorch keeps the formula with the negative n - c: var finite (infinite at n = c), std 0
// (NaN at n = c), and so does wick.
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
    if (denom <= 0 && (dims_.empty() || in.empty())) {
      const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
      const Tensor nans = full_like(x_.data(), nan);
      Tensor factor = is_std_ ? nans : where(eq(centred.data(), 0), nans, Scalar(inf));
      return {mul(expand(gk, in), Variable(factor))};
    }
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
    Variable d = p_ == 2 ? div(x_, safe_n) : mul(Variable(sign(x_.data())), pow(div(abs(x_), safe_n), p_ - 1));
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

// max()/min()/median()/nanmedian() of all elements, and amax/amin over dims: the gradient
// of each output is shared equally by the elements equal to it (PyTorch's
// evenly_distribute_backward). Where the result is NaN, the ops of all elements give it to
// the NaN elements; amax/amin compare with ==, which no NaN passes, so their share is 0/0 =
// NaN over that slice, as PyTorch's.
class ExtremumBackward final : public Node {
 public:
  ExtremumBackward(const char* name, Tensor x, Tensor out_kept, Dims dims, bool keepdim, bool nan_shares)
      : name_(name),
        x_(std::move(x)),
        out_(std::move(out_kept)),
        dims_(std::move(dims)),
        keepdim_(keepdim),
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

// cumsum: d = reversed cumsum of g (not sum(g) - cumsum(g) + g, which is nan where g has an inf).
class CumsumBackward final : public Node {
 public:
  explicit CumsumBackward(int64_t dim) : dim_(dim) {}
  const char* name() const override { return "CumsumBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (g[0].numel() <= 1 || g[0].shape()[static_cast<size_t>(dim_)] == 1) return {g[0]};
    return {reversed_cumsum(g[0], dim_)};
  }

 private:
  int64_t dim_;
};

// cumprod, as PyTorch's cumprod_backward: d x_k = sum_{j >= k} g_j prod_{i <= j, i != k} x_i.
// - No zero in x: reversed_cumsum(g * y) / x.
// - Zeros, first order: per line, before the first zero z1 the same formula on g * y up to
//   z1; at z1, prod(x[:z1]) * sum_{z1 <= j < z2} g_j prod(x[z1+1..j]) (z2 the second zero);
//   after z1, 0.
// - Zeros under create_graph: the first-order form is not differentiable the right way (the
//   gradient after z1 is 0 for every x, but its derivative by x[z1] is not), so each k is
//   computed from the products of the other factors: O(n^2), as PyTorch.
class CumprodBackward final : public Node {
 public:
  CumprodBackward(Variable x, int64_t dim) : x_(std::move(x)), dim_(dim) {}
  const char* name() const override { return "CumprodBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (x_.numel() <= 1) return {g[0]};
    const int64_t n = x_.shape()[static_cast<size_t>(dim_)];
    if (n == 1) return {g[0]};
    const Variable y = cumprod(x_, dim_);
    const Tensor is_zero = eq(x_.data(), 0);
    if (!any(is_zero).item<bool>()) return {div(reversed_cumsum(mul(y, g[0]), dim_), x_)};
    if (!grad_enabled()) return {first_order_with_zeros(g[0].data(), y.data(), is_zero)};
    Shape one = x_.shape();
    one[static_cast<size_t>(dim_)] = 1;
    const Variable ones(wick::ones(one, x_.data().options()));
    std::vector<Variable> per_k;
    for (int64_t k = 0; k < n; ++k) {
      // omitted[j - k] = prod_{i <= j, i != k} x_i for j >= k.
      Variable omitted;
      if (k == 0) {
        omitted = cat({ones, cumprod(narrow(x_, dim_, 1, n - 1), dim_)}, dim_);
      } else {
        Variable until_k = prod(narrow(x_, dim_, 0, k), {dim_}, /*keepdim=*/true);
        omitted = k == n - 1 ? until_k
                             : cat({until_k, mul(until_k, cumprod(narrow(x_, dim_, k + 1, n - k - 1), dim_))}, dim_);
      }
      per_k.push_back(sum(mul(narrow(g[0], dim_, k, n - k), omitted), {dim_}, /*keepdim=*/true));
    }
    return {cat(per_k, dim_)};
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable first_order_with_zeros(const Tensor& g, const Tensor& y, const Tensor& is_zero) const {
    const Tensor& x = x_.data();
    const Tensor zero = scalar_tensor(0, x.options());
    const Tensor zeros_so_far = cumsum(is_zero, dim_);
    const Tensor before = eq(zeros_so_far, 0);
    Tensor out = where(before, div(reversed_cumsum(Variable(where(before, mul(y, g), zero)), dim_).data(), x), zero);
    const Tensor first_zero = logical_and(is_zero, eq(zeros_so_far, 1));
    const Tensor between = logical_and(eq(zeros_so_far, 1), logical_not(is_zero));  // (z1, z2)
    const Tensor z1 = max(first_zero.to(DType::Int64), dim_, /*keepdim=*/true).second;
    const Tensor until_z1 =
        where(eq(z1, 0), scalar_tensor(1, x.options()), gather(y, dim_, clamp(sub(z1, 1), 0, std::nullopt)));
    const Tensor from_z1 =
        sum(mul(cumprod(where(between, x, scalar_tensor(1, x.options())), dim_), where(eq(zeros_so_far, 1), g, zero)),
            {dim_}, /*keepdim=*/true);
    return Variable(where(first_zero, mul(from_z1, until_z1), out));
  }

  Variable x_;
  int64_t dim_;
};

// cummax/cummin: the gradient goes to the recorded indices (scatter_add into zeros, so it
// is differentiable in g).
class CumExtremumBackward final : public Node {
 public:
  CumExtremumBackward(bool is_max, Shape in, int64_t dim, Tensor indices)
      : is_max_(is_max), in_(std::move(in)), dim_(dim), indices_(std::move(indices)) {}
  const char* name() const override { return is_max_ ? "CummaxBackward" : "CumminBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (in_.empty() || numel_of(in_) == 0) return {g[0]};
    return {scatter_add(zeros_like_shape(in_, g[0]), dim_, indices_, g[0])};
  }
  bool release_saved() override { return release(indices_); }

 private:
  bool is_max_;
  Shape in_;
  int64_t dim_;
  Tensor indices_;
};

// logcumsumexp, as PyTorch's logcumsumexp_backward: d x_k = sum_{j >= k} g_j exp(x_k - r_j)
// with r = logcumsumexp(x), summed in log space separately over the positive and the
// negative g_j (log|g_j| - r_j through a reversed logcumsumexp), so nothing overflows.
class LogcumsumexpBackward final : public Node {
 public:
  LogcumsumexpBackward(Variable x, int64_t dim) : x_(std::move(x)), dim_(dim) {}
  const char* name() const override { return "LogcumsumexpBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (g[0].dim() == 0 || g[0].numel() == 0) return {g[0]};
    const Variable r = logcumsumexp(x_, dim_);
    const Variable lowest = constant_like(g[0], lowest_finite(g[0].dtype()));
    const Variable log_abs_g = log(abs(g[0]));
    auto part = [&](const Tensor& sign_matches) {
      Variable log_g = where(sign_matches, log_abs_g, lowest);
      Variable rev = flip(logcumsumexp(flip(sub(log_g, r), {dim_}), dim_), {dim_});
      return exp(add(rev, x_));
    };
    return {sub(part(gt(g[0].data(), 0)), part(lt(g[0].data(), 0)))};
  }
  bool release_saved() override { return release(x_); }

 private:
  Variable x_;
  int64_t dim_;
};

// The scan nodes keep the dim wrapped (0 for a 0-d input).
int64_t scan_dim(const char* op, const Variable& x, int64_t dim) {
  return x.dim() == 0 ? 0 : wrap_dim(op, dim, x.dim());
}

}  // namespace

// The table's Formula rows: the Tensor op (after autocast's cast, for a Float32 row), then a
// ReduceBackward node named after the enumerator (LogSumExpBackward) with the row's derivative.
#include "wick/autograd/generated/reduce_ops_defs.inc"

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

std::pair<Variable, Tensor> cummax(const Variable& x, int64_t dim) {
  auto [values, indices] = cummax(x.data(), dim);
  Variable out(values);
  record<CumExtremumBackward>({&x}, {&out}, true, x.shape(), scan_dim("cummax", x, dim), indices);
  return {out, indices};
}

std::pair<Variable, Tensor> cummin(const Variable& x, int64_t dim) {
  auto [values, indices] = cummin(x.data(), dim);
  Variable out(values);
  record<CumExtremumBackward>({&x}, {&out}, false, x.shape(), scan_dim("cummin", x, dim), indices);
  return {out, indices};
}

#include "wick/autograd/generated/reduce_more_ops_defs.inc"
#include "wick/autograd/generated/median_ops_defs.inc"

}  // namespace wick
