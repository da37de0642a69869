// Kernel execution: coordinates, barriers, shared memory, warp exchanges with CUDA's rules,
// atomics across concurrently running blocks, launch limits, and one wrong kernel per misuse
// the simulator must report. Misuse tests run on device 1, whose sticky error they clear
// with cudaDeviceReset, so device 0 stays healthy for the rest.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <cudasim/cudasim.h>

#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;

__global__ void coordinates(uint32_t* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  out[block * per_block + thread] = block * 1000 + thread;
}

TEST(Execution, EveryThreadOfEveryBlockRunsOnceWithItsCoordinates) {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  DeviceBuffer<uint32_t> out(3 * 2 * 2 * 24);
  ASSERT_EQ(launch(coordinates, grid, block, 0, out.ptr), cudaSuccess);
  auto h = out.read();
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 24; ++t) EXPECT_EQ(h[b * 24 + t], b * 1000 + t);
}

// Reverses each block's slice through static shared memory: wrong without a real barrier.
__global__ void reverse_block(const int* in, int* out) {
  __shared__ int tile[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = tile[blockDim.x - 1 - threadIdx.x];
}

TEST(Execution, SyncthreadsIsABarrierAndSharedMemoryIsPerBlock) {
  const int blocks = 64, threads = 256;
  std::vector<int> h(blocks * threads);
  std::iota(h.begin(), h.end(), 0);
  DeviceBuffer<int> in(h.size()), out(h.size());
  in.write(h);
  ASSERT_EQ(launch(reverse_block, blocks, threads, 0, in.ptr, out.ptr), cudaSuccess);
  auto r = out.read();
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t) ASSERT_EQ(r[b * threads + t], b * threads + threads - 1 - t);
}

__global__ void dynamic_shared_sum(const float* in, float* out) {
  float* s = cudasim::dynamic_shared<float>();
  s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

TEST(Execution, DynamicSharedMemoryIsSizedByTheLaunch) {
  const int blocks = 8, threads = 128;
  std::vector<float> h(blocks * threads, 1.0f);
  DeviceBuffer<float> in(h.size()), out(blocks);
  in.write(h);
  ASSERT_EQ(launch(dynamic_shared_sum, blocks, threads, threads * sizeof(float), in.ptr, out.ptr), cudaSuccess);
  for (float v : out.read()) EXPECT_EQ(v, 128.0f);
}

// Lane l of each warp receives what the documented rule says for every shuffle kind.
__global__ void shuffles(int* out, int width) {
  const int lane = threadIdx.x % 32;
  const int v = 100 + lane;
  int* o = out + threadIdx.x * 4;
  o[0] = __shfl_sync(0xffffffffu, v, 3, width);
  o[1] = __shfl_up_sync(0xffffffffu, v, 2, width);
  o[2] = __shfl_down_sync(0xffffffffu, v, 3, width);
  o[3] = __shfl_xor_sync(0xffffffffu, v, 9, width);
}

TEST(Execution, ShufflesFollowCudasRulesForEveryWidth) {
  for (int width : {32, 16, 8, 4, 2, 1}) {
    DeviceBuffer<int> out(64 * 4);
    ASSERT_EQ(launch(shuffles, 1, 64, 0, out.ptr, width), cudaSuccess);
    auto h = out.read();
    for (int t = 0; t < 64; ++t) {
      const int lane = t % 32, segment = lane / width * width, pos = lane % width;
      EXPECT_EQ(h[t * 4 + 0], 100 + segment + 3 % width) << "width " << width << " lane " << lane;
      EXPECT_EQ(h[t * 4 + 1], 100 + (pos >= 2 ? lane - 2 : lane)) << "up, width " << width << " lane " << lane;
      EXPECT_EQ(h[t * 4 + 2], 100 + (pos + 3 < width ? lane + 3 : lane)) << "down, width " << width << " lane " << lane;
      const int x = lane ^ 9;
      EXPECT_EQ(h[t * 4 + 3], 100 + ((x / width) > (lane / width) ? lane : x)) << "xor, width " << width << " lane " << lane;
    }
  }
}

__global__ void shuffle_doubles(double* out) {
  double v = threadIdx.x + 0.25;
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  out[threadIdx.x] = v;
}

TEST(Execution, ShufflesMove64BitValues) {
  DeviceBuffer<double> out(32);
  ASSERT_EQ(launch(shuffle_doubles, 1, 32, 0, out.ptr), cudaSuccess);
  for (double v : out.read()) EXPECT_EQ(v, 496.0 + 8.0);
}

__global__ void votes(unsigned* out) {
  const int lane = threadIdx.x % 32;
  out[threadIdx.x * 3 + 0] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  out[threadIdx.x * 3 + 1] = __all_sync(0xffffffffu, lane < 40);
  out[threadIdx.x * 3 + 2] = __any_sync(0xffffffffu, lane == 31);
}

TEST(Execution, BallotAllAndAny) {
  DeviceBuffer<unsigned> out(32 * 3);
  ASSERT_EQ(launch(votes, 1, 32, 0, out.ptr), cudaSuccess);
  auto h = out.read();
  unsigned expect = 0;
  for (int l = 0; l < 32; l += 3) expect |= 1u << l;
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(h[t * 3], expect);
    EXPECT_EQ(h[t * 3 + 1], 1u);
    EXPECT_EQ(h[t * 3 + 2], 1u);
  }
}

