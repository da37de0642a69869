// cudaOccupancyMaxActiveBlocksPerMultiprocessor against the toolkit's occupancy calculator
// (cuda_occupancy.h) for an H100: blocks per multiprocessor limited by threads (2048 per
// multiprocessor, whole warps), by shared memory (228 KiB per multiprocessor, each block's
// static + dynamic bytes plus 1 KiB reserved, in 128-byte units) and by the 32-block cap;
// 0 when a block could not launch at all. Registers are not modelled (no register count
// exists for host-compiled kernels): the answers are those of a kernel of <= 32 registers.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_support.h"

namespace {

constexpr size_t kKiB = 1024;

__global__ void occupancy_plain(int* out) { out[threadIdx.x] = 1; }

// 20 KiB of static shared memory.
__global__ void occupancy_static_20k(int* out) {
  __shared__ int tile[5 * 1024];
  tile[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x];
}

__global__ void occupancy_dynamic(int* out) { out[threadIdx.x] = cudasim::dynamic_shared<int>()[0]; }

int blocks_per_sm(const void* f, int threads, size_t dynamic, cudaError_t* err = nullptr) {
  int n = -1;
  const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, threads, dynamic);
  if (err) *err = e;
  else EXPECT_EQ(e, cudaSuccess) << cudasimLastErrorDetail();
  return n;
}

TEST(Occupancy, ThreadsLimitWholeWarpsPerMultiprocessor) {
  const void* f = reinterpret_cast<const void*>(&occupancy_plain);
  EXPECT_EQ(blocks_per_sm(f, 1024, 0), 2);
  EXPECT_EQ(blocks_per_sm(f, 512, 0), 4);
  EXPECT_EQ(blocks_per_sm(f, 256, 0), 8);
  EXPECT_EQ(blocks_per_sm(f, 96, 0), 21);  // 3 warps: 64 / 3
  EXPECT_EQ(blocks_per_sm(f, 33, 0), 32);  // 2 warps, rounded up from 33 threads
  EXPECT_EQ(blocks_per_sm(f, 32, 0), 32);  // 64 warps would fit; 32 blocks is the cap
  EXPECT_EQ(blocks_per_sm(f, 1, 0), 32);
  // The template of cuda_runtime.h takes the kernel itself.
  int n = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, occupancy_plain, 128, 0), cudaSuccess);
  EXPECT_EQ(n, 16);
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, occupancy_plain, 640, 0,
                                                                    cudaOccupancyDisableCachingOverride),
            cudaSuccess);
  EXPECT_EQ(n, 3);  // 20 warps: 64 / 20
}

TEST(Occupancy, SharedMemoryCountsStaticDynamicAndTheReservedKiB) {
  const void* s20 = reinterpret_cast<const void*>(&occupancy_static_20k);
  const void* dyn = reinterpret_cast<const void*>(&occupancy_dynamic);
  // 20 KiB + 1 KiB reserved per block: 228 / 21 = 10 blocks (threads allow 32).
  EXPECT_EQ(blocks_per_sm(s20, 64, 0), 10);
  // + 8 KiB dynamic: 228 / 29 = 7.
  EXPECT_EQ(blocks_per_sm(s20, 64, 8 * kKiB), 7);
  // 1 byte of dynamic shared memory takes a 128-byte unit: 21 KiB + 128 bytes, still 10.
  EXPECT_EQ(blocks_per_sm(s20, 64, 1), 10);
  // 45 KiB + 1 KiB: 4 blocks (4 * 46 = 184 KiB, 5 would be 230 KiB).
  EXPECT_EQ(blocks_per_sm(dyn, 64, 45 * kKiB), 4);
  // Exactly 228 / 2 per block with the reserved KiB: 2 blocks; one byte more: 1. Past 48 KiB
  // the kernel must opt in, as for a launch.
  ASSERT_EQ(cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(227 * kKiB)),
            cudaSuccess);
  EXPECT_EQ(blocks_per_sm(dyn, 64, 113 * kKiB), 2);
  EXPECT_EQ(blocks_per_sm(dyn, 64, 113 * kKiB + 1), 1);
  EXPECT_EQ(blocks_per_sm(dyn, 64, 227 * kKiB), 1);
  EXPECT_EQ(blocks_per_sm(dyn, 1024, 100 * kKiB), 2);  // both limits: threads 2, shared memory 2
  EXPECT_EQ(blocks_per_sm(dyn, 1024, 120 * kKiB), 1);
  ASSERT_EQ(cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(48 * kKiB)),
            cudaSuccess);
}

TEST(Occupancy, BlocksThatCannotLaunchGiveZeroAndBadArgumentsFail) {
  const void* f = reinterpret_cast<const void*>(&occupancy_plain);
  const void* s20 = reinterpret_cast<const void*>(&occupancy_static_20k);
  EXPECT_EQ(blocks_per_sm(f, 1025, 0), 0);                // more threads than a block may have
  EXPECT_EQ(blocks_per_sm(s20, 64, 28 * kKiB + 1), 0);  // static + dynamic over 48 KiB, not opted in
  EXPECT_EQ(blocks_per_sm(s20, 64, 28 * kKiB), 4);        // exactly 48 KiB: 228 / 49
  cudaError_t e = cudaSuccess;
  blocks_per_sm(f, 0, 0, &e);
  EXPECT_EQ(e, cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("block size 0"), std::string::npos) << cudasimLastErrorDetail();
  blocks_per_sm(f, -32, 0, &e);
  EXPECT_EQ(e, cudaErrorInvalidValue);
  blocks_per_sm(nullptr, 32, 0, &e);
  EXPECT_EQ(e, cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, f, 32, 0), cudaErrorInvalidValue);
  int n = 0;
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, f, 32, 0, 4u), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue) << "recorded, not sticky";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
