#pragma once
// Building blocks shared by the CUDA reduction, softmax, scan and index kernels: the
// accumulation type of each element type, warp shuffles and scans of any small state,
// 16-byte vector accesses. The online (max, sum of exponentials) state behind logsumexp
// and softmax, LseState, is kernels/reduce_math.h's, shared with the CPU.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <wick/tensor/dtype.h>

#include "kernels/reduce_math.h"

namespace wick::cuda_kernels {

inline constexpr int kWarp = 32;

// Sums and products accumulate in float for 16-bit floats and float32 (a per-thread serial
// run followed by a tree, as PyTorch does), double for float64, int64 for integers and bool.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double,
                                 std::conditional_t<std::is_floating_point_v<compute_t<T>>, float, int64_t>>;

// Moves any trivially copyable state whose size is a multiple of 4 bytes between lanes,
// word by word: `move` is one of the warp's 32-bit shuffles.
template <class S, class Move>
__device__ __forceinline__ S shuffle_words(const S& s, Move move) {
  static_assert(sizeof(S) % 4 == 0, "shuffled states are made of 32-bit words");
  constexpr int kWords = sizeof(S) / 4;
  uint32_t w[kWords];
  memcpy(w, &s, sizeof(S));
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = move(w[i]);
  S r;
  memcpy(&r, w, sizeof(S));
  return r;
}

template <class S>
__device__ __forceinline__ S shfl_down(const S& s, int delta) {
  return shuffle_words(s, [delta](uint32_t v) { return __shfl_down_sync(0xffffffffu, v, delta); });
}

template <class S>
__device__ __forceinline__ S shfl_xor(const S& s, int mask) {
  return shuffle_words(s, [mask](uint32_t v) { return __shfl_xor_sync(0xffffffffu, v, mask); });
}

template <class S>
__device__ __forceinline__ S shfl_up(const S& s, int delta) {
  return shuffle_words(s, [delta](uint32_t v) { return __shfl_up_sync(0xffffffffu, v, delta); });
}

// Every lane gets lane `src`'s state.
template <class S>
__device__ __forceinline__ S shfl_from(const S& s, int src) {
  return shuffle_words(s, [src](uint32_t v) { return __shfl_sync(0xffffffffu, v, src); });
}

// A state written by one block and read by another in the same launch goes through volatile
// accesses (ld/st.volatile: to L2, never this multiprocessor's L1, which is not coherent
// across blocks), word by word, as the CUDA programming guide's single-pass sum does.
template <class S>
__device__ __forceinline__ void store_volatile(S* p, const S& s) {
  static_assert(sizeof(S) % 4 == 0, "states are made of 32-bit words");
  uint32_t w[sizeof(S) / 4];
  memcpy(w, &s, sizeof(S));
  volatile uint32_t* dst = reinterpret_cast<volatile uint32_t*>(p);
#pragma unroll
  for (size_t i = 0; i < sizeof(S) / 4; ++i) dst[i] = w[i];
}

template <class S>
__device__ __forceinline__ S load_volatile(const S* p) {
  static_assert(sizeof(S) % 4 == 0, "states are made of 32-bit words");
  uint32_t w[sizeof(S) / 4];
  const volatile uint32_t* src = reinterpret_cast<const volatile uint32_t*>(p);
#pragma unroll
  for (size_t i = 0; i < sizeof(S) / 4; ++i) w[i] = src[i];
  S r;
  memcpy(&r, w, sizeof(S));
  return r;
}

// Inclusive prefix sum of v over the 32 lanes of a warp (lane = threadIdx % 32).
template <class A>
__device__ __forceinline__ A warp_inclusive_scan(A v, int lane) {
#pragma unroll
  for (int d = 1; d < kWarp; d *= 2) {
    const A up = shfl_up(v, d);
    if (lane >= d) v += up;
  }
  return v;
}

// Inclusive prefix of v over the 32 lanes of a warp under an associative `combine(earlier,
// later)` that need not commute.
template <class S, class Combine>
__device__ __forceinline__ S warp_inclusive_scan(S v, int lane, Combine combine) {
#pragma unroll
  for (int d = 1; d < kWarp; d *= 2) {
    const S up = shfl_up(v, d);
    if (lane >= d) v = combine(up, v);
  }
  return v;
}

// Combines the states of groups of `width` consecutive lanes (a power of two <= 32); the
// first lane of each group ends with its group's result. All 32 lanes must call it.
template <class S, class Combine>
__device__ __forceinline__ S warp_reduce_down(S s, int width, Combine combine) {
  for (int d = width / 2; d > 0; d /= 2) {
    S other = shfl_down(s, d);
    s = combine(s, other);
  }
  return s;
}

// The whole warp's result in every lane (butterfly).
template <class S, class Combine>
__device__ __forceinline__ S warp_allreduce(S s, Combine combine) {
#pragma unroll
  for (int d = kWarp / 2; d > 0; d /= 2) s = combine(s, shfl_xor(s, d));
  return s;
}

// The whole block's result in every thread. `smem` holds one state per warp; blockDim.x is
// a multiple of 32. Every thread of the block must call it.
template <class S, class Combine>
__device__ S block_allreduce(S s, S* smem, Combine combine) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  s = warp_allreduce(s, combine);
  if (lane == 0) smem[warp] = s;
  __syncthreads();
  // Every thread folds the per-warp results in the same order, so all agree bit for bit.
  S r = smem[0];
  for (int w = 1; w < warps; ++w) r = combine(r, smem[w]);
  __syncthreads();  // smem may be reused by the caller right after
  return r;
}

// Elements per 16-byte vector access (Pack<T, kVec<T>>, kernels/cuda/elementwise.cuh).
template <class T>
inline constexpr int kVec = static_cast<int>(16 / sizeof(T));

}  // namespace wick::cuda_kernels
