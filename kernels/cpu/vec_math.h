#pragma once
// Float32 exp, expm1, tanh and erf that GCC vectorises (std::exp and friends are library
// calls it cannot vectorise without -ffast-math). Written branch-free: every path is
// computed and the result selected, so a loop over them becomes SIMD blends. Accuracy
// (tested against double std:: functions in tests/tensor/vec_math_test.cpp): exp and expm1
// within 2 ulp, tanh within 3 ulp, erf within 6 ulp; NaN in gives NaN out, the
// infinities and underflow to 0 behave like std::.
//
// VecMath plugs these into unary_fn (kernels/elementwise_math.h) as its math provider for
// float; double and everything else falls through to the C library.
#include <cstdint>
#include <cstring>

#include "kernels/elementwise_math.h"

// Forced inline: these only vectorise inside the caller's loop, and GCC's inliner gives up
// on them in kernel files that instantiate many ops.
#define WICK_VEC_INLINE [[gnu::always_inline]] inline

namespace wick::cpu {

namespace vec_math {

WICK_VEC_INLINE float bits_to_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
WICK_VEC_INLINE int32_t float_to_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i;
}

// e^x - 1 for |x| <= ln2/2 by its Taylor series to x^9 (the next term is < 2^-32 relative).
WICK_VEC_INLINE float expm1_small(float r) {
  float p = 1.0f / 362880;
  p = p * r + 1.0f / 40320;
  p = p * r + 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  return (p * r) * r + r;
}

// x = n ln2 + r with |r| <= ln2/2; ln2 split in two so that n * kLn2Hi is exact.
struct Reduced {
  float r;
  int32_t n;
};
WICK_VEC_INLINE Reduced reduce_ln2(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440054690583e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = x * kLog2e + kRound;
  const float nf = t - kRound;
  Reduced red;
  red.n = float_to_bits(t) - float_to_bits(kRound);
  red.r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  return red;
}

// 2^n as a float for n in [-126, 127].
WICK_VEC_INLINE float pow2(int32_t n) { return bits_to_float((n + 127) << 23); }

// Clamped to where exp is 0 or inf anyway; NaN becomes the lower bound (restored by callers).
WICK_VEC_INLINE float clamp_exp_arg(float x) {
  x = x > -104.0f ? x : -104.0f;
  return x < 89.0f ? x : 89.0f;
}

WICK_VEC_INLINE float exp(float x) {
  const Reduced red = reduce_ln2(clamp_exp_arg(x));
  const float p = expm1_small(red.r) + 1.0f;
  // Scale in two steps so 2^n never leaves the normal range (results may be subnormal or
  // just below FLT_MAX with n = 128).
  const int32_t n1 = red.n >> 1;
  const float y = p * pow2(n1) * pow2(red.n - n1);
  return x != x ? x : y;
}

WICK_VEC_INLINE float expm1(float x) {
  const float xc = clamp_exp_arg(x);
  const Reduced red = reduce_ln2(xc);
  const float em1 = expm1_small(red.r);
  // 2^n (e^r - 1) + (2^n - 1) keeps the accuracy of e^r - 1 where the result is small;
  // for n >= 25 the -1 no longer matters and 2^n may overflow, so use e^x - 1.
  const int32_t n = red.n < 25 ? red.n : 25;
  const float s = pow2(n > -126 ? n : -126);
  const float small = s * em1 + (s - 1.0f);
  const float large = exp(xc) - 1.0f;
  const float y = red.n < 25 ? small : large;
  return x != x ? x : y;
}

// tanh|x| = e / (e + 2) with e = expm1(2|x|); |x| is clamped at 9 where tanh is 1 in float.
WICK_VEC_INLINE float tanh(float x) {
  float ax = x < 0.0f ? -x : x;
  ax = ax < 9.0f ? ax : 9.0f;
  const float e = expm1(2.0f * ax);
  const float t = e / (e + 2.0f);
  const float y = x < 0.0f ? -t : t;
  return x != x ? x : y;
}

// erf as x P(x^2) / Q(x^2) on |x| < 3.92 (beyond it erf rounds to +-1 in float32): one
// rational function, so no branch and no exp. P (degree 6) and Q (degree 5) were fitted for
// this project by iteratively reweighted least squares on the relative error (fit error
// 1.5e-8); evaluated in float32 the result is within 6 ulp (5.3 measured, at most 3.6e-7
// absolute near |erf| = 1). About 2.5x cheaper than a series plus an exp-based tail.
WICK_VEC_INLINE float erf(float x) {
  float ax = x < 0.0f ? -x : x;
  ax = ax < 3.92f ? ax : 3.92f;
  const float z = ax * ax;
  float p = -1.203466770e-08f;
  p = p * z + 4.469484530e-06f;
  p = p * z + 3.714424974e-04f;
  p = p * z + 3.813296846e-03f;
  p = p * z + 5.409324720e-02f;
  p = p * z + 1.848774011e-01f;
  p = p * z + 1.128379170e+00f;
  float q = 6.109150214e-05f;
  q = q * z + 1.289309166e-03f;
  q = q * z + 1.536042448e-02f;
  q = q * z + 1.136640312e-01f;
  q = q * z + 4.971767347e-01f;
  q = q * z + 1.0f;
  float e = ax * p / q;
  e = e < 1.0f ? e : 1.0f;
  const float y = x < 0.0f ? -e : e;
  return x != x ? x : y;
}

}  // namespace vec_math

// The math provider for unary_fn in CPU kernels: vectorisable float versions of exp, expm1,
// tanh and erf (which also carry sigmoid, silu, gelu and the *Grad ops); the C library for
// the rest and for double.
struct VecMath : emath::LibMath {
  using emath::LibMath::erf;
  using emath::LibMath::exp;
  using emath::LibMath::expm1;
  using emath::LibMath::tanh;
  [[gnu::always_inline]] static float exp(float x) { return vec_math::exp(x); }
  [[gnu::always_inline]] static float expm1(float x) { return vec_math::expm1(x); }
  [[gnu::always_inline]] static float tanh(float x) { return vec_math::tanh(x); }
  [[gnu::always_inline]] static float erf(float x) { return vec_math::erf(x); }
};

}  // namespace wick::cpu
