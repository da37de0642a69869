// Shared memory limits as an H100 applies them: static and dynamic shared memory together
// within 48 KiB per block unless the kernel opts in with
// cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize), then up to 227 KiB;
// static __shared__ data over 48 KiB is refused (nvcc refuses to compile it).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;

constexpr size_t kKiB = 1024;

// 40 KiB of static shared memory, plus whatever dynamic shared memory the launch gives.
__global__ void static_40k(int* out, int dynamic_ints) {
  __shared__ int tile[10 * 1024];
  int* extra = cudasim::dynamic_shared<int>();
  tile[threadIdx.x] = static_cast<int>(threadIdx.x);
  if (dynamic_ints > 0) extra[dynamic_ints - 1 - static_cast<int>(threadIdx.x)] = 1;
  __syncthreads();
  out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x] +
                     (dynamic_ints > 0 ? extra[dynamic_ints - 1 - static_cast<int>(threadIdx.x)] : 0);
}

// More static shared memory than the compiler allows.
__global__ void static_64k(int* out) {
  __shared__ int tile[16 * 1024];
  tile[threadIdx.x] = 1;
  out[threadIdx.x] = tile[threadIdx.x];
}

// Only dynamic shared memory: writes its last byte.
__global__ void dynamic_only(unsigned char* out, int bytes) {
  unsigned char* s = cudasim::dynamic_shared<unsigned char>();
  s[bytes - 1 - static_cast<int>(threadIdx.x)] = static_cast<unsigned char>(threadIdx.x + 1);
  __syncthreads();
  out[threadIdx.x] = s[bytes - 1 - static_cast<int>(threadIdx.x)];
}

// 32 KiB of shared memory declared in a device function rather than in the kernel.
__device__ int* device_tile() {
  __shared__ int tile[8 * 1024];
  return tile;
}

// 24 KiB of its own and 32 KiB through the device function: 56 KiB, which nvcc refuses.
__global__ void shared_through_a_device_function(int* out) {
  __shared__ int own[6 * 1024];
  int* tile = device_tile();
  tile[threadIdx.x] = static_cast<int>(threadIdx.x);
  own[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x] + own[threadIdx.x];
}

// 8 KiB of its own and the same 32 KiB: within the limit, but not with 16 KiB of dynamic
// shared memory.
__global__ void small_with_a_device_function(int* out) {
  __shared__ int own[2 * 1024];
  int* tile = device_tile();
  tile[threadIdx.x] = 2;
  own[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x] + own[threadIdx.x];
}

class SharedMemoryMisuse : public OnDeviceOne {};

