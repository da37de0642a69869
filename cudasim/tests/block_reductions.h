#pragma once
// Two block sums of the same data, one by a shared-memory tree (barriers only) and one by
// warp shuffles (the shape of wick's reductions): the simulator's cost of a warp exchange
// is judged against its cost of a barrier (warp_speed_test.cpp, warp_bench.cpp).
#include <cuda_runtime.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace cudasim_tests {

inline constexpr int kReduceThreads = 256;

__global__ void tree_block_sum(const float* in, float* out) {
  __shared__ float s[kReduceThreads];
  s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

__global__ void shuffle_block_sum(const float* in, float* out) {
  __shared__ float warp_sums[kReduceThreads / 32];
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
    if (lane == 0) out[blockIdx.x] = v;
  }
}

struct Seconds {
  double wall = 0;
  double cpu = 0;  // of the whole process: what the simulator's threads spent
};

inline double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The time `kernel` takes over `in` (n floats, a multiple of kReduceThreads), the best of
// `repeats` by CPU time (on a shared machine the wall time says more about the neighbours);
// out receives one sum per block. A negative time when the launch failed.
inline Seconds time_block_sum(void (*kernel)(const float*, float*), const float* in, float* out, size_t n, int repeats) {
  Seconds best{1e300, 1e300};
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    cudasim::launch("block_sum", kernel, static_cast<unsigned>(n / kReduceThreads), kReduceThreads, 0, nullptr, in, out);
    if (cudaDeviceSynchronize() != cudaSuccess) return {-1, -1};
    const double cpu = cpu_seconds() - cpu_start;
    if (cpu < best.cpu) best = {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), cpu};
  }
  return best;
}

}  // namespace cudasim_tests
