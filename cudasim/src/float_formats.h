#pragma once
// The 16-bit and TF32 number formats that cuBLAS, cuDNN and NCCL compute in, as bit patterns
// held in uint16_t (cudasim's own code does not use cuda_fp16.h's __half / __nv_bfloat16).
//
// Rounding rules:
// - Widening (half -> float, bfloat16 -> float) is exact.
// - Narrowing (float -> half, float -> bfloat16, TF32) rounds to nearest, ties to even, in
//   the bits (independent of the host's rounding mode except for half subnormals, which use
//   nearbyint under the default mode). Overflow rounds to infinity with the sign kept; half
//   subnormals are produced (no flush to zero).
// - NaN stays NaN with its sign: half gives sign | 0x7e00 (payload dropped), bfloat16 keeps
//   the upper 16 bits with the quiet bit set, TF32 returns infinities and NaNs unchanged.
//   Widening keeps a NaN's sign and payload. Everything but NaN bit patterns matches CUDA's
//   __float2half_rn / __float2bfloat16_rn / __half2float / __bfloat162float exhaustively; CUDA
//   returns its canonical NaN instead (0x7fff, 0x7fffffff when widening a half).
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace cudasim {

// IEEE binary16 bits -> float (exact).
inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact in float
    const float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // inf, NaN
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));          // rebias 15 -> 127
}

// float -> IEEE binary16 bits, round to nearest even.
inline uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN (quiet)
  if (a >= 0x47800000u) return sign | 0x7c00u;  // >= 65536 (and inf): overflows to inf
  if (a < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal, in units of 2^-24. Scaling by 2^24
    // is exact and nearbyint rounds ties to even in the default mode; 1024 units carries into
    // the smallest normal, whose bit pattern is exactly 0x400.
    return sign | uint16_t(std::nearbyint(std::bit_cast<float>(a) * 16777216.0f));
  }
  // Normal: rebias the exponent and drop 13 mantissa bits, rounding to nearest even; a carry
  // out of the mantissa correctly bumps the exponent (up to inf).
  uint32_t h = (a - 0x38000000u) >> 13;
  const uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | uint16_t(h);
}

// bfloat16 bits -> float (exact: the upper half of a float).
inline float bf16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// float -> bfloat16 bits, round to nearest even.
inline uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // keep NaN a NaN
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);                  // nearest, ties to even
}

// float rounded to TF32 (8-bit exponent, 10 mantissa bits), nearest even, kept as a float.
inline float round_tf32(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7f800000u) == 0x7f800000u) return f;  // infinity and NaN as they are
  return std::bit_cast<float>((x + 0xfffu + ((x >> 13) & 1u)) & 0xffffe000u);
}

// The element formats that the simulated GEMMs and convolutions read and write (each library
// maps its own type enum onto these).
enum class ElementFormat { Float64, Float32, Half, BFloat16 };

inline size_t element_bytes(ElementFormat f) {
  return f == ElementFormat::Float64 ? 8 : f == ElementFormat::Float32 ? 4 : 2;
}

// Element i of an array in format f, as T (float or double).
template <class T>
T load_element(const void* p, ElementFormat f, int64_t i) {
  switch (f) {
    case ElementFormat::Float64: return static_cast<T>(static_cast<const double*>(p)[i]);
    case ElementFormat::Float32: return static_cast<T>(static_cast<const float*>(p)[i]);
    case ElementFormat::Half: return static_cast<T>(half_to_float(static_cast<const uint16_t*>(p)[i]));
    case ElementFormat::BFloat16: break;
  }
  return static_cast<T>(bf16_to_float(static_cast<const uint16_t*>(p)[i]));
}

template <class T>
void store_element(void* p, ElementFormat f, int64_t i, T v) {
  switch (f) {
    case ElementFormat::Float64: static_cast<double*>(p)[i] = static_cast<double>(v); return;
    case ElementFormat::Float32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case ElementFormat::Half: static_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v)); return;
    case ElementFormat::BFloat16: break;
  }
  static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v));
}

}  // namespace cudasim
