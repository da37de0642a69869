// The software conversions of wick/tensor/half.h (host and CUDA simulator) against references
// built another way: the nearest representable value found by search in double, ties to the
// even encoding, overflow to infinity, and NaN to the canonical NaN that sm_80+ hardware's
// cvt instructions return (0x7fff; 0x7fffffff when a half widens). On a GPU the device path
// is one cvt instruction, compared with these bits by tools/gpu-bench.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <wick/tensor/half.h>

namespace wick::test {
namespace {

// Value of a 16-bit float with `man_bits` mantissa bits and exponent bias `bias`, as double;
// the all-ones exponent's encodings (inf/NaN) are taken as 2^(emax+1) * (1 + m), so the
// first of them acts as the overflow threshold's upper neighbour.
double decode(uint16_t bits, int man_bits, int bias) {
  const int exp_bits = 15 - man_bits;
  const int e = (bits >> man_bits) & ((1 << exp_bits) - 1);
  const double m = bits & ((1u << man_bits) - 1);
  const double v = e == 0 ? std::ldexp(m, 1 - bias - man_bits) : std::ldexp(1.0 + m / (1 << man_bits), e - bias);
  return (bits & 0x8000) ? -v : v;
}

// The encoding of the 16-bit value nearest to f (round to nearest, ties to even).
uint16_t nearest(float f, int man_bits, int bias) {
  if (std::isnan(f)) return 0x7fff;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  const uint16_t inf = static_cast<uint16_t>(((1u << (15 - man_bits)) - 1) << man_bits);
  if (std::isinf(f)) return sign | inf;
  // Magnitudes are ordered as their encodings: binary search over [0, inf].
  uint16_t lo = 0, hi = inf;
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    (decode(mid, man_bits, bias) <= a ? lo : hi) = mid;
  }
  const double dl = a - decode(lo, man_bits, bias), dh = decode(hi, man_bits, bias) - a;
  uint16_t pick = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
  if (dl == 0) pick = lo;
  return sign | pick;
}

uint16_t bf16_ref(float f) { return nearest(f, 7, 127); }
uint16_t half_ref(float f) { return nearest(f, 10, 15); }

// Floats that probe every rounding case: each 16-bit encoding's value, the midpoints to its
// neighbours (ties) and one float ulp either side of them, and random bit patterns.
std::vector<float> probes(int man_bits, int bias) {
  std::vector<float> out;
  const uint16_t inf = static_cast<uint16_t>(((1u << (15 - man_bits)) - 1) << man_bits);
  for (uint32_t b = 0; b < inf; ++b) {
    const double v = decode(static_cast<uint16_t>(b), man_bits, bias);
    const double next = decode(static_cast<uint16_t>(b + 1), man_bits, bias);
    const float mid = static_cast<float>((v + next) / 2);  // exact: one more bit than the format
    for (float x : {static_cast<float>(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
      for (float s : {x, -x}) out.push_back(s);
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 200000; ++i) out.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), std::bit_cast<float>(0x7f800001u),
                  std::bit_cast<float>(0xffc00000u), std::bit_cast<float>(0x7fbfffffu)})
    out.push_back(x);
  return out;
}

TEST(HalfConversion, FloatToBFloat16IsRoundToNearestEvenWithTheCanonicalNaN) {
  for (float f : probes(7, 127))
    ASSERT_EQ(BFloat16(f).bits, bf16_ref(f)) << "float bits 0x" << std::hex << std::bit_cast<uint32_t>(f);
}

TEST(HalfConversion, FloatToHalfIsRoundToNearestEvenWithTheCanonicalNaN) {
  for (float f : probes(10, 15))
    ASSERT_EQ(Half(f).bits, half_ref(f)) << "float bits 0x" << std::hex << std::bit_cast<uint32_t>(f);
}

TEST(HalfConversion, WideningIsExactAndNaNIsCanonical) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float hf = Half::from_bits(h), bf = BFloat16::from_bits(h);
    // bfloat16 is float's upper half: widening is a shift, NaN payloads included (cvt does
    // the same: it is a move).
    ASSERT_EQ(std::bit_cast<uint32_t>(bf), b << 16);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      ASSERT_EQ(std::bit_cast<uint32_t>(hf), 0x7fffffffu) << "half bits " << b;
    } else {
      const double want = (h & 0x7c00) == 0x7c00 ? ((h & 0x8000) ? -INFINITY : INFINITY) : decode(h, 10, 15);
      ASSERT_EQ(static_cast<double>(hf), want) << "half bits " << b;
      ASSERT_EQ(std::signbit(hf), (h & 0x8000) != 0);
    }
  }
}

}  // namespace
}  // namespace wick::test
