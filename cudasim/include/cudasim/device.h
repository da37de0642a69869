#pragma once
// The kernel-side built-ins of CUDA C++ for kernels compiled by the host compiler: the
// thread and block coordinates, the block barriers, and (in the headers included below)
// warp exchanges, integer intrinsics, atomics and cache-hinted loads. Each simulated thread
// runs on a fiber; the executor (cudasim/src/executor.cpp) sets the coordinates whenever it
// switches threads, and the synchronising built-ins are calls into it, so a barrier is a
// real barrier and a shuffle a real exchange among lanes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>  // the float overloads of exp, log, ... in the global namespace, as in CUDA
#include <vector_types.h>

#include <atomic>
#include <source_location>

namespace cudasim {

extern thread_local uint3 t_thread_idx;
extern thread_local uint3 t_block_idx;
extern thread_local dim3 t_block_dim;
extern thread_local dim3 t_grid_dim;
extern thread_local unsigned char* t_dynamic_shared;

// What a block barrier computes besides waiting: __syncthreads_count/_and/_or.
enum class BarrierKind : int { Plain, Count, And, Or };

// Waits until every thread of the block that has not exited reaches the barrier at the
// same call site (the source line: machine addresses differ where the compiler duplicated
// code); returns the barrier's reduction of `predicate` over the threads that arrived.
// Misuse is reported as an error naming the kernel (executor.cpp).
int syncthreads(const char* file, unsigned line, BarrierKind kind, int predicate);

template <class T>
T* dynamic_shared() {
  return reinterpret_cast<T*>(t_dynamic_shared);
}

}  // namespace cudasim

#define threadIdx (static_cast<const uint3&>(::cudasim::t_thread_idx))
#define blockIdx (static_cast<const uint3&>(::cudasim::t_block_idx))
#define blockDim (static_cast<const dim3&>(::cudasim::t_block_dim))
#define gridDim (static_cast<const dim3&>(::cudasim::t_grid_dim))
inline constexpr int warpSize = 32;

inline void __syncthreads(std::source_location where = std::source_location::current()) {
  (void)::cudasim::syncthreads(where.file_name(), where.line(), ::cudasim::BarrierKind::Plain, 0);
}
inline int __syncthreads_count(int predicate, std::source_location where = std::source_location::current()) {
  return ::cudasim::syncthreads(where.file_name(), where.line(), ::cudasim::BarrierKind::Count, predicate);
}
inline int __syncthreads_and(int predicate, std::source_location where = std::source_location::current()) {
  return ::cudasim::syncthreads(where.file_name(), where.line(), ::cudasim::BarrierKind::And, predicate);
}
inline int __syncthreads_or(int predicate, std::source_location where = std::source_location::current()) {
  return ::cudasim::syncthreads(where.file_name(), where.line(), ::cudasim::BarrierKind::Or, predicate);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

#include <cudasim/atomics.h>
#include <cudasim/cache_hints.h>
#include <cudasim/intrinsics.h>
#include <cudasim/warp.h>
