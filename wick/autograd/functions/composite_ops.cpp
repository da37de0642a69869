// The composites of composites.h: one template per op, instantiated for Tensor (no graph)
// and Variable (differentiable through the primitives).
#include <wick/autograd/composites.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/composite_support.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/dtype_limits.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/join.h>
#include <wick/tensor/linalg.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/shape.h>

namespace wick {

namespace {

using namespace composite_support;

template <class T>
T nan_to_num_of(const T& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  const Tensor& v = values(x);
  if (!v.is_floating_point()) return x;
  const double inf = std::numeric_limits<double>::infinity();
  T y = masked_fill(x, isnan(v), nan);
  y = masked_fill(y, eq(v, inf), posinf.value_or(largest_finite(v.dtype())));
  return masked_fill(y, eq(v, -inf), neginf.value_or(lowest_finite(v.dtype())));
}

template <class T>
T nanmean_of(const T& x, const Dims& dims, bool keepdim) {
  const Tensor& v = values(x);
  WICK_CHECK(v.is_floating_point(), "nanmean: expected a floating tensor, got ", dtype_name(v.dtype()));
  Tensor count = sum(logical_not(isnan(v)), dims, keepdim).to(v.dtype());
  return div(nansum(x, dims, keepdim), constant(x, count));
}

template <class T>
T mv_of(const T& m, const T& v) {
  WICK_CHECK(m.dim() == 2 && v.dim() == 1, "mv: expected a matrix and a vector, got shapes ", shape_str(m.shape()),
             " and ", shape_str(v.shape()));
  return matmul(m, v);
}

// beta * x + alpha * product; with beta = 0, x is not read (NaN in it does not spread), as
// in PyTorch.
template <class T>
T scaled_sum(const T& x, const T& product, double beta, double alpha) {
  const DType t = values(product).dtype();
  // Integer products scale by alpha and beta converted to their dtype, as PyTorch's
  // Scalar::to (checked, then truncated: 2.7 scales by 2), and stay integers.
  auto scale = [&](const T& v, double s) {
    if (is_floating(t)) return mul(v, s);
    const bool whole = std::trunc(s) == s && std::abs(s) < 9.2e18;
    check_fits("addmv/baddbmm: alpha or beta", whole ? Scalar(static_cast<int64_t>(s)) : Scalar(s), t);
    return mul(v, Scalar(static_cast<int64_t>(std::trunc(s))));
  };
  T p = alpha == 1.0 ? product : scale(product, alpha);
  if (beta == 0.0) {
    broadcast_shapes("addmv/baddbmm: input", x.shape(), p.shape());  // the shapes must still fit
    return p;
  }
  return add(beta == 1.0 ? x : scale(x, beta), p);
}

template <class T>
T baddbmm_of(const T& x, const T& a, const T& b, double beta, double alpha) {
  WICK_CHECK(a.dim() == 3 && b.dim() == 3, "baddbmm: expected 3-d batches, got shapes ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  return scaled_sum(x, bmm(a, b), beta, alpha);
}

template <class T>
T flip_of(const T& x, const Dims& dims) {
  std::set<int64_t> seen;
  T y = x;
  for (int64_t d : dims) {
    const int64_t k = wrap_dim("flip", d, x.dim());
    WICK_CHECK(seen.insert(k).second, "flip: dim ", k, " appears more than once in ", shape_str(dims));
    if (x.dim() == 0) continue;
    const int64_t n = x.shape()[static_cast<size_t>(k)];
    y = index_select(y, k, arange(n - 1, -1, -1, Options(DType::Int64, values(x).device())));
  }
  return y;
}

template <class T>
T roll_of(const T& x, int64_t shift, int64_t dim) {
  const int64_t d = wrap_dim("roll", dim, x.dim());
  if (x.dim() == 0) return x;
  const int64_t n = x.shape()[static_cast<size_t>(d)];
  if (n == 0) return x;
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  return cat({narrow(x, d, n - s, s), narrow(x, d, 0, n - s)}, d);
}

template <class T>
T repeat_of(const T& x, const Shape& repeats) {
  WICK_CHECK(repeats.size() >= static_cast<size_t>(x.dim()), "repeat: ", repeats.size(), " repeats for a tensor of ",
             x.dim(), " dims (need at least as many)");
  for (int64_t r : repeats) WICK_CHECK(r >= 0, "repeat: repeats must be non-negative, got ", shape_str(repeats));
  Shape padded(repeats.size() - static_cast<size_t>(x.dim()), 1);
  padded.insert(padded.end(), x.shape().begin(), x.shape().end());
  // [s0, s1, ...] -> [1, s0, 1, s1, ...] -> expand to [r0, s0, r1, s1, ...] -> [r0 s0, r1 s1, ...]
  Shape interleaved, expanded, out;
  for (size_t i = 0; i < padded.size(); ++i) {
    interleaved.insert(interleaved.end(), {1, padded[i]});
    expanded.insert(expanded.end(), {repeats[i], padded[i]});
    out.push_back(repeats[i] * padded[i]);
  }
  return reshape(expand(reshape(x, interleaved), expanded), out);
}

template <class T>
T tile_of(const T& x, Shape reps) {
  if (reps.size() < static_cast<size_t>(x.dim()))
    reps.insert(reps.begin(), static_cast<size_t>(x.dim()) - reps.size(), 1);
  return repeat_of(x, reps);
}

template <class T>
std::vector<T> unbind_of(const T& x, int64_t dim) {
  WICK_CHECK(x.dim() >= 1, "unbind: a 0-d tensor has no dim to unbind");
  const int64_t d = wrap_dim("unbind", dim, x.dim());
  std::vector<T> out;
  if (x.shape()[static_cast<size_t>(d)] == 0) return out;
  for (const T& piece : split(x, 1, d)) out.push_back(squeeze(piece, d));
  return out;
}

template <class T>
T movedim_of(const T& x, int64_t source, int64_t destination) {
  const int64_t n = x.dim();
  const int64_t s = wrap_dim("movedim", source, n), d = wrap_dim("movedim", destination, n);
  if (n == 0) return x;
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; ++i)
    if (i != s) order.push_back(i);
  order.insert(order.begin() + d, s);
  return permute(x, order);
}

template <class T>
T unflatten_of(const T& x, int64_t dim, const Shape& sizes) {
  const int64_t d = wrap_dim("unflatten", dim, x.dim());
  WICK_CHECK(x.dim() >= 1 && !sizes.empty(), "unflatten: needs a dim to split and at least one size, got shape ",
             shape_str(x.shape()), " and sizes ", shape_str(sizes));
  Shape shape(x.shape().begin(), x.shape().begin() + d);
  shape.insert(shape.end(), sizes.begin(), sizes.end());
  shape.insert(shape.end(), x.shape().begin() + d + 1, x.shape().end());
  const Shape wanted = shape;
  T y = reshape(x, shape);
  // reshape fills a -1; any other mismatch must be the split dim's own.
  Shape got = y.shape();
  for (size_t i = 0; i < sizes.size(); ++i)
    WICK_CHECK(sizes[i] == -1 || got[static_cast<size_t>(d) + i] == sizes[i], "unflatten: sizes ", shape_str(sizes),
               " do not multiply to dim ", dim, " of shape ", shape_str(x.shape()));
  return y;
}

// tril keeps j - i <= k, triu j - i >= k, over the last two dims.
template <class T>
T triangle_of(const T& x, int64_t k, bool lower, const char* op) {
  WICK_CHECK(x.dim() >= 2, op, ": expected at least 2 dims, got shape ", shape_str(x.shape()));
  const Tensor& v = values(x);
  const Options idx(DType::Int64, v.device());
  Tensor rows = arange(0, x.size(-2), 1, idx).unsqueeze(1), cols = arange(0, x.size(-1), 1, idx).unsqueeze(0);
  Tensor diff = sub(cols, rows);
  Tensor keep = lower ? le(diff, k) : ge(diff, k);
  return masked_fill(x, logical_not(keep), 0);
}

}  // namespace

#include "wick/autograd/generated/composite_ops_defs.inc"

Tensor count_nonzero(const Tensor& x, const Dims& dims) { return sum(ne(x, 0), dims).to(DType::Int64); }

// --- reductions and elementwise ops with tensors or numbers

namespace {

template <class T>
std::pair<T, T> moments_of(bool is_std, const T& x, const Dims& dims, double correction, bool keepdim) {
  return {is_std ? wick::std(x, dims, correction, keepdim) : var(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}

}  // namespace

std::pair<Tensor, Tensor> var_mean(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  return moments_of(false, x, dims, correction, keepdim);
}
std::pair<Variable, Variable> var_mean(const Variable& x, const Dims& dims, double correction, bool keepdim) {
  return moments_of(false, x, dims, correction, keepdim);
}
std::pair<Tensor, Tensor> std_mean(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  return moments_of(true, x, dims, correction, keepdim);
}
std::pair<Variable, Variable> std_mean(const Variable& x, const Dims& dims, double correction, bool keepdim) {
  return moments_of(true, x, dims, correction, keepdim);
}

Tensor clamp(const Tensor& x, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) {
  WICK_CHECK(lo || hi, "clamp: at least one of min and max must be given");
  Tensor y = lo ? maximum(x, *lo) : x;
  return hi ? minimum(y, *hi) : y;
}

// Each branch of the nested where equals the clamped value exactly where it is taken, so
// the value is clamp's and each operand gets the gradient where it was taken.
Variable clamp(const Variable& x, const std::optional<Variable>& lo, const std::optional<Variable>& hi) {
  const Tensor y = clamp(x.data(), lo ? std::optional<Tensor>(lo->data()) : std::nullopt,
                         hi ? std::optional<Tensor>(hi->data()) : std::nullopt);
  Tensor inside = full(y.shape(), true, Options(DType::Bool, y.device()));
  if (lo) inside = logical_and(inside, ge(x.data(), lo->data()));
  if (hi) inside = logical_and(inside, le(x.data(), hi->data()));
  const Variable yc(y);
  Variable r = yc;
  Tensor taken = inside;
  if (lo) {
    Tensor at_lo = logical_and(logical_not(taken), eq(y, lo->data()));
    r = where(at_lo, expand(*lo, y.shape()), r);
    taken = logical_or(taken, at_lo);
  }
  if (hi) r = where(logical_and(logical_not(taken), eq(y, hi->data())), expand(*hi, y.shape()), r);
  return where(inside, expand(x, y.shape()), r);
}

}  // namespace wick
