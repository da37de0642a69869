// Kernel attributes: cudaFuncSetAttribute / cudaFuncGetAttributes, and the shared-memory
// limits a launch of the kernel is held to (function_attributes.h).
#include "function_attributes.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "h100.h"
#include "internal.h"
#include "kernel_image.h"

namespace cudasim {

namespace {

struct Attributes {
  std::mutex mutex;
  // Set values of cudaFuncAttributeMaxDynamicSharedMemorySize, by device and kernel: the
  // attribute belongs to the kernel as loaded on a device.
  std::map<std::pair<int, const void*>, size_t> max_dynamic;
};

Attributes& attributes() {
  static Attributes* a = new Attributes;
  return *a;
}

}  // namespace

SharedLimits shared_limits(int device, const void* kernel) {
  SharedLimits l;
  l.static_bytes = static_shared_bytes(kernel);
  l.max_dynamic_bytes = l.static_bytes < h100::kSharedPerBlock ? h100::kSharedPerBlock - l.static_bytes : 0;
  Attributes& a = attributes();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (auto it = a.max_dynamic.find({device, kernel}); it != a.max_dynamic.end()) {
    l.max_dynamic_bytes = it->second;
    l.opted_in = true;
  }
  return l;
}

}  // namespace cudasim

using namespace cudasim;

extern "C" {

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  const int device = current_device();
  if (cudaError_t e = sticky_error(device)) return record_error(e);
  if (!func) return record_error(cudaErrorInvalidDeviceFunction, "cudaFuncSetAttribute: null function");
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize: {
      const size_t static_bytes = static_shared_bytes(func);
      const size_t limit = h100::kSharedPerBlockOptin - std::min(static_bytes, h100::kSharedPerBlockOptin);
      if (value < 0 || static_cast<size_t>(value) > limit)
        return record_error(cudaErrorInvalidValue,
                            "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, " + std::to_string(value) +
                                "): at most " + std::to_string(limit) + " bytes (227 KiB per block less the kernel's " +
                                std::to_string(static_bytes) + " bytes of static shared memory)");
      Attributes& a = attributes();
      std::lock_guard<std::mutex> lock(a.mutex);
      a.max_dynamic[{device, func}] = static_cast<size_t>(value);
      return cudaSuccess;
    }
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      // A hint about the L1/shared split, which the simulator has no use for.
      if (value < -1 || value > 100)
        return record_error(cudaErrorInvalidValue, "cudaFuncSetAttribute(cudaFuncAttributePreferredSharedMemoryCarveout, " +
                                                       std::to_string(value) + "): -1 or a percentage");
      return cudaSuccess;
    default:
      return record_error(cudaErrorInvalidValue,
                          "cudaFuncSetAttribute: attribute " + std::to_string(static_cast<int>(attr)) + " is not modelled");
  }
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  const int device = current_device();
  if (cudaError_t e = sticky_error(device)) return record_error(e);
  if (!attr) return record_error(cudaErrorInvalidValue, "cudaFuncGetAttributes: null result pointer");
  if (!func) return record_error(cudaErrorInvalidDeviceFunction, "cudaFuncGetAttributes: null function");
  const SharedLimits l = shared_limits(device, func);
  *attr = cudaFuncAttributes{};
  attr->sharedSizeBytes = l.static_bytes;
  attr->maxThreadsPerBlock = h100::kMaxThreadsPerBlock;
  attr->maxDynamicSharedSizeBytes = static_cast<int>(l.max_dynamic_bytes);
  attr->ptxVersion = h100::kComputeMajor * 10 + h100::kComputeMinor;
  attr->binaryVersion = attr->ptxVersion;
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

}  // extern "C"
