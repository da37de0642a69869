// What a program can ask about a simulated device: cudaGetDeviceProperties and
// cudaDeviceGetAttribute, both from one table of an H100 SXM's numbers (h100.h), so that
// code sizing grids, shared memory or workspaces from them takes the paths it would take on
// that GPU. Features the simulator does not implement (managed memory, memory pools,
// cooperative or cluster launches, textures) are reported absent.
#include <cstdio>
#include <cstring>

#include "h100.h"
#include "internal.h"

namespace cudasim {

namespace {

cudaDeviceProp properties(int device) {
  cudaDeviceProp p;
  std::memset(&p, 0, sizeof p);
  std::snprintf(p.name, sizeof p.name, "cudasim H100 SXM (simulated cuda:%d)", device);
  p.uuid.bytes[0] = static_cast<char>(device + 1);  // distinct per device, never all zero
  p.totalGlobalMem = device_capacity(device);
  p.sharedMemPerBlock = h100::kSharedPerBlock;
  p.regsPerBlock = h100::kRegistersPerBlock;
  p.warpSize = h100::kWarpSize;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = h100::kMaxThreadsPerBlock;
  for (int i = 0; i < 3; ++i) {
    p.maxThreadsDim[i] = h100::kMaxBlockDim[i];
    p.maxGridSize[i] = h100::kMaxGridDim[i];
  }
  p.totalConstMem = h100::kConstantBytes;
  p.major = h100::kComputeMajor;
  p.minor = h100::kComputeMinor;
  p.textureAlignment = 512;
  p.texturePitchAlignment = 32;
  p.multiProcessorCount = h100::kMultiprocessors;
  p.canMapHostMemory = 1;
  p.surfaceAlignment = 512;
  p.concurrentKernels = 1;
  p.ECCEnabled = 1;
  p.pciBusID = device + 1;
  p.asyncEngineCount = h100::kAsyncEngines;
  p.unifiedAddressing = 1;
  p.memoryBusWidth = h100::kMemoryBusWidth;
  p.l2CacheSize = h100::kL2Bytes;
  p.maxThreadsPerMultiProcessor = h100::kMaxThreadsPerMultiprocessor;
  p.streamPrioritiesSupported = 1;
  p.globalL1CacheSupported = 1;
  p.localL1CacheSupported = 1;
  p.sharedMemPerMultiprocessor = h100::kSharedPerMultiprocessor;
  p.regsPerMultiprocessor = h100::kRegistersPerMultiprocessor;
  p.computePreemptionSupported = 1;
  p.sharedMemPerBlockOptin = h100::kSharedPerBlockOptin;
  p.maxBlocksPerMultiProcessor = h100::kMaxBlocksPerMultiprocessor;
  p.reservedSharedMemPerBlock = h100::kReservedSharedPerBlock;
  p.hostNumaId = -1;
  return p;
}

}  // namespace

}  // namespace cudasim

using namespace cudasim;

extern "C" {

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (cudaError_t e = check_device(device)) return e;
  if (!prop) return record_error(cudaErrorInvalidValue, "cudaGetDeviceProperties: null result pointer");
  *prop = properties(device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (cudaError_t e = check_device(device)) return e;
  if (!value) return record_error(cudaErrorInvalidValue);
  const cudaDeviceProp p = properties(device);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrTotalConstantMemory: *value = static_cast<int>(p.totalConstMem); break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxPitch: *value = static_cast<int>(p.memPitch); break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrClockRate: *value = h100::kClockKhz; break;
    case cudaDevAttrTextureAlignment: *value = static_cast<int>(p.textureAlignment); break;
    case cudaDevAttrGpuOverlap: *value = 1; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrCanMapHostMemory: *value = p.canMapHostMemory; break;
    case cudaDevAttrSurfaceAlignment: *value = static_cast<int>(p.surfaceAlignment); break;
    case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; break;
    case cudaDevAttrEccEnabled: *value = p.ECCEnabled; break;
    case cudaDevAttrPciBusId: *value = p.pciBusID; break;
    case cudaDevAttrMemoryClockRate: *value = h100::kMemoryClockKhz; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; break;
    case cudaDevAttrUnifiedAddressing: *value = p.unifiedAddressing; break;
    case cudaDevAttrTexturePitchAlignment: *value = static_cast<int>(p.texturePitchAlignment); break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrStreamPrioritiesSupported: *value = p.streamPrioritiesSupported; break;
    case cudaDevAttrGlobalL1CacheSupported: *value = p.globalL1CacheSupported; break;
    case cudaDevAttrLocalL1CacheSupported: *value = p.localL1CacheSupported; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = static_cast<int>(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
    case cudaDevAttrComputePreemptionSupported: *value = p.computePreemptionSupported; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(p.sharedMemPerBlockOptin); break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = static_cast<int>(p.reservedSharedMemPerBlock); break;
    case cudaDevAttrHostNumaId: *value = p.hostNumaId; break;
    default: *value = 0; break;  // a feature the simulator does not have
  }
  return cudaSuccess;
}

}  // extern "C"
