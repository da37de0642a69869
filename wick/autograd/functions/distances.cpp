// The distances of distances.h: one template per op, instantiated for Tensor (no graph) and
// Variable (differentiable through the primitives).
#include <wick/autograd/distances.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include <wick/autograd/autocast.h>
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

template <class T>
void check_floating(const char* op, const char* name, const T& x) {
  WICK_CHECK(x.defined() && is_floating(values(x).dtype()), op, ": ", name, " must be a floating tensor, got ",
             x.defined() ? dtype_name(values(x).dtype()) : "undefined");
}

void check_p(const char* op, double p) { WICK_CHECK(p >= 0, op, ": p must be >= 0 (or inf), got ", p); }

// ||x||_p over dims; p = 0 counts the nonzero entries, with a zero gradient (the graph stays
// connected through a masked_fill that zeroes every element, NaN and inf included).
template <class T>
T vector_norm(const T& x, double p, const Dims& dims, bool keepdim) {
  if (p != 0) return norm(x, p, dims, keepdim);
  const Tensor& v = values(x);
  Tensor count = sum(ne(v, 0), dims, keepdim).to(v.dtype());
  Tensor everywhere = ones(v.shape(), Options(DType::Bool, v.device()));
  return add(sum(masked_fill(x, everywhere, 0), dims, keepdim), constant(x, count));
}

// max(n, eps) in value, with n's own gradient (PyTorch's cosine_similarity clamps the norms
// in place under no_grad). Below eps, (n - n) is exactly 0 and carries n's gradient.
Tensor clamp_value_only(const Tensor& n, double eps) { return clamp(n, eps, std::nullopt); }
Variable clamp_value_only(const Variable& n, double eps) {
  return where(lt(n.data(), eps), add(sub(n, Variable(n.data())), eps), n);
}

template <class T>
T normalize_of(const T& x, double p, int64_t dim, double eps) {
  check_floating("normalize", "input", x);
  check_p("normalize", p);
  const int64_t d = wrap_dim("normalize", dim, x.dim());
  return div(x, clamp(vector_norm(x, p, {d}, /*keepdim=*/true), eps, std::nullopt));
}

template <class T>
T cosine_similarity_of(const T& a, const T& b, int64_t dim, double eps) {
  check_floating("cosine_similarity", "x1", a);
  check_floating("cosine_similarity", "x2", b);
  WICK_CHECK(eps >= 0, "cosine_similarity: eps must be >= 0, got ", eps);
  const Shape s = broadcast_shapes("cosine_similarity", a.shape(), b.shape());
  const int64_t d = wrap_dim("cosine_similarity", dim, static_cast<int64_t>(s.size()));
  T x1 = a.shape() == s ? a : broadcast_to(a, s);
  T x2 = b.shape() == s ? b : broadcast_to(b, s);
  T n1 = clamp_value_only(norm(x1, 2.0, {d}, /*keepdim=*/true), eps);
  T n2 = clamp_value_only(norm(x2, 2.0, {d}, /*keepdim=*/true), eps);
  return sum(mul(div(x1, n1), div(x2, n2)), {d});
}

template <class T>
T pairwise_distance_of(const T& x1, const T& x2, double p, double eps, bool keepdim) {
  check_floating("pairwise_distance", "x1", x1);
  check_floating("pairwise_distance", "x2", x2);
  check_p("pairwise_distance", p);
  broadcast_shapes("pairwise_distance", x1.shape(), x2.shape());
  const int64_t out_dim = std::max(x1.dim(), x2.dim());
  T diff = add(sub(x1, x2), eps);
  if (out_dim == 0) return vector_norm(diff, p, {}, keepdim);
  return vector_norm(diff, p, {out_dim - 1}, keepdim);
}

template <class T>
T cdist_of(const T& x1, const T& x2, double p) {
  check_floating("cdist", "x1", x1);
  check_floating("cdist", "x2", x2);
  check_p("cdist", p);
  WICK_CHECK(x1.dim() >= 2 && x2.dim() >= 2,
             "cdist: expected inputs of at least 2 dims ([..., P, M] and [..., R, M]),"
             " got shapes ",
             shape_str(x1.shape()), " and ", shape_str(x2.shape()));
  WICK_CHECK(x1.size(-1) == x2.size(-1), "cdist: x1 ", shape_str(x1.shape()), " and x2 ", shape_str(x2.shape()),
             " must have the same number of columns (last dim)");
  const Shape b1(x1.shape().begin(), x1.shape().end() - 2), b2(x2.shape().begin(), x2.shape().end() - 2);
  broadcast_shapes("cdist: batch dims", b1, b2);
  // [..., P, 1, M] - [..., 1, R, M] -> [..., P, R, M], reduced over M. Over zero features
  // every distance is 0, p = inf's too (PyTorch's zeros), where the inf-norm's max over
  // nothing has no identity: the 1-norm's sum gives the same zeros and empty gradients.
  const double norm_p = std::isinf(p) && x1.size(-1) == 0 ? 1.0 : p;
  return vector_norm(sub(unsqueeze(x1, -2), unsqueeze(x2, -3)), norm_p, {-1}, /*keepdim=*/false);
}

}  // namespace

#include "wick/autograd/generated/distance_ops_defs.inc"

}  // namespace wick
