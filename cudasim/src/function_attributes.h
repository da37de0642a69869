#pragma once
// The shared-memory limits a kernel's launch is held to on a device: its static __shared__
// memory (kernel_image.h) and the most dynamic shared memory it may ask for, 48 KiB less the
// static part unless cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) set
// another value (up to 227 KiB less the static part).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace cudasim {

struct SharedLimits {
  size_t static_bytes = 0;
  size_t max_dynamic_bytes = 0;
  bool opted_in = false;  // max_dynamic_bytes was set by cudaFuncSetAttribute
};

SharedLimits shared_limits(int device, const void* kernel);

// Why a launch of `kernel` (named `name`) with `dynamic_bytes` of dynamic shared memory
// cannot run on `device`, "" when it can; `code` gets CUDA's error: more than 48 KiB of
// static shared memory, cudaErrorInvalidKernelImage; more dynamic shared memory than the
// kernel may have, cudaErrorInvalidValue.
std::string shared_memory_refusal(const char* name, int device, const void* kernel, size_t dynamic_bytes,
                                  cudaError_t* code);

}  // namespace cudasim
