#pragma once
// Division of 32-bit indices by a divisor fixed at launch, as a multiply-high, an add and a
// shift. A GPU has no integer divider: `i / d` with a runtime d is a ~25-instruction
// emulation, once per dimension per element in an offset calculation (issue 45). Written
// once for the host (tests) and the device.
//
// The method (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994): for 1 <= d <= 2^31 let s = ceil(log2 d) and
// m = floor(2^32 (2^s - d) / d) + 1, which fits in 32 bits because 2^s - d < d. Then for
// every n < 2^31,  n / d == (mulhi(n, m) + n) >> s,  and the sum cannot overflow since
// mulhi(n, m) <= n. Callers guarantee n < 2^31 (fits_32bit in elementwise.cuh).
#include <cstdint>

#include <wick/tensor/half.h>

namespace wick {

struct FastDivider {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;

  FastDivider() = default;
  // d in [1, 2^31]; the host checks before building a layout (a size never exceeds it).
  explicit FastDivider(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }

  WICK_HD uint32_t div(uint32_t n) const {
    const uint32_t high = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
    return (high + n) >> shift;
  }
  // Quotient and remainder of n.
  WICK_HD uint32_t divmod(uint32_t n, uint32_t& rem) const {
    const uint32_t q = div(n);
    rem = n - q * divisor;
    return q;
  }
};

}  // namespace wick
