// The composite activations of activations.h: one template per activation, instantiated for
// Tensor (no graph) and Variable (differentiable through the primitives).
#include <wick/autograd/activations.h>

#include <wick/autograd/autocast.h>
#include <wick/autograd/functions/composite_support.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/shape.h>

#include <algorithm>
#include <vector>

namespace wick {

namespace {

using namespace composite_support;

// Activations take floating inputs only, as PyTorch's.
template <class T>
void check_floating(const char* op, const T& x) {
  WICK_CHECK(x.defined() && is_floating(values(x).dtype()), op, ": expected a floating tensor, got ",
             x.defined() ? dtype_name(values(x).dtype()) : "undefined");
}

template <class T>
T elu_of(const T& x, double alpha, double input_scale, const char* op) {
  check_floating(op, x);
  return where(gt(values(x), 0), x, mul(expm1(mul(x, input_scale)), alpha));
}

template <class T>
T hardtanh_of(const T& x, double lo, double hi, const char* op = "hardtanh") {
  check_floating(op, x);
  WICK_CHECK(lo <= hi, op, ": min_val ", lo, " must not exceed max_val ", hi);
  return clamp(x, lo, hi);
}

template <class T>
T hardsigmoid_of(const T& x) {
  check_floating("hardsigmoid", x);
  return div(hardtanh_of(add(x, 3.0), 0.0, 6.0, "hardsigmoid"), 6.0);
}

// PyTorch's hardswish backward: 0 below -3, x / 3 + 1/2 on [-3, 3], 1 above; the branches
// are chosen so that the composite's gradient takes the same side at -3 and 3.
template <class T>
T hardswish_of(const T& x) {
  check_floating("hardswish", x);
  const Tensor& v = values(x);
  T middle = div(mul(x, add(x, 3.0)), 6.0);
  return where(lt(v, -3), zero_like(x), where(le(v, 3), middle, x));
}

template <class T>
T glu_of(const T& x, int64_t dim) {
  check_floating("glu", x);
  WICK_CHECK(x.dim() >= 1, "glu: needs at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim("glu", dim, x.dim());
  WICK_CHECK(x.shape()[static_cast<size_t>(d)] % 2 == 0, "glu: dim ", dim, " of shape ", shape_str(x.shape()),
             " must have an even size");
  std::vector<T> halves = chunk(x, 2, d);
  return mul(halves[0], sigmoid(halves[1]));
}

// weight [1] or [C] (C = x's dim 1), broadcast along dim 1.
template <class T>
T prelu_of(const T& x, const T& weight) {
  check_floating("prelu", x);
  const Tensor& w = values(weight);
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  WICK_CHECK(w.dim() == 1 && (w.size(0) == 1 || w.size(0) == channels), "prelu: weight ", shape_str(w.shape()),
             " must have 1 or ", channels, " (input ", shape_str(x.shape()), "'s dim 1) elements");
  // [C, 1, ...] against x's dims 1..; without a channel dim (x 0-d or 1-d) one number.
  Shape s;
  if (x.dim() >= 2) {
    s.assign(static_cast<size_t>(x.dim() - 1), 1);
    s[0] = w.size(0);
  }
  T wb = reshape(weight, s);
  return where(gt(values(x), 0), x, mul(wb, x));
}

// The stable log sigmoid (PyTorch's): min(x, 0) - log1p(exp(-|x|)).
template <class T>
T logsigmoid_of(const T& x) {
  check_floating("logsigmoid", x);
  return sub(minimum(x, zero_like(x)), log1p(exp(neg(abs(x)))));
}

template <class T>
T celu_of(const T& x, double alpha) {
  WICK_CHECK(alpha != 0, "celu: alpha must be nonzero");
  return elu_of(x, alpha, 1.0 / alpha, "celu");
}

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

}  // namespace

#include "wick/autograd/generated/activation_ops_defs.inc"

}  // namespace wick
