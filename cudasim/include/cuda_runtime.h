#pragma once
// wick's CUDA simulator stands in for the toolkit's cuda_runtime.h when CUDA sources are
// compiled by the host compiler (-DWICK_CUDA=SIM). The API comes from NVIDIA's own
// cuda_runtime_api.h, so every signature is the toolkit's; the execution-space keywords
// become host C++ and the kernel-side built-ins come from <cudasim/device.h>.
//
// __shared__ variables are `static thread_local`: a block runs all its threads as fibers on
// one host thread, so the block's threads share them and blocks running at the same time
// on other host threads do not.
// NVIDIA's host_defines.h (which cublas_v2.h, cudnn.h or nccl.h may bring in first) defines
// these for the host compiler too; ours replace them.
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __constant__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
// The ABI tag marks __shared__ variables in the symbol table, where the simulator finds
// their sizes (src/kernel_image.h).
#define __shared__ static thread_local __attribute__((abi_tag("cudasim_shared")))
#define __constant__ static
#define __launch_bounds__(...)

#include <cuda_runtime_api.h>

#include <cudasim/device.h>
#include <cudasim/launch.h>

// The typed conveniences that the toolkit's cuda_runtime.h adds to the C API.
template <class T>
cudaError_t cudaMalloc(T** ptr, size_t size) {
  return ::cudaMalloc(reinterpret_cast<void**>(ptr), size);
}
template <class T>
cudaError_t cudaMallocHost(T** ptr, size_t size, unsigned int flags) {
  return ::cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T>
cudaError_t cudaHostAlloc(T** ptr, size_t size, unsigned int flags) {
  return ::cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T>
cudaError_t cudaFuncSetAttribute(T* entry, cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attr, value);
}
template <class T>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, T* entry) {
  return ::cudaFuncGetAttributes(attr, reinterpret_cast<const void*>(entry));
}
template <class T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* num_blocks, T func, int block_size,
                                                          size_t dynamic_bytes) {
  return ::cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks, reinterpret_cast<const void*>(func),
                                                                  block_size, dynamic_bytes, cudaOccupancyDefault);
}
template <class T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* num_blocks, T func, int block_size,
                                                                   size_t dynamic_bytes, unsigned int flags) {
  return ::cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks, reinterpret_cast<const void*>(func),
                                                                  block_size, dynamic_bytes, flags);
}
inline cudaError_t cudaEventCreate(cudaEvent_t* event, unsigned int flags) {
  return ::cudaEventCreateWithFlags(event, flags);
}
inline cudaError_t cudaMallocHost(void** ptr, size_t size, unsigned int flags) {
  return ::cudaHostAlloc(ptr, size, flags);
}
