// Memory faults in kernel code end as CUDA does, with a sticky cudaErrorIllegalAddress that
// names the kernel and the thread, not with the death of the process; and what CUDA allows
// does not fault: passing a pointer the device cannot reach without dereferencing it, an
// allocation's end pointer, and up to 512 KiB of local memory per thread. A write just
// outside a device allocation, which lands in host memory without a fault, changes the
// allocation's guard bytes, and is reported the same way (compute-sanitizer's memcheck in
// spirit).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;

#define SKIP_UNDER_ASAN() \
  if (!cudasimCatchesKernelFaults()) GTEST_SKIP() << "AddressSanitizer reports memory faults itself"

using Faults = OnDeviceOne;

__global__ void wild_write(float* out, uint64_t offset) {
  if (threadIdx.x == 5) out[offset] = 1.0f;
}

TEST_F(Faults, AWildWriteIsAnIllegalAddressNotACrash) {
  SKIP_UNDER_ASAN();
  DeviceBuffer<float> out(64);
  const std::string d = misuse(cudaErrorIllegalAddress, wild_write, 1, 32, out.ptr, uint64_t{1} << 42);
  EXPECT_NE(d.find("thread (5,0,0)"), std::string::npos) << d;
  EXPECT_NE(d.find("not memory the device can reach"), std::string::npos) << d;
  // The device works again after the reset (which freed `out`).
  DeviceBuffer<float> again(64);
  ASSERT_EQ(launch(wild_write, 4, 32, 0, again.ptr, uint64_t{3}), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  out.ptr = nullptr;
}

__global__ void dereference_at(const int* p, int* out, int index) { out[threadIdx.x] = p[index]; }

TEST_F(Faults, ADereferencedHostPointerIsNamedWithItsOffset) {
  SKIP_UNDER_ASAN();
  std::vector<int> host(64, 3);
  DeviceBuffer<int> out(32);
  const std::string d = misuse(cudaErrorIllegalAddress, dereference_at, 1, 32, host.data(), out.ptr, 2);
  EXPECT_NE(d.find("dereferenced argument 0"), std::string::npos) << d;
  EXPECT_NE(d.find("at byte offset 8"), std::string::npos) << d;
  EXPECT_NE(d.find("host memory"), std::string::npos) << d;
}

// Legal in CUDA: the pointers are passed, not used.
__global__ void unused_pointer(const int* maybe, int use, int* out) { out[threadIdx.x] = use ? maybe[0] : 7; }

TEST(FaultsNot, APointerThatIsPassedButNeverDereferenced) {
  SKIP_UNDER_ASAN();
  std::vector<int> host(4, 1);
  int* freed = nullptr;
  ASSERT_EQ(cudaMalloc(&freed, 16), cudaSuccess);
  ASSERT_EQ(cudaFree(freed), cudaSuccess);
  DeviceBuffer<int> out(32);
  ASSERT_EQ(launch(unused_pointer, 1, 32, 0, static_cast<const int*>(host.data()), 0, out.ptr), cudaSuccess);
  ASSERT_EQ(launch(unused_pointer, 1, 32, 0, static_cast<const int*>(freed), 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  for (int v : out.read()) EXPECT_EQ(v, 7);
}

__global__ void fill_range(int* begin, int* end) {
  for (int* p = begin + threadIdx.x; p < end; p += blockDim.x) *p = 1;
  __syncthreads();
  if (threadIdx.x == 0) end[-1] = 2;
}

TEST(FaultsNot, AnAllocationsEndPointer) {
  DeviceBuffer<int> buf(100);
  ASSERT_EQ(launch(fill_range, 1, 32, 0, buf.ptr, buf.ptr + 100), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = buf.read();
  EXPECT_EQ(h[0], 1);
  EXPECT_EQ(h[98], 1);
  EXPECT_EQ(h[99], 2);
}

// Every thread keeps a local array; the barrier gives each its own stack.
template <int kBytes>
__global__ void local_array(int* out) {
  volatile unsigned char local[kBytes];
  for (int i = 0; i < kBytes; i += 4096) local[i] = static_cast<unsigned char>(i / 4096 + threadIdx.x);
  local[kBytes - 1] = 9;
  __syncthreads();
  int sum = local[kBytes - 1];
  for (int i = 0; i < kBytes; i += 4096) sum += local[i];
  out[threadIdx.x] = sum;
}

TEST(FaultsNot, HalfAMegabyteOfLocalMemoryPerThread) {
  constexpr int kBytes = 500 * 1024;
  DeviceBuffer<int> out(4);
  ASSERT_EQ(launch(local_array<kBytes>, 1, 4, 0, out.ptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
  const auto h = out.read();
  for (int t = 0; t < 4; ++t) {
    int expected = 9;
    for (int i = 0; i < kBytes; i += 4096) expected += (i / 4096 + t) & 0xff;
    EXPECT_EQ(h[static_cast<size_t>(t)], expected) << "thread " << t;
  }
}

TEST_F(Faults, MoreLocalMemoryThanAThreadMayHave) {
  SKIP_UNDER_ASAN();
  DeviceBuffer<int> out(4);
  const std::string d = misuse(cudaErrorIllegalAddress, local_array<900 * 1024>, 1, 4, out.ptr);
  EXPECT_NE(d.find("overflowed its stack"), std::string::npos) << d;
}

// Past the guarded stacks the process may map, fibers run on unguarded stacks whose canary,
// below the depth every stack gives, is checked when the fiber gives its stack back.
TEST_F(Faults, AnUnguardedStackOverflowIsFoundByItsCanary) {
  SKIP_UNDER_ASAN();
  cudasimSetGuardedStackLimit(0);
  DeviceBuffer<int> out(4);
  ASSERT_EQ(launch(local_array<500 * 1024>, 1, 4, 0, out.ptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess)
      << "what a thread may use leaves the canary alone: " << cudasimLastErrorDetail();
  // Deeper than the canary's top, not past the stack's bottom (which would write a neighbour).
  const std::string d = misuse(cudaErrorIllegalAddress, local_array<552 * 1024>, 1, 4, out.ptr);
  cudasimSetGuardedStackLimit(SIZE_MAX);
  EXPECT_NE(d.find("overflowed its stack"), std::string::npos) << d;
  EXPECT_NE(d.find("canary of an unguarded stack"), std::string::npos) << d;
}

// --- guard bytes ----------------------------------------------------------------------------

__global__ void write_at_offset(float* out, int offset) {
  if (threadIdx.x == 3) out[offset] = 0.0f;
}

TEST_F(Faults, AWriteOnePastTheEndIsCaughtAfterTheKernelAndNamesIt) {
  SKIP_UNDER_ASAN();
  DeviceBuffer<float> out(100);
  const std::string d = misuse(cudaErrorIllegalAddress, write_at_offset, 1, 32, out.ptr, 100);
  EXPECT_NE(d.find("kernel 'bad_kernel' wrote outside the 400-byte allocation"), std::string::npos) << d;
  EXPECT_NE(d.find("its argument 0"), std::string::npos) << d;
  EXPECT_NE(d.find("bytes 400 to 403, past its end"), std::string::npos) << d;
  out.ptr = nullptr;  // freed by the reset
}

TEST_F(Faults, AWriteJustBeforeTheStartIsCaughtToo) {
  SKIP_UNDER_ASAN();
  DeviceBuffer<float> out(100);
  const std::string d = misuse(cudaErrorIllegalAddress, write_at_offset, 1, 32, out.ptr, -1);
  EXPECT_NE(d.find("bytes -4 to -1, before its start"), std::string::npos) << d;
  out.ptr = nullptr;
}

// The overrun is through a pointer the kernel reads from device memory, so the check after
// the kernel (of its pointer arguments' allocations) cannot see it; synchronisation does.
__global__ void write_through_table(float* const* table, int offset) {
  if (threadIdx.x == 0) table[0][offset] = 0.0f;
}

TEST_F(Faults, AnOverrunThroughAPointerInMemoryIsFoundAtSynchronisation) {
  SKIP_UNDER_ASAN();
  DeviceBuffer<float> target(10);
  DeviceBuffer<float*> table(1);
  table.write({target.ptr});
  const std::string d =
      misuse(cudaErrorIllegalAddress, write_through_table, 1, 32, static_cast<float* const*>(table.ptr), 10);
  EXPECT_NE(d.find("the 40-byte allocation"), std::string::npos) << d;
  EXPECT_NE(d.find("bytes 40 to 43, past its end"), std::string::npos) << d;
  EXPECT_NE(d.find("found at cudaDeviceSynchronize"), std::string::npos) << d;
  EXPECT_NE(d.find("the last kernel to run on cuda:1 was 'bad_kernel'"), std::string::npos) << d;
  target.ptr = nullptr;
  table.ptr = nullptr;
}

TEST_F(Faults, AnOverrunIsFoundAtCudaFree) {
  SKIP_UNDER_ASAN();
  float* target = nullptr;
  ASSERT_EQ(cudaMalloc(&target, 10 * sizeof(float)), cudaSuccess);
  DeviceBuffer<float*> table(1);
  table.write({target});
  ASSERT_EQ(launch(write_through_table, 1, 32, 0, static_cast<float* const*>(table.ptr), 12), cudaSuccess);
  EXPECT_EQ(cudaFree(target), cudaErrorIllegalAddress);  // waits for the kernel, then checks
  const std::string d = cudasimLastErrorDetail();
  EXPECT_NE(d.find("bytes 48 to 51, past its end"), std::string::npos) << d;
  EXPECT_NE(d.find("found at cudaFree"), std::string::npos) << d;
  EXPECT_NE(d.find("'test_kernel'"), std::string::npos) << d;
  EXPECT_EQ(cudaDeviceReset(), cudaSuccess);
  table.ptr = nullptr;
}

// Writes that stay inside the allocation, up to its last byte, report nothing, however many
// kernels and synchronisations there are.
__global__ void fill_to_the_last_byte(unsigned char* p, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x))
    p[i] = static_cast<unsigned char>(i);
}

TEST(FaultsNot, WritesUpToTheLastByteOfAnAllocation) {
  for (int n : {1, 7, 256, 1000}) {
    DeviceBuffer<unsigned char> buf(static_cast<size_t>(n));
    ASSERT_EQ(launch(fill_to_the_last_byte, 1, 64, 0, buf.ptr, n), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudasimLastErrorDetail();
    const auto h = buf.read();
    EXPECT_EQ(h.back(), static_cast<unsigned char>(n - 1));
  }
}

}  // namespace