// Two half-warps exchange independently with their own masks.
__global__ void half_warps(int* out) {
  const int lane = threadIdx.x % 32;
  const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  out[threadIdx.x] = __shfl_sync(mask, lane * 10, lane < 16 ? 5 : 20);
}

TEST(Execution, PartialMasksExchangeAmongTheirLanes) {
  DeviceBuffer<int> out(32);
  ASSERT_EQ(launch(half_warps, 1, 32, 0, out.ptr), cudaSuccess);
  auto h = out.read();
  for (int l = 0; l < 32; ++l) EXPECT_EQ(h[l], l < 16 ? 50 : 200);
}

__global__ void count_up(unsigned long long* counter, float* fsum, int* imax) {
  atomicAdd(counter, 1ull);
  atomicAdd(fsum, 0.5f);
  atomicMax(imax, static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x));
}

TEST(Execution, AtomicsAreAtomicAcrossConcurrentBlocks) {
  DeviceBuffer<unsigned long long> counter(1);
  DeviceBuffer<float> fsum(1);
  DeviceBuffer<int> imax(1);
  ASSERT_EQ(cudaMemset(counter.ptr, 0, 8), cudaSuccess);
  ASSERT_EQ(cudaMemset(fsum.ptr, 0, 4), cudaSuccess);
  ASSERT_EQ(cudaMemset(imax.ptr, 0, 4), cudaSuccess);
  ASSERT_EQ(launch(count_up, 512, 128, 0, counter.ptr, fsum.ptr, imax.ptr), cudaSuccess);
  EXPECT_EQ(counter.read()[0], 512ull * 128);
  EXPECT_EQ(fsum.read()[0], 512.0f * 64);
  EXPECT_EQ(imax.read()[0], 512 * 128 - 1);
}

__global__ void early_exit_then_barrier(int* out, int n) {
  __shared__ int s[64];
  const int i = threadIdx.x;
  if (i >= n) return;  // exited threads count as arrived (Volta and later)
  s[i] = i;
  __syncthreads();
  out[i] = s[n - 1 - i];
}

TEST(Execution, ThreadsThatExitedDoNotHoldABarrier) {
  DeviceBuffer<int> out(64);
  ASSERT_EQ(launch(early_exit_then_barrier, 1, 64, 0, out.ptr, 40), cudaSuccess);
  auto h = out.read();
  for (int i = 0; i < 40; ++i) EXPECT_EQ(h[i], 39 - i);
}

// __syncthreads_count/_and/_or over the threads that arrive; threads that returned early
// take no part.
__global__ void barrier_reductions(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  if (t >= 100) return;
  out[t * 5 + 0] = __syncthreads_count(t % 3 == 0);
  out[t * 5 + 1] = __syncthreads_and(t < 100);
  out[t * 5 + 2] = __syncthreads_and(t != 5);
  out[t * 5 + 3] = __syncthreads_or(t == 99);
  out[t * 5 + 4] = __syncthreads_or(t > 100);
}

TEST(Execution, BarrierReductionsCountAndAndOr) {
  DeviceBuffer<int> out(100 * 5);
  ASSERT_EQ(launch(barrier_reductions, 1, 128, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int t = 0; t < 100; ++t) {
    EXPECT_EQ(h[t * 5 + 0], 34) << "0, 3, ..., 99";
    EXPECT_EQ(h[t * 5 + 1], 1);
    EXPECT_EQ(h[t * 5 + 2], 0);
    EXPECT_EQ(h[t * 5 + 3], 1);
    EXPECT_EQ(h[t * 5 + 4], 0) << "threads 101-127 returned before the barrier";
  }
}

__global__ void nothing(int*) {}

TEST(Execution, LaunchLimitsFailWithCudasErrors) {
  int* p = nullptr;
  EXPECT_EQ(launch(nothing, 1, 1025, 0, p), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // not sticky
  EXPECT_EQ(launch(nothing, 1, dim3(1, 1, 65), 0, p), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, dim3(1, 65536), 1, 0, p), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, dim3(1, 1, 65536), 1, 0, p), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, 0, 1, 0, p), cudaErrorInvalidConfiguration);
  EXPECT_EQ(launch(nothing, 1, 32, 48 * 1024 + 1, p), cudaErrorInvalidValue) << "the driver's answer to too much shared memory";
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("test_kernel"), std::string::npos);
  EXPECT_EQ(launch(nothing, dim3(1, 65535, 1), 1, 0, p), cudaSuccess) << "65535 blocks in y are valid";
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// --- misuse ---------------------------------------------------------------------------------

