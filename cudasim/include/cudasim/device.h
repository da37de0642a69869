#pragma once
// The kernel-side built-ins of CUDA C++ for kernels compiled by the host compiler: the
// thread and block coordinates, __syncthreads, warp shuffles and votes, atomics and the bit
// casts. Each simulated thread runs on a fiber; the executor (cudasim/src/executor.cpp)
// sets the coordinates whenever it switches threads, and the synchronising built-ins are
// calls into it, so a barrier is a real barrier and a shuffle a real exchange among lanes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>  // the float overloads of exp, log, ... in the global namespace, as in CUDA
#include <vector_types.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

namespace cudasim {

extern thread_local uint3 t_thread_idx;
extern thread_local uint3 t_block_idx;
extern thread_local dim3 t_block_dim;
extern thread_local dim3 t_grid_dim;
extern thread_local unsigned char* t_dynamic_shared;

// Waits until every thread of the block that has not exited reaches the barrier at the
// same call site (the source line: machine addresses differ where the compiler duplicated
// code); misuse is reported as an error naming the kernel (executor.cpp).
void syncthreads(const char* file, unsigned line);

enum class WarpOp : int { Index, Up, Down, Xor, Ballot, All, Any, Sync };

// One lane's part in a warp-wide exchange: blocks until every lane named in `mask` arrives
// at a warp operation of the same kind and mask, then returns this lane's result (for
// shuffles, the bits of the source lane's value; for votes, the vote).
uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t value, int arg, int width);

template <class T>
T* dynamic_shared() {
  return reinterpret_cast<T*>(t_dynamic_shared);
}

template <class T>
uint64_t to_word(T v) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 2),
                "warp shuffles move 16-, 32- or 64-bit values");
  uint64_t w = 0;
  std::memcpy(&w, &v, sizeof(T));
  return w;
}

template <class T>
T from_word(uint64_t w) {
  T v;
  std::memcpy(&v, &w, sizeof(T));
  return v;
}

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

#define threadIdx (static_cast<const uint3&>(::cudasim::t_thread_idx))
#define blockIdx (static_cast<const uint3&>(::cudasim::t_block_idx))
#define blockDim (static_cast<const dim3&>(::cudasim::t_block_dim))
#define gridDim (static_cast<const dim3&>(::cudasim::t_grid_dim))
inline constexpr int warpSize = 32;

inline void __syncthreads(std::source_location where = std::source_location::current()) {
  ::cudasim::syncthreads(where.file_name(), where.line());
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)::cudasim::warp_exchange(::cudasim::WarpOp::Sync, mask, 0, 0, 32);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32) {
  return ::cudasim::from_word<T>(::cudasim::warp_exchange(::cudasim::WarpOp::Index, mask, ::cudasim::to_word(var), src_lane, width));
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::cudasim::from_word<T>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::Up, mask, ::cudasim::to_word(var), static_cast<int>(delta), width));
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  return ::cudasim::from_word<T>(
      ::cudasim::warp_exchange(::cudasim::WarpOp::Down, mask, ::cudasim::to_word(var), static_cast<int>(delta), width));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
  return ::cudasim::from_word<T>(::cudasim::warp_exchange(::cudasim::WarpOp::Xor, mask, ::cudasim::to_word(var), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(::cudasim::warp_exchange(::cudasim::WarpOp::Ballot, mask, predicate != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(::cudasim::warp_exchange(::cudasim::WarpOp::All, mask, predicate != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(::cudasim::warp_exchange(::cudasim::WarpOp::Any, mask, predicate != 0, 0, 32));
}

// CUDA's min and max of any two arithmetic values, in their common type.
template <class A, class B>
  requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B>
  requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}

inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline long long __double_as_longlong(double d) { return std::bit_cast<long long>(d); }
inline double __longlong_as_double(long long l) { return std::bit_cast<double>(l); }

// Atomics: CUDA's overload set (no more, so that code that compiles here compiles with nvcc).
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
