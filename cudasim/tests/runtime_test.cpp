// The runtime API: memory and its capacity, copies with each kind's host synchronisation,
// streams that really run asynchronously, the legacy default stream's ordering, events,
// handle reuse, and the error model.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <cudasim/cudasim.h>

#include "stream_gate.h"

namespace {

using cudasim_tests::Gate;
using cudasim_tests::wait_for_flag;

__global__ void fill_value(int* out, int n, int value) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = value;
}

TEST(Runtime, DevicesAndTheirAttributes) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 2) << "CUDASIM_DEVICE_COUNT defaults to 2";
  EXPECT_EQ(cudaSetDevice(n), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "a non-sticky error is cleared by reading it";
  int major = 0, sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 1), cudaSuccess);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(sms, 132);
}

TEST(Runtime, MemoryCapacityAndOutOfMemory) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudasimSetDeviceMemoryLimit(1, 1 << 20), cudaSuccess);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 768 << 10), cudaSuccess);
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(total, size_t{1} << 20);
  EXPECT_EQ(free, size_t{256} << 10);
  EXPECT_EQ(cudaMalloc(&b, 512 << 10), cudaErrorMemoryAllocation);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  ASSERT_EQ(cudaFree(a), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&b, 512 << 10), cudaSuccess) << "freed memory is available again";
  ASSERT_EQ(cudaFree(b), cudaSuccess);
  EXPECT_EQ(cudaFree(b), cudaErrorInvalidValue) << "a double free";
  (void)cudaGetLastError();
  ASSERT_EQ(cudasimSetDeviceMemoryLimit(1, size_t{16} << 30), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(Runtime, NewDeviceMemoryIsGarbageNotZero) {
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 16), cudaSuccess);
  float h[4];
  ASSERT_EQ(cudaMemcpy(h, p, sizeof(h), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(h[0]));
  cudaFree(p);
}

TEST(Runtime, CopiesCheckDirectionBoundsAndFreedMemory) {
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  std::vector<int> h(32);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue) << "wrong direction";
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("expects device -> host"), std::string::npos);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 65, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "past the end";
  EXPECT_EQ(cudaMemcpy(h.data(), h.data() + 16, 64, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue)
      << "host pointers in a device copy";
  EXPECT_EQ(cudaMemcpy(d, h.data(), 64, cudaMemcpyDefault), cudaSuccess) << "cudaMemcpyDefault infers";
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h.data(), d, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("freed device memory"), std::string::npos);
  (void)cudaGetLastError();
}

TEST(Runtime, StreamsRunAsynchronouslyAndInOrder) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Gate gate;
  int* d = nullptr;
  int* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4 * 1024), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&pinned, 4 * 1024, 0), cudaSuccess);
  std::memset(pinned, 0, 4 * 1024);
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, s, gate.flag);
  cudasim::launch("fill_value", fill_value, 4, 256, 0, s, d, 1024, 7);
  ASSERT_EQ(cudaMemcpyAsync(pinned, d, 4 * 1024, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(pinned[0], 0) << "an asynchronous copy into pinned memory is not done before synchronising";
  gate.open();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(pinned[0], 7);
  EXPECT_EQ(pinned[1023], 7);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  cudaFree(d);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
}

TEST(Runtime, PageableCopiesSynchroniseAsDocumented) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4 * 256), cudaSuccess);
  Gate gate;
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, s, gate.flag);
  std::vector<int> src(256, 5);
  ASSERT_EQ(cudaMemcpyAsync(d, src.data(), 4 * 256, cudaMemcpyHostToDevice, s), cudaSuccess)
      << "returns once the pageable source is staged";
  std::fill(src.begin(), src.end(), -1);  // the staged copy must not see this
  std::vector<int> dst(256, 0);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.open();
  });
  ASSERT_EQ(cudaMemcpyAsync(dst.data(), d, 4 * 256, cudaMemcpyDeviceToHost, s), cudaSuccess)
      << "returns once the copy into pageable memory is done";
  opener.join();
  EXPECT_EQ(dst[0], 5);
  EXPECT_EQ(dst[255], 5);
  cudaFree(d);
  cudaStreamDestroy(s);
}

