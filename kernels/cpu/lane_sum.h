#pragma once
#include <cstdint>

namespace wick::cpu {

// sum over i in [0, n) of f(i), kept in 8 running sums (lane u takes i = u mod 8) that meet
// in a fixed tree at the end. One running sum would serialise the loop on the adder's
// latency; an `omp simd` reduction takes as many lanes as the vector is wide, so the
// AVX-512, AVX2 and baseline copies of a loop (isa_clones.h) would add in different orders
// and give different bits. Here the order is the source's: every copy gives the same sum.
// f may also store (exp rows write each term as they sum it).
template <class A, class F>
inline A lane_sum(int64_t n, F&& f) {
  A lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int u = 0; u < 8; ++u) lanes[u] += f(i + u);  // [simd] (tools/check_vectorised.py)
  for (int u = 0; i < n; ++i, ++u) lanes[u] += f(i);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

}  // namespace wick::cpu
