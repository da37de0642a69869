#pragma once
// Float32 exp, expm1, tanh and erf that GCC vectorises (std::exp and friends are library
// calls it cannot vectorise without -ffast-math). Written branch-free: every path is
// computed and the result selected, so a loop over them becomes SIMD blends. Accuracy
// (tested against double std:: functions in tests/tensor/vec_math_test.cpp): exp and expm1
// within 2 ulp, tanh within 3 ulp, erf within 3e-7 relative; NaN in gives NaN out, the
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

// erf by its Taylor series in x^2 for |x| < 1, and for |x| >= 1 as 1 - P(t) e^-x^2 with
// t = 1 / (1 + p|x|) (Abramowitz & Stegun 7.1.26, absolute error 1.5e-7, i.e. < 2e-7
// relative where erf >= 0.84).
WICK_VEC_INLINE float erf(float x) {
  float ax = x < 0.0f ? -x : x;
  ax = ax < 10.0f ? ax : 10.0f;
  // 2/sqrt(pi) sum_k (-1)^k x^(2k+1) / (k! (2k+1)), k <= 11 (next term < 1e-9 at |x| = 1).
  const float z = ax * ax;
  float q = -1.0f / (39916800.0f * 23);
  q = q * z + 1.0f / (3628800.0f * 21);
  q = q * z - 1.0f / (362880.0f * 19);
  q = q * z + 1.0f / (40320.0f * 17);
  q = q * z - 1.0f / (5040.0f * 15);
  q = q * z + 1.0f / (720.0f * 13);
  q = q * z - 1.0f / (120.0f * 11);
  q = q * z + 1.0f / (24.0f * 9);
  q = q * z - 1.0f / (6.0f * 7);
  q = q * z + 1.0f / (2.0f * 5);
  q = q * z - 1.0f / 3;
  q = q * z + 1.0f;
  const float near = 1.12837916709551257f * ax * q;
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float a = 1.061405429f;
  a = a * t - 1.453152027f;
  a = a * t + 1.421413741f;
  a = a * t - 0.284496736f;
  a = a * t + 0.254829592f;
  const float far = 1.0f - a * t * exp(-z);
  const float e = ax < 1.0f ? near : far;
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