TEST(Runtime, TheLegacyStreamOrdersWithBlockingStreamsOnly) {
  cudaStream_t blocking = nullptr, non_blocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking), cudaSuccess);
  Gate gate;
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, nullptr, gate.flag);  // legacy stream held
  EXPECT_EQ(cudaStreamQuery(non_blocking), cudaSuccess);
  cudasim::launch("fill_value", fill_value, 1, 1, 0, non_blocking, static_cast<int*>(nullptr), 0, 0);
  ASSERT_EQ(cudaStreamSynchronize(non_blocking), cudaSuccess) << "a non-blocking stream does not wait for legacy work";
  cudasim::launch("fill_value", fill_value, 1, 1, 0, blocking, static_cast<int*>(nullptr), 0, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaStreamQuery(blocking), cudaErrorNotReady) << "a blocking stream waits for the legacy stream";
  gate.open();
  ASSERT_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  // And legacy work waits for earlier work on blocking streams.
  Gate second;
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, blocking, second.flag);
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4), cudaSuccess);
  cudasim::launch("fill_value", fill_value, 1, 1, 0, nullptr, d, 1, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady);
  second.open();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(d);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(non_blocking);
}

TEST(Runtime, EventsOrderStreamsAndMeasureTime) {
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t start = nullptr, done = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&done), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(done), cudaSuccess) << "an event never recorded is complete";
  Gate gate;
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start, a), cudaSuccess);
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, a, gate.flag);
  cudasim::launch("fill_value", fill_value, 1, 1, 0, a, d, 1, 11);
  ASSERT_EQ(cudaEventRecord(done, a), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(b, done, 0), cudaSuccess);
  int* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 4, 0), cudaSuccess);
  *pinned = 0;
  ASSERT_EQ(cudaMemcpyAsync(pinned, d, 4, cudaMemcpyDeviceToHost, b), cudaSuccess);
  float ms = 0;
  EXPECT_EQ(cudaEventQuery(done), cudaErrorNotReady);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, done), cudaErrorNotReady);
  (void)cudaGetLastError();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  gate.open();
  ASSERT_EQ(cudaStreamSynchronize(b), cudaSuccess);
  EXPECT_EQ(*pinned, 11) << "b waited for a's event before copying";
  ASSERT_EQ(cudaEventSynchronize(done), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, done), cudaSuccess);
  EXPECT_GE(ms, 25.0f);
  cudaEvent_t untimed = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(untimed, a), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(untimed), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  for (cudaEvent_t e : {start, done, untimed}) cudaEventDestroy(e);
  cudaFreeHost(pinned);
  cudaFree(d);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

TEST(Runtime, DestroyedStreamHandlesAreReusedAndWorkStillRuns) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Gate gate;
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4), cudaSuccess);
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, s, gate.flag);
  cudasim::launch("fill_value", fill_value, 1, 1, 0, s, d, 1, 9);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess) << "returns at once; the work still runs";
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  cudaStream_t again = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&again, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(again, s) << "the driver reuses a destroyed stream's handle";
  EXPECT_EQ(cudaStreamQuery(again), cudaSuccess) << "a new stream does not inherit the old one's work";
  gate.open();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int h = 0;
  ASSERT_EQ(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h, 9);
  cudaFree(d);
  cudaStreamDestroy(again);
}

