// The sort family on Variables, and quantile as one template for Tensor and Variable
// (wick/autograd/sorting.h): the values are the input gathered at the indices the Tensor ops
// find, so gradients flow through gather.
#include <wick/autograd/sorting.h>

#include <wick/autograd/composites.h>
#include <wick/autograd/functions/composite_support.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/shape.h>

namespace wick {

namespace {

using namespace composite_support;

// x's entries at `indices` along dim (where indices lack dim unless keepdim, or x is 0-d),
// and the indices: the sort family's Variable form (WICK_SORT_OPS in wick/tensor/sort.h).
WithIndices<Variable> selected(const Variable& x, int64_t dim, const Tensor& indices, bool keepdim = true) {
  if (keepdim || x.dim() == 0) return {gather(x, dim, indices), indices};
  const int64_t d = wrap_dim("gather", dim, x.dim());
  return {squeeze(gather(x, d, indices.unsqueeze(d)), d), indices};
}

template <class T>
T quantile_of(const char* op, const T& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
              QuantileInterpolation mode, bool ignore_nan) {
  const Tensor& v = values(x);
  WICK_CHECK(v.defined() && q.defined(), op, ": undefined tensor");
  WICK_CHECK(v.dtype() == DType::Float32 || v.dtype() == DType::Float64, op,
             ": the input must be float32 or float64 (as in PyTorch), got ", dtype_name(v.dtype()), " of shape ",
             shape_str(v.shape()));
  WICK_CHECK(v.numel() > 0, op, ": the input must not be empty, got shape ", shape_str(v.shape()));
  WICK_CHECK(q.dim() <= 1, op, ": q must be a number or a 0-d or 1-d tensor, got shape ", shape_str(q.shape()));
  WICK_CHECK(q.dtype() == v.dtype(), op, ": q must have the input's dtype ", dtype_name(v.dtype()), ", got ",
             dtype_name(q.dtype()));
  WICK_CHECK(q.device() == v.device(), op, ": q is on ", q.device().str(), " but the input on ", v.device().str());
  WICK_CHECK(all(logical_and(ge(q, 0), le(q, 1))).item<bool>(), op, ": q must be in [0, 1], got ",
             q.dim() == 0 ? std::to_string(q.item<double>()) : "a tensor with a value outside it (or NaN)");
  const int64_t d = dim ? wrap_dim(op, *dim, v.dim()) : 0;
  Shape out_shape;
  if (dim && v.dim() > 0) {
    out_shape = v.shape();
    if (keepdim) out_shape[d] = 1;
    else out_shape.erase(out_shape.begin() + d);
  } else if (keepdim) {
    out_shape = Shape(v.dim(), 1);
  }
  if (q.dim() == 1) out_shape.insert(out_shape.begin(), q.numel());

  // Slices to reduce as the last dim, sorted (NaN last, ties in input order); ranks
  // [slices..., q] in x's dtype, as PyTorch computes them: q * (n - 1) rounded once to
  // float32 for a float32 input. Among tied values the rank alone decides which element is
  // picked, and so which one gets the gradient (0.7 * 1000 is 700 in float32, 699.99998 in
  // float64).
  const int64_t n = dim && v.dim() > 0 ? v.size(d) : v.numel();
  // (PyTorch refuses more for both dtypes; float64 counts exactly far beyond it.)
  WICK_CHECK(v.dtype() != DType::Float32 || n <= (int64_t{1} << 24), op, ": a float32 slice of ", n,
             " elements has ranks float32 cannot count (at most 2^24, as PyTorch), input ", shape_str(v.shape()));
  const T rows = dim && v.dim() > 0 ? movedim(x, d, -1) : reshape(x, {-1});
  const T sorted = gather(rows, -1, argsort(values(rows), -1));
  const Tensor& s = values(sorted);
  Shape q_shape(s.dim() - 1, 1);
  q_shape.push_back(q.numel());
  const Tensor qs = q.reshape(q_shape);
  Tensor ranks;
  if (ignore_nan) {
    // An all-NaN slice gets rank 0, where its sorted values are NaN.
    const Tensor numbers = sum(logical_not(isnan(s)), {-1}, /*keepdim=*/true).to(v.dtype());
    ranks = maximum(mul(qs, sub(numbers, 1)), 0);
  } else {
    // A slice with a NaN gets the last rank, where its NaNs sorted.
    ranks = where(any(isnan(s), {-1}, /*keepdim=*/true), static_cast<double>(n - 1), mul(qs, n - 1)).to(v.dtype());
  }
  if (mode == QuantileInterpolation::Lower) ranks = floor(ranks);
  if (mode == QuantileInterpolation::Higher) ranks = ceil(ranks);
  if (mode == QuantileInterpolation::Nearest) ranks = round(ranks);
  const Tensor below = floor(ranks);
  T result = gather(sorted, -1, below.to(DType::Int64));
  if (mode == QuantileInterpolation::Linear || mode == QuantileInterpolation::Midpoint) {
    // torch.lerp's two-sided form (exact at both ends; with infinite neighbours it gives
    // what PyTorch gives, NaN from inf - inf on one side).
    const Tensor weight = mode == QuantileInterpolation::Midpoint ? full_like(ranks, 0.5) : sub(ranks, below);
    const T above = gather(sorted, -1, ceil(ranks).to(DType::Int64));
    const T diff = sub(above, result);
    result = where(lt(weight, 0.5), add(result, mul(constant(x, weight.to(v.dtype())), diff)),
                   sub(above, mul(diff, constant(x, (1.0 - weight).to(v.dtype())))));
  }
  result = q.dim() == 1 ? movedim(result, -1, 0) : squeeze(result, -1);
  return reshape(result, out_shape);
}

template <class T>
T quantile_number(const char* op, const T& x, double q, std::optional<int64_t> dim, bool keepdim,
                  QuantileInterpolation mode, bool ignore_nan) {
  const Tensor& v = values(x);
  WICK_CHECK(v.defined(), op, ": undefined tensor");
  WICK_CHECK(q >= 0 && q <= 1, op, ": q must be in [0, 1], got ", q);
  return quantile_of(op, x, full({}, q, v.options()), dim, keepdim, mode, ignore_nan);
}

}  // namespace

#include "wick/autograd/generated/sort_ops_defs.inc"
#include "wick/autograd/generated/quantile_ops_defs.inc"

}  // namespace wick
