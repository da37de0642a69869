// Kernel attributes: cudaFuncSetAttribute / cudaFuncGetAttributes, the shared-memory limits
// a launch of the kernel is held to (function_attributes.h), and the occupancy calculator
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags]).
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

std::string shared_memory_refusal(const char* name, int device, const void* kernel, size_t dynamic_bytes,
                                  cudaError_t* code) {
  const SharedLimits shared = shared_limits(device, kernel);
  // Built only for a refusal: a launch's bookkeeping allocates nothing (tests/host_cost).
  const auto who = [name] { return std::string("kernel '") + name + "'"; };
  if (shared.static_bytes > h100::kStaticSharedPerKernel) {
    *code = cudaErrorInvalidKernelImage;
    return who() + " declares " + std::to_string(shared.static_bytes) +
           " bytes of static __shared__ memory (with the device functions it calls): nvcc refuses more than 48 KiB "
           "(use dynamic shared memory)";
  }
  if (dynamic_bytes > shared.max_dynamic_bytes) {
    *code = cudaErrorInvalidValue;
    return who() + ": " + std::to_string(dynamic_bytes) + " bytes of dynamic shared memory with " +
           std::to_string(shared.static_bytes) + " of static, where at most " +
           std::to_string(shared.max_dynamic_bytes) + " are allowed" +
           (shared.opted_in ? " (its cudaFuncAttributeMaxDynamicSharedMemorySize)"
                            : " (48 KiB per block in all, unless the kernel opts in with "
                              "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize))");
  }
  return {};
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
                            "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, " +
                                std::to_string(value) + "): at most " + std::to_string(limit) +
                                " bytes (227 KiB per block less the kernel's " + std::to_string(static_bytes) +
                                " bytes of static shared memory)");
      Attributes& a = attributes();
      std::lock_guard<std::mutex> lock(a.mutex);
      a.max_dynamic[{device, func}] = static_cast<size_t>(value);
      return cudaSuccess;
    }
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      // A hint about the L1/shared split, which the simulator has no use for.
      if (value < -1 || value > 100)
        return record_error(cudaErrorInvalidValue,
                            "cudaFuncSetAttribute(cudaFuncAttributePreferredSharedMemoryCarveout, " +
                                std::to_string(value) + "): -1 or a percentage");
      return cudaSuccess;
    default:
      return record_error(cudaErrorInvalidValue, "cudaFuncSetAttribute: attribute " +
                                                     std::to_string(static_cast<int>(attr)) + " is not modelled");
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

// Blocks of `block_size` threads with `dynamic_bytes` of dynamic shared memory that one
// multiprocessor holds at once, by the rules of the toolkit's occupancy calculator
// (cuda_occupancy.h) for compute capability 9.0: the fewest allowed by
// - threads: 2048 per multiprocessor over the block's warps (rounded up to whole warps);
// - shared memory: 228 KiB per multiprocessor over the block's static + dynamic bytes plus
//   the 1 KiB the driver reserves per block, rounded up to 128-byte units (the default
//   carveout: the whole 228 KiB is available);
// - blocks: 32 per multiprocessor;
// - registers: not modelled. The simulator compiles kernels for the host, so no register
//   count exists (cudaFuncAttributes::numRegs is 0); it assumes the register file never
//   limits, which on a GPU holds for kernels of at most 32 registers per thread (65536 /
//   2048). A GPU may answer fewer blocks for kernels that use more.
// No block fits (0, not an error, as the calculator answers) when the block has more than
// 1024 threads, or its shared memory exceeds what a launch of the kernel may use (48 KiB in
// all, or the kernel's cudaFuncAttributeMaxDynamicSharedMemorySize).
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* num_blocks, const void* func, int block_size,
                                                                   size_t dynamic_bytes, unsigned int flags) {
  const int device = current_device();
  if (cudaError_t e = sticky_error(device)) return record_error(e);
  if (!num_blocks)
    return record_error(cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessor: null result pointer");
  if (!func)
    return record_error(cudaErrorInvalidDeviceFunction, "cudaOccupancyMaxActiveBlocksPerMultiprocessor: null function");
  if (block_size <= 0)
    return record_error(cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessor: block size " +
                                                   std::to_string(block_size) + " is not positive");
  if (flags != cudaOccupancyDefault && flags != cudaOccupancyDisableCachingOverride)
    return record_error(cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags: flags " +
                                                   std::to_string(flags) +
                                                   " are not cudaOccupancyDefault or "
                                                   "cudaOccupancyDisableCachingOverride");
  *num_blocks = 0;
  if (block_size > h100::kMaxThreadsPerBlock) return cudaSuccess;
  const SharedLimits l = shared_limits(device, func);
  if (dynamic_bytes > l.max_dynamic_bytes) return cudaSuccess;
  constexpr size_t kUnit = 128;
  const size_t shared = (l.static_bytes + dynamic_bytes + h100::kReservedSharedPerBlock + kUnit - 1) / kUnit * kUnit;
  const int warps = (block_size + h100::kWarpSize - 1) / h100::kWarpSize;
  const int by_threads = h100::kMaxThreadsPerMultiprocessor / h100::kWarpSize / warps;
  const int by_shared = static_cast<int>(h100::kSharedPerMultiprocessor / shared);
  *num_blocks = std::min({by_threads, by_shared, h100::kMaxBlocksPerMultiprocessor});
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* num_blocks, const void* func, int block_size,
                                                          size_t dynamic_bytes) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks, func, block_size, dynamic_bytes,
                                                                cudaOccupancyDefault);
}

}  // extern "C"