TEST(Runtime, PeerCopiesAndPeerAccessFlags) {
  int can = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
  EXPECT_EQ(can, 1);
  int* a = nullptr;
  int* b = nullptr;
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 4), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&a, 4), cudaSuccess);
  const int v = 42;
  ASSERT_EQ(cudaMemcpy(a, &v, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpyPeerAsync(b, 1, a, 0, 4, nullptr), cudaSuccess) << "no peer access needed for copies";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int h = 0;
  ASSERT_EQ(cudaMemcpy(&h, b, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h, 42);
  EXPECT_EQ(cudaMemcpyPeerAsync(b, 0, a, 0, 4, nullptr), cudaErrorInvalidValue) << "b is not on device 0";
  (void)cudaGetLastError();
  ASSERT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaDeviceDisablePeerAccess(1), cudaSuccess);
  cudaFree(a);
  cudaFree(b);
}

// cudaMemset and a device-to-device cudaMemcpy return without waiting for the device (the
// runtime API's "API synchronization behavior"); a memset of pinned host memory waits.
TEST(Runtime, MemsetAndDeviceToDeviceCopiesDoNotBlockTheHost) {
  Gate gate;
  int* a = nullptr;
  int* b = nullptr;
  int* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 1024), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 1024), cudaSuccess);
  ASSERT_EQ(cudaHostAlloc(&pinned, 1024, 0), cudaSuccess);
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, nullptr, gate.flag);  // holds the legacy stream
  std::atomic<bool> returned{false};
  std::thread caller([&] {
    EXPECT_EQ(cudaMemset(a, 0x01, 1024), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(b, a, 1024, cudaMemcpyDeviceToDevice), cudaSuccess);
    returned = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!returned && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(returned.load()) << "cudaMemset or the device-to-device cudaMemcpy waited for the device";
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady) << "the work is still queued behind the gate";
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.open();
  });
  caller.join();
  std::memset(pinned, 0, 1024);
  ASSERT_EQ(cudaMemset(pinned, 0x02, 1024), cudaSuccess);
  EXPECT_EQ(pinned[255], 0x02020202) << "a memset of pinned host memory is synchronous";
  opener.join();
  int h[256];
  ASSERT_EQ(cudaMemcpy(h, b, 1024, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h[0], 0x01010101);
  EXPECT_EQ(h[255], 0x01010101);
  cudaFree(a);
  cudaFree(b);
  cudaFreeHost(pinned);
}

// A host function runs in stream order: after the work before it, before the work after it.
__global__ void store_value(int* p, int v) { *p = v; }
__global__ void copy_value(const int* from, int* to) { *to = *from + 1; }

struct HostFnRecord {
  const int* watched = nullptr;
  int seen = -1;
  int* answer = nullptr;
  std::atomic<int> calls{0};
};

void on_host(void* data) {
  auto* r = static_cast<HostFnRecord*>(data);
  r->seen = *r->watched;  // pinned: the host may read what the kernel before wrote
  *r->answer = 41;        // and write what the kernel after reads
  ++r->calls;
}

TEST(Runtime, HostFunctionsRunInStreamOrder) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 3 * sizeof(int), 0), cudaSuccess);
  pinned[0] = pinned[1] = pinned[2] = 0;
  HostFnRecord r;
  r.watched = &pinned[0];
  r.answer = &pinned[1];
  Gate gate;
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, s, gate.flag);
  cudasim::launch("store_value", store_value, 1, 1, 0, s, &pinned[0], 7);
  ASSERT_EQ(cudaLaunchHostFunc(s, on_host, &r), cudaSuccess);
  cudasim::launch("copy_value", copy_value, 1, 1, 0, s, static_cast<const int*>(&pinned[1]), &pinned[2]);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(r.calls.load(), 0) << "not before the work ahead of it";
  gate.open();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(r.calls.load(), 1);
  EXPECT_EQ(r.seen, 7);
  EXPECT_EQ(pinned[2], 42);
  EXPECT_EQ(cudaLaunchHostFunc(s, nullptr, &r), cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
}

