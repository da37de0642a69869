#pragma once
// The one place where kernels are launched and dynamic shared memory is declared, so that
// the same kernel sources build with nvcc (<<<>>>) and with the host compiler against
// wick's CUDA simulator (cudasim/, -DWICK_CUDA=SIM), which launches through a function.
// Pass the kernel fully instantiated (&kernel<T, ...>); the arguments convert to its
// parameter types as in a <<<>>> launch. The launch error is left for the caller's
// WICK_CUDA_CHECK_LAUNCH, which names the op.
#include <atomic>
#include <cstddef>
#include <utility>

#include "kernels/cuda/cuda_check.h"

namespace wick::cuda_kernels {

template <class... P, class... A>
void launch_kernel(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, A&&... args) {
#if defined(__CUDACC__)
  (void)name;
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<A>(args)...);
#else
  (void)cudasim::launch(name, kernel, grid, block, shared_bytes, stream, std::forward<A>(args)...);
#endif
}

// A device attribute, asked once per device (the call costs as much host time as a small
// launch). Attributes that are 0 are asked again each time.
template <cudaDeviceAttr kAttr>
int device_attribute(int device) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> known[kMaxDevices] = {};
  if (device >= 0 && device < kMaxDevices)
    if (const int v = known[device].load(std::memory_order_relaxed)) return v;
  int v = 0;
  WICK_CUDA_CHECK(cudaDeviceGetAttribute(&v, kAttr, device));
  if (device >= 0 && device < kMaxDevices) known[device].store(v, std::memory_order_relaxed);
  return v;
}

// The block's dynamic shared memory (the launch's shared_bytes), 16-byte aligned.
template <class T>
__device__ __forceinline__ T* dynamic_shared_memory() {
#if defined(__CUDACC__)
  extern __shared__ __align__(16) unsigned char wick_dynamic_shared[];
  return reinterpret_cast<T*>(wick_dynamic_shared);
#else
  return cudasim::dynamic_shared<T>();
#endif
}

}  // namespace wick::cuda_kernels
