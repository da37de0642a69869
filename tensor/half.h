#pragma once
// 16-bit floating-point storage types usable on host and device.
// Both hold raw bits; arithmetic is done in float (the "compute type"), as PyTorch does.
// Conversion from float rounds to nearest even; NaN stays NaN.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define WICK_HD __host__ __device__ __forceinline__
#else
#define WICK_HD inline
#endif

namespace wick {

namespace detail {
WICK_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
WICK_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
}  // namespace detail

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  WICK_HD BFloat16(float f) {  // NOLINT(google-explicit-constructor): mirrors float semantics
    uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    } else {
      uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
      bits = static_cast<uint16_t>((u + rounding) >> 16);
    }
  }
  WICK_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }
  static WICK_HD BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

struct Half {
  uint16_t bits = 0;
  Half() = default;
  WICK_HD Half(float f) {  // NOLINT(google-explicit-constructor)
    uint32_t u = detail::float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) {  // NaN
      bits = static_cast<uint16_t>(sign | 0x7e00u);
    } else if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
      bits = static_cast<uint16_t>(sign | 0x7c00u);
    } else if (abs < 0x38800000u) {  // below 2^-14: subnormal half (or zero)
      // Scale so that the subnormal's integer mantissa lands in the low bits, rounding
      // to nearest even through the float adder.
      float scaled = detail::bits_float(abs) + 0.5f;  // 0.5 = 2^-1 shifts mantissa bits
      bits = static_cast<uint16_t>(sign | (detail::float_bits(scaled) - 0x3f000000u));
    } else {
      uint32_t mant_odd = (abs >> 13) & 1u;
      abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
      bits = static_cast<uint16_t>(sign | (abs >> 13));
    }
  }
  WICK_HD operator float() const {
    uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    uint32_t exp = (bits >> 10) & 0x1fu;
    uint32_t mant = bits & 0x3ffu;
    if (exp == 0x1fu) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      // subnormal or zero: value = mant * 2^-24
      float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
      return sign ? -v : v;
    }
    return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
  static WICK_HD Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

}  // namespace wick