TEST(Runtime, HostFunctionsAreSkippedAfterADeviceError) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  struct Restore {  // even when an assertion ends the test early
    ~Restore() {
      cudaDeviceReset();
      cudaSetDevice(0);
    }
  } restore;
  std::vector<int> host(4);
  HostFnRecord r;
  int answer = 0;
  r.watched = &answer;
  r.answer = &answer;
  Gate gate;  // so that the fault cannot happen before the host function is enqueued
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, nullptr, gate.flag);
  cudasim::launch("bad_kernel", store_value, 1, 1, 0, nullptr, host.data(), 1);  // a host pointer dereferenced
  ASSERT_EQ(cudaLaunchHostFunc(nullptr, on_host, &r), cudaSuccess);
  gate.open();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_EQ(r.calls.load(), 0);
}

// One table behind both calls, with an H100's numbers.
TEST(Runtime, DevicePropertiesAgreeWithDeviceAttributes) {
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 1), cudaSuccess);
  EXPECT_EQ(p.major, 9);
  EXPECT_EQ(p.minor, 0);
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_EQ(p.sharedMemPerBlock, 48u * 1024);
  EXPECT_EQ(p.sharedMemPerBlockOptin, 227u * 1024);
  EXPECT_EQ(p.sharedMemPerMultiprocessor, 228u * 1024);
  EXPECT_EQ(p.regsPerMultiprocessor, 65536);
  EXPECT_EQ(p.maxThreadsPerMultiProcessor, 2048);
  EXPECT_EQ(p.maxBlocksPerMultiProcessor, 32);
  EXPECT_EQ(p.l2CacheSize, 50 * 1024 * 1024);
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
  EXPECT_EQ(p.maxThreadsDim[2], 64);
  EXPECT_EQ(p.maxGridSize[1], 65535);
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  EXPECT_EQ(p.totalGlobalMem, total);
  const std::pair<cudaDeviceAttr, long long> pairs[] = {
      {cudaDevAttrComputeCapabilityMajor, p.major},
      {cudaDevAttrComputeCapabilityMinor, p.minor},
      {cudaDevAttrMultiProcessorCount, p.multiProcessorCount},
      {cudaDevAttrWarpSize, p.warpSize},
      {cudaDevAttrMaxSharedMemoryPerBlock, static_cast<long long>(p.sharedMemPerBlock)},
      {cudaDevAttrMaxSharedMemoryPerBlockOptin, static_cast<long long>(p.sharedMemPerBlockOptin)},
      {cudaDevAttrMaxSharedMemoryPerMultiprocessor, static_cast<long long>(p.sharedMemPerMultiprocessor)},
      {cudaDevAttrMaxRegistersPerMultiprocessor, p.regsPerMultiprocessor},
      {cudaDevAttrMaxRegistersPerBlock, p.regsPerBlock},
      {cudaDevAttrMaxThreadsPerMultiProcessor, p.maxThreadsPerMultiProcessor},
      {cudaDevAttrMaxBlocksPerMultiprocessor, p.maxBlocksPerMultiProcessor},
      {cudaDevAttrL2CacheSize, p.l2CacheSize},
      {cudaDevAttrMaxThreadsPerBlock, p.maxThreadsPerBlock},
      {cudaDevAttrMaxBlockDimZ, p.maxThreadsDim[2]},
      {cudaDevAttrMaxGridDimX, p.maxGridSize[0]},
      {cudaDevAttrReservedSharedMemoryPerBlock, static_cast<long long>(p.reservedSharedMemPerBlock)},
      {cudaDevAttrAsyncEngineCount, p.asyncEngineCount},
      {cudaDevAttrUnifiedAddressing, p.unifiedAddressing},
  };
  for (const auto& [attr, expected] : pairs) {
    int v = -1;
    ASSERT_EQ(cudaDeviceGetAttribute(&v, attr, 1), cudaSuccess);
    EXPECT_EQ(v, expected) << "attribute " << static_cast<int>(attr);
  }
  EXPECT_EQ(cudaGetDeviceProperties(&p, 2), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
}

}  // namespace