using ExecutionMisuse = OnDeviceOne;

__global__ void divergent_barrier(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

TEST_F(ExecutionMisuse, BarriersAtDifferentCallSites) {
  DeviceBuffer<int> out(32);
  const std::string d = misuse(divergent_barrier, 1, 32, out.ptr);
  EXPECT_NE(d.find("bad_kernel"), std::string::npos) << d;
  EXPECT_NE(d.find("different __syncthreads"), std::string::npos) << d;
}

__global__ void barrier_vs_shuffle(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    v = __shfl_sync(0xffffffffu, v, 0);
  }
  out[threadIdx.x] = v;
}

TEST_F(ExecutionMisuse, ABarrierNotReachedByEveryLiveThread) {
  DeviceBuffer<int> out(32);
  const std::string d = misuse(barrier_vs_shuffle, 1, 32, out.ptr);
  EXPECT_NE(d.find("no thread can make progress"), std::string::npos) << d;
}

__global__ void shuffle_with_exited_lane(int* out) {
  if (threadIdx.x == 7) return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x), 7);
}

TEST_F(ExecutionMisuse, AShuffleThatReadsALaneThatExited) {
  DeviceBuffer<int> out(32);
  const std::string d = misuse(shuffle_with_exited_lane, 1, 32, out.ptr);
  EXPECT_NE(d.find("bad_kernel"), std::string::npos) << d;
  EXPECT_TRUE(d.find("exited") != std::string::npos) << d;
}

__global__ void ballot_outside_its_mask(unsigned* out) { out[threadIdx.x] = __ballot_sync(0x0000ffffu, 1); }

TEST_F(ExecutionMisuse, ALaneCallingAWarpExchangeOutsideItsMask) {
  DeviceBuffer<unsigned> out(32);
  const std::string d = misuse(ballot_outside_its_mask, 1, 32, out.ptr);
  EXPECT_NE(d.find("without being in its mask"), std::string::npos) << d;
}

__global__ void shuffle_in_partial_warp(int* out) { out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1); }

TEST_F(ExecutionMisuse, AShuffleThatReadsALaneAPartialWarpDoesNotHave) {
  DeviceBuffer<int> out(48);
  const std::string d = misuse(shuffle_in_partial_warp, 1, 48, out.ptr);
  EXPECT_NE(d.find("does not have"), std::string::npos) << d;
}

__global__ void write_one(int* out) { out[threadIdx.x] = 1; }

TEST_F(ExecutionMisuse, AHostPointerDereferencedByAKernel) {
  std::vector<int> host(32);
  const std::string d = misuse(cudaErrorIllegalAddress, write_one, 1, 32, host.data());
  EXPECT_NE(d.find("argument 0"), std::string::npos) << d;
  EXPECT_NE(d.find("host memory"), std::string::npos) << d;
  EXPECT_EQ(host[0], 0) << "the kernel must not have run";
}

TEST_F(ExecutionMisuse, FreedDeviceMemoryDereferencedByAKernel) {
  int* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 128), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  const std::string d = misuse(cudaErrorIllegalAddress, write_one, 1, 32, p);
  EXPECT_NE(d.find("freed device memory"), std::string::npos) << d;
}

TEST_F(ExecutionMisuse, AnotherDevicesPointerWithoutPeerAccess) {
  int* p0 = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&p0, 128), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  const std::string d = misuse(cudaErrorIllegalAddress, write_one, 1, 32, p0);  // runs on device 1
  EXPECT_NE(d.find("without peer access"), std::string::npos) << d;
  // With peer access enabled the same kernel is fine.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaDeviceEnablePeerAccess(0, 0), cudaSuccess);
  cudasim::launch("peer_write", write_one, 1, 32, 0, nullptr, p0);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaDeviceDisablePeerAccess(0), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  int h[32];
  ASSERT_EQ(cudaMemcpy(h, p0, sizeof(h), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h[31], 1);
  cudaFree(p0);
}

TEST_F(ExecutionMisuse, AStickyErrorFailsLaterCallsUntilReset) {
  std::vector<int> host(32);
  cudasim::launch("bad_kernel", write_one, 1, 32, 0, nullptr, host.data());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  int* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress) << "reading a sticky error does not clear it";
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, 16), cudaSuccess);
  cudaFree(p);
}

}  // namespace
