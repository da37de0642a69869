#pragma once
// 16-bit floating-point storage types usable on host and device.
// Both hold raw bits; arithmetic is done in float (the "compute type"), as PyTorch does.
// Conversion from float rounds to nearest even. On the device (sm_80 and later) the
// conversions are one cvt instruction each; everywhere else (host, the CUDA simulator) they
// are computed in integer arithmetic that gives the same bits, NaN included: the hardware
// returns the canonical NaN for any NaN input, 0x7fff for half and bfloat16 and 0x7fffffff
// when a half widens to float (CUDA's own host emulation in cuda_bf16.hpp/cuda_fp16.hpp,
// CUDART_NAN_BF16 and CUDART_NAN_FP16, says the same). tests/tensor/half_test.cpp checks
// the software path exhaustively; tools/gpu-bench.sh checks it against the hardware.
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

// The conversions in integer arithmetic (what host code and the simulator run; also
// callable on the device, where benchmarks compare them with the cvt instructions).
WICK_HD uint16_t bfloat16_bits_soft(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // the canonical NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // to nearest, ties to even
  return static_cast<uint16_t>((u + rounding) >> 16);
}

WICK_HD uint16_t half_bits_soft(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7fffu;                                      // NaN: canonical
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);       // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below 2^-14: subnormal half (or zero)
    // Scale so that the subnormal's integer mantissa lands in the low bits, rounding to
    // nearest even through the float adder.
    const float scaled = bits_float(abs) + 0.5f;  // 0.5 = 2^-1 shifts mantissa bits
    return static_cast<uint16_t>(sign | (float_bits(scaled) - 0x3f000000u));
  }
  const uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;  // rebias the exponent (-112 << 23) and round to nearest even
  return static_cast<uint16_t>(sign | (abs >> 13));
}

WICK_HD float half_to_float_soft(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1fu) return bits_float(mant ? 0x7fffffffu : sign | 0x7f800000u);  // NaN: canonical
  if (exp == 0) {  // subnormal or zero: mant * 2^-24
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}
}  // namespace detail

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  WICK_HD BFloat16(float f) {  // NOLINT(google-explicit-constructor): mirrors float semantics
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(f));
#else
    bits = detail::bfloat16_bits_soft(f);
#endif
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
#if defined(__CUDA_ARCH__)
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
#else
    bits = detail::half_bits_soft(f);
#endif
  }
  WICK_HD operator float() const {
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
#else
    return detail::half_to_float_soft(bits);
#endif
  }
  static WICK_HD Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

}  // namespace wick