// What a device function declares is found when the kernel's first block writes it: that
// launch fails (sticky, as the error comes from the device's work), later ones at once.
TEST_F(SharedMemoryMisuse, DeviceFunctionsSharedMemoryCountsAgainstTheLimit) {
  cudaFuncAttributes a{};
  ASSERT_EQ(cudaFuncGetAttributes(&a, shared_through_a_device_function), cudaSuccess);
  if (a.sharedSizeBytes < 56 * kKiB) {  // the kernel's first run in this process (not a --gtest_repeat)
    EXPECT_EQ(a.sharedSizeBytes, 24 * kKiB) << "its own variables only, until a block has run";
    std::string d;
    {
      DeviceBuffer<int> first(32);  // freed by the reset that misuse() ends with
      d = misuse(cudaErrorInvalidKernelImage, shared_through_a_device_function, 1, 32, first.ptr);
    }
    EXPECT_NE(d.find("57344 bytes of static __shared__"), std::string::npos) << d;
  }
  DeviceBuffer<int> out(32);
  EXPECT_EQ(launch(shared_through_a_device_function, 1, 32, 0, out.ptr), cudaErrorInvalidKernelImage)
      << "known from now on: refused at the launch";
  ASSERT_EQ(cudaFuncGetAttributes(&a, shared_through_a_device_function), cudaSuccess);
  EXPECT_EQ(a.sharedSizeBytes, 56 * kKiB);

  ASSERT_EQ(launch(small_with_a_device_function, 1, 32, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "40 KiB in all: " << cudasimLastErrorDetail();
  EXPECT_EQ(out.read()[5], 3);
  EXPECT_EQ(launch(small_with_a_device_function, 1, 32, 16 * kKiB, out.ptr), cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("40960 of static"), std::string::npos)
      << cudasimLastErrorDetail();
}

TEST(SharedMemory, StaticAndDynamicTogetherWithin48KiB) {
  DeviceBuffer<int> out(32);
  EXPECT_EQ(launch(static_40k, 1, 32, 8 * kKiB, out.ptr, 2048), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out.read()[static_cast<size_t>(i)], 31 - i + 1);
  EXPECT_EQ(launch(static_40k, 1, 32, 16 * kKiB, out.ptr, 4096), cudaErrorInvalidValue)
      << "40 KiB static and 16 KiB dynamic exceed 48 KiB";
  const std::string d = cudasimLastErrorDetail();
  EXPECT_NE(d.find("40960 of static"), std::string::npos) << d;
  EXPECT_NE(d.find("cudaFuncAttributeMaxDynamicSharedMemorySize"), std::string::npos) << d;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not sticky";
}

TEST(SharedMemory, KernelAttributesReportTheStaticPartAndTheDynamicLimit) {
  cudaFuncAttributes a{};
  ASSERT_EQ(cudaFuncGetAttributes(&a, static_40k), cudaSuccess);
  EXPECT_EQ(a.sharedSizeBytes, 40 * kKiB);
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, static_cast<int>(8 * kKiB));
  ASSERT_EQ(cudaFuncGetAttributes(&a, dynamic_only), cudaSuccess);
  EXPECT_EQ(a.sharedSizeBytes, 0u);
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, static_cast<int>(48 * kKiB));
}

TEST(SharedMemory, MoreThan48KiBOfStaticSharedMemoryIsRefused) {
  DeviceBuffer<int> out(32);
  EXPECT_EQ(launch(static_64k, 1, 32, 0, out.ptr), cudaErrorInvalidKernelImage);
  const std::string d = cudasimLastErrorDetail();
  EXPECT_NE(d.find("65536 bytes of static __shared__"), std::string::npos) << d;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(SharedMemory, OptingInAllowsUpTo227KiBPerBlock) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);  // the attribute belongs to the kernel on one device
  DeviceBuffer<unsigned char> out(32);
  const int most = static_cast<int>(227 * kKiB);
  EXPECT_EQ(launch(dynamic_only, 1, 32, 100 * kKiB, out.ptr, static_cast<int>(100 * kKiB)), cudaErrorInvalidValue)
      << "above 48 KiB without opting in";
  EXPECT_EQ(cudaFuncSetAttribute(dynamic_only, cudaFuncAttributeMaxDynamicSharedMemorySize, most + 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFuncSetAttribute(dynamic_only, cudaFuncAttributeMaxDynamicSharedMemorySize, most), cudaSuccess);
  ASSERT_EQ(launch(dynamic_only, 1, 32, static_cast<size_t>(most), out.ptr, most), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(h[static_cast<size_t>(i)], i + 1);
  cudaFuncAttributes a{};
  ASSERT_EQ(cudaFuncGetAttributes(&a, dynamic_only), cudaSuccess);
  EXPECT_EQ(a.maxDynamicSharedSizeBytes, most);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(launch(dynamic_only, 1, 32, 100 * kKiB, out.ptr, static_cast<int>(100 * kKiB)), cudaErrorInvalidValue)
      << "set on cuda:1 only";
  // The static part counts against the opt-in limit too.
  EXPECT_EQ(cudaFuncSetAttribute(static_40k, cudaFuncAttributeMaxDynamicSharedMemorySize, most - 40 * 1024 + 1),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  ASSERT_EQ(cudaFuncSetAttribute(static_40k, cudaFuncAttributeMaxDynamicSharedMemorySize, 16 * 1024), cudaSuccess);
  DeviceBuffer<int> ints(32);
  EXPECT_EQ(launch(static_40k, 1, 32, 16 * kKiB, ints.ptr, 4096), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Back to the defaults, for the other tests (and repeated runs).
  EXPECT_EQ(cudaFuncSetAttribute(static_40k, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 1024), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(cudaFuncSetAttribute(dynamic_only, cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
