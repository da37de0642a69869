#pragma once
// The normalisation formulas shared by kernels/cpu/norm.cpp and kernels/cuda/{norm,layer_norm}.cu, in the
// accumulation type A each backend uses (the CPU double, CUDA stats_t). The reductions
// themselves (sums over a channel or group) are each backend's own.
#include <cmath>
#include <cstdint>

#include <wick/tensor/half.h>

namespace wick::norm_math {

// A running statistic after one batch: (1 - momentum) running + momentum stat, in double.
WICK_HD double blend(double running, double stat, double momentum) {
  return (1 - momentum) * running + momentum * stat;
}

// The unbiased variance from the sum of squared deviations of m values (NaN for one value,
// as PyTorch's running variance gets).
WICK_HD double unbiased_variance(double sum_sq, int64_t m) { return m > 1 ? sum_sq / static_cast<double>(m - 1) : NAN; }

template <class A>
WICK_HD A inverse_std(A var, double eps) {
  using std::sqrt;
  return A(1) / sqrt(var + static_cast<A>(eps));
}

// out = x * scale + shift normalises and applies the affine weight w and bias b.
template <class A>
struct Affine {
  A scale, shift;
};
template <class A>
WICK_HD Affine<A> affine(A mean, A invstd, A w, A b) {
  const A scale = invstd * w;
  return {scale, b - mean * scale};
}

// Batch norm's input gradient for one channel of m values with the sums of dy and of
// dy * xhat: training dx = k (dy - sum_dy / m - xhat sum_dy_xhat / m), eval dx = k dy, with
// k = invstd * w.
template <class A>
struct InputGrad {
  A k, a, bq;
  WICK_HD A operator()(A dy, A xhat) const { return k * (dy - a - xhat * bq); }
};
template <class A>
WICK_HD InputGrad<A> batch_norm_input_grad(A invstd, A w, A sum_dy, A sum_dy_xhat, A m, bool training) {
  return {invstd * w, training ? sum_dy / m : A(0), training ? sum_dy_xhat / m : A(0)};
}

}  // namespace wick::norm_math
