#pragma once
// The shared-memory limits a kernel's launch is held to on a device: its static __shared__
// memory (kernel_image.h) and the most dynamic shared memory it may ask for, 48 KiB less the
// static part unless cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize) set
// another value (up to 227 KiB less the static part).
#include <cstddef>

namespace cudasim {

struct SharedLimits {
  size_t static_bytes = 0;
  size_t max_dynamic_bytes = 0;
  bool opted_in = false;  // max_dynamic_bytes was set by cudaFuncSetAttribute
};

SharedLimits shared_limits(int device, const void* kernel);

}  // namespace cudasim
