#pragma once
// What the kernel conformance tests share: a device buffer, a launch that returns the launch
// error, and a runner for deliberately wrong kernels that returns the error they leave.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <cudasim/cudasim.h>

namespace cudasim_tests {

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) { EXPECT_EQ(cudaMalloc(&ptr, count * sizeof(T)), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<T> read() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess) << cudasimLastErrorDetail();
    return h;
  }
  void write(const std::vector<T>& h) { ASSERT_EQ(cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess); }
};

// Launches on the legacy stream and returns the launch's own error (what <<<>>> leaves for
// cudaGetLastError).
template <class... P, class... A>
cudaError_t launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, A... args) {
  (void)cudaGetLastError();  // an error left by an earlier call (a buffer freed by a reset)
  cudasim::launch("test_kernel", kernel, grid, block, shared, nullptr, args...);
  return cudaGetLastError();
}

// Runs a kernel that must fail on the current device (1 in the misuse tests, which reset it
// afterwards so that device 0 stays healthy) and returns the detail of the error it left;
// `expected` is the sticky error it must leave.
template <class... P, class... A>
std::string misuse(cudaError_t expected, void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
  // The launch itself is fine; the fault is asynchronous (and may be seen by any later call).
  EXPECT_EQ(cudasim::launch("bad_kernel", kernel, grid, block, 0, nullptr, args...), cudaSuccess);
  const cudaError_t e = cudaDeviceSynchronize();
  EXPECT_EQ(e, expected) << cudaGetErrorName(e);
  std::string detail = cudasimLastErrorDetail();
  EXPECT_NE(std::string(cudaGetErrorString(e)).find("bad_kernel"), std::string::npos) << cudaGetErrorString(e);
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return detail;
}

template <class... P, class... A>
std::string misuse(void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
  return misuse(cudaErrorLaunchFailure, kernel, grid, block, args...);
}

// Misuse tests run on device 1.
class OnDeviceOne : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudaSetDevice(1), cudaSuccess); }
  void TearDown() override { ASSERT_EQ(cudaSetDevice(0), cudaSuccess); }
};

}  // namespace cudasim_tests
