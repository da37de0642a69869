#pragma once
// The numbers of the device the simulator models, an H100 SXM (compute capability 9.0), in
// one place: cudaGetDeviceProperties, cudaDeviceGetAttribute and the launch checks all read
// them, so what a program asks about the device and what a launch is held to agree.
#include <cstddef>

namespace cudasim::h100 {

inline constexpr int kComputeMajor = 9, kComputeMinor = 0;
inline constexpr int kMultiprocessors = 132;
inline constexpr int kWarpSize = 32;
inline constexpr int kMaxThreadsPerBlock = 1024;
inline constexpr int kMaxBlockDim[3] = {1024, 1024, 64};
inline constexpr int kMaxGridDim[3] = {2147483647, 65535, 65535};
inline constexpr int kMaxThreadsPerMultiprocessor = 2048;
inline constexpr int kMaxBlocksPerMultiprocessor = 32;
inline constexpr int kRegistersPerBlock = 65536;
inline constexpr int kRegistersPerMultiprocessor = 65536;
// Shared memory: 48 KiB per block (static and dynamic together) unless the kernel opts in
// with cudaFuncAttributeMaxDynamicSharedMemorySize, then up to 227 KiB; 228 KiB per
// multiprocessor, of which the driver reserves 1 KiB per block. Static __shared__ data is
// limited to 48 KiB by the compiler.
inline constexpr size_t kSharedPerBlock = 48 * 1024;
inline constexpr size_t kSharedPerBlockOptin = 227 * 1024;
inline constexpr size_t kSharedPerMultiprocessor = 228 * 1024;
inline constexpr size_t kReservedSharedPerBlock = 1024;
inline constexpr size_t kStaticSharedPerKernel = 48 * 1024;
inline constexpr size_t kConstantBytes = 64 * 1024;
inline constexpr int kL2Bytes = 50 * 1024 * 1024;
inline constexpr int kMemoryBusWidth = 5120;
inline constexpr int kMemoryClockKhz = 2619000;
inline constexpr int kClockKhz = 1980000;
inline constexpr int kAsyncEngines = 3;
// What one thread may use of local memory (its stack), the most sm_90 allows.
inline constexpr size_t kLocalBytesPerThread = 512 * 1024;

}  // namespace cudasim::h100
