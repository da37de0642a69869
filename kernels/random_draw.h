#pragma once
// One random value for element i, shared by the CPU and CUDA random kernels so both give
// the same numbers: Philox words for counter (offset + i), then
//   Uniform [a, b):  a + (b - a) * u
//   Normal(a, b):    a + b * sqrt(-2 log u1) cos(2 pi u2)  (Box-Muller, u1 in (0, 1])
//   RandInt [a, b):  a + (64 random bits mod (b - a))
//   Bernoulli(p=a):  u < p
// float64 uses 53-bit uniforms, every other type 24-bit ones. The affine steps are explicit
// fmas so that neither compiler's contraction choices make CPU and CUDA differ.
#include <cmath>
#include <cstdint>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/philox.h>

#include "kernels/convert.h"

namespace wick {

// x rounded to bfloat16 stochastically: away from zero with probability equal to the part
// of a bfloat16 ulp that x lies beyond the value toward zero (so the expectation is x), by
// adding 16 random bits below the kept ones and truncating. inf and NaN round to nearest
// (and stay what they are); a finite x within an ulp of the largest bfloat16 may round to
// inf, as truncating the sum says.
WICK_HD BFloat16 stochastic_bfloat16(float x, uint32_t random_bits) {
  const uint32_t bits = detail::float_bits(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) return BFloat16(x);
  return BFloat16::from_bits(static_cast<uint16_t>((bits + (random_bits & 0xffffu)) >> 16));
}

// Element i's stochastic rounding, from Philox counter (offset + i) as random_draw.
WICK_HD BFloat16 stochastic_round_draw(float x, PhiloxState st, uint64_t i) {
  return stochastic_bfloat16(x, philox::generate(st.seed, st.offset + i).w[0]);
}

// Bernoulli(p)'s draw from one counter's words: a 53-bit uniform below a double p, a 24-bit
// one below a float p (what random_draw's Bernoulli does for float64 and for every other
// dtype; attention's dropout makes the same draws).
WICK_HD bool bernoulli_hit(const philox::Words& w, double p) { return philox::uniform_double(w.w[0], w.w[1]) < p; }
WICK_HD bool bernoulli_hit(const philox::Words& w, float p) { return philox::uniform_float(w.w[0]) < p; }

template <class T>
WICK_HD T random_draw(RandomKind kind, double a, double b, PhiloxState st, uint64_t i) {
  philox::Words w = philox::generate(st.seed, st.offset + i);
  constexpr bool wide = std::is_same_v<T, double>;
  switch (kind) {
    case RandomKind::Uniform: {
      if constexpr (wide) {
        return fma(b - a, philox::uniform_double(w.w[0], w.w[1]), a);
      } else {
        float u = philox::uniform_float(w.w[0]);
        return convert<T>(fmaf(static_cast<float>(b - a), u, static_cast<float>(a)));
      }
    }
    case RandomKind::Normal: {
      if constexpr (wide) {
        double u1 = 1.0 - philox::uniform_double(w.w[0], w.w[1]);
        double u2 = philox::uniform_double(w.w[2], w.w[3]);
        return fma(b, std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2), a);
      } else {
        float u1 = 1.0f - philox::uniform_float(w.w[0]);
        float u2 = philox::uniform_float(w.w[1]);
        float z = sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795865f * u2);
        return convert<T>(fmaf(static_cast<float>(b), z, static_cast<float>(a)));
      }
    }
    case RandomKind::RandInt: {
      uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(b) - static_cast<int64_t>(a));
      uint64_t bits = static_cast<uint64_t>(w.w[0]) << 32 | w.w[1];
      return convert<T>(static_cast<int64_t>(a) + static_cast<int64_t>(bits % range));
    }
    case RandomKind::Bernoulli: {
      const bool hit = wide ? bernoulli_hit(w, a) : bernoulli_hit(w, static_cast<float>(a));
      return convert<T>(hit ? 1 : 0);
    }
  }
  return T{};
}

}  // namespace wick
