#pragma once
// CUDA's atomic functions as real atomics on the host (std::atomic_ref), since blocks run
// concurrently on several host threads. CUDA's overload set and no more, so that code that
// compiles here compiles with nvcc.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <type_traits>

namespace cudasim {

// Atomic read-modify-write of *p with f, for any 2-, 4- or 8-byte type (CAS loop).
template <class T, class F>
T atomic_update(T* p, F f) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "atomics on 16-, 32- or 64-bit words");
  using Word = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  std::atomic_ref<Word> word(*reinterpret_cast<Word*>(p));
  Word old = word.load(std::memory_order_relaxed);
  for (;;) {
    const T updated = f(std::bit_cast<T>(old));
    if (word.compare_exchange_weak(old, std::bit_cast<Word>(updated), std::memory_order_relaxed)) return std::bit_cast<T>(old);
  }
}

}  // namespace cudasim

#define CUDASIM_ATOMIC(name, T, expr)                                                        \
  inline T name(T* address, T val) {                                                       \
    return ::cudasim::atomic_update(address, [val](T old) { return static_cast<T>(expr); }); \
  }
CUDASIM_ATOMIC(atomicAdd, int, old + val)
CUDASIM_ATOMIC(atomicAdd, unsigned, old + val)
CUDASIM_ATOMIC(atomicAdd, unsigned long long, old + val)
CUDASIM_ATOMIC(atomicAdd, float, old + val)
CUDASIM_ATOMIC(atomicAdd, double, old + val)
CUDASIM_ATOMIC(atomicAdd, __half, __float2half(__half2float(old) + __half2float(val)))
CUDASIM_ATOMIC(atomicAdd, __nv_bfloat16, __float2bfloat16(__bfloat162float(old) + __bfloat162float(val)))
CUDASIM_ATOMIC(atomicSub, int, old - val)
CUDASIM_ATOMIC(atomicSub, unsigned, old - val)
CUDASIM_ATOMIC(atomicExch, int, val)
CUDASIM_ATOMIC(atomicExch, unsigned, val)
CUDASIM_ATOMIC(atomicExch, unsigned long long, val)
CUDASIM_ATOMIC(atomicExch, float, val)
CUDASIM_ATOMIC(atomicMax, int, std::max(old, val))
CUDASIM_ATOMIC(atomicMax, unsigned, std::max(old, val))
CUDASIM_ATOMIC(atomicMax, long long, std::max(old, val))
CUDASIM_ATOMIC(atomicMax, unsigned long long, std::max(old, val))
CUDASIM_ATOMIC(atomicMin, int, std::min(old, val))
CUDASIM_ATOMIC(atomicMin, unsigned, std::min(old, val))
CUDASIM_ATOMIC(atomicMin, long long, std::min(old, val))
CUDASIM_ATOMIC(atomicMin, unsigned long long, std::min(old, val))
CUDASIM_ATOMIC(atomicOr, int, old | val)
CUDASIM_ATOMIC(atomicOr, unsigned, old | val)
CUDASIM_ATOMIC(atomicOr, unsigned long long, old | val)
CUDASIM_ATOMIC(atomicAnd, int, old & val)
CUDASIM_ATOMIC(atomicAnd, unsigned, old & val)
CUDASIM_ATOMIC(atomicAnd, unsigned long long, old & val)
CUDASIM_ATOMIC(atomicXor, int, old ^ val)
CUDASIM_ATOMIC(atomicXor, unsigned, old ^ val)
CUDASIM_ATOMIC(atomicXor, unsigned long long, old ^ val)
// Wrapping counters: Inc counts up to val and wraps to 0, Dec counts down from val and
// wraps (from 0 or anything above val) to val.
CUDASIM_ATOMIC(atomicInc, unsigned, old >= val ? 0u : old + 1u)
CUDASIM_ATOMIC(atomicDec, unsigned, (old == 0u || old > val) ? val : old - 1u)
#undef CUDASIM_ATOMIC

#define CUDASIM_ATOMIC_CAS(T)                                             \
  inline T atomicCAS(T* address, T compare, T val) {                      \
    std::atomic_ref<T> a(*address);                                       \
    a.compare_exchange_strong(compare, val, std::memory_order_relaxed);   \
    return compare;                                                       \
  }
CUDASIM_ATOMIC_CAS(int)
CUDASIM_ATOMIC_CAS(unsigned)
CUDASIM_ATOMIC_CAS(unsigned long long)
CUDASIM_ATOMIC_CAS(unsigned short)
#undef CUDASIM_ATOMIC_CAS
