// Copies that CUDA lets return before they are done ("API synchronization behavior" in the
// runtime API reference): each call must return while the work it is ordered after is still
// held, its source bytes captured at the call where the source is host memory, and its
// write ordered on the streams CUDA names.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <cudasim/cudasim.h>

#include "stream_gate.h"

namespace {

using cudasim_tests::Gate;
using cudasim_tests::TimedOpener;
using cudasim_tests::wait_for_flag;

__global__ void set_all(int* out, int n, int value) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = value;
}

__global__ void add_one(const int* from, int* to) { *to = *from + 1; }

std::vector<int> read_back(const int* d, size_t n) {
  std::vector<int> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess) << cudasimLastErrorDetail();
  return h;
}

// cudaMemcpy from pageable memory to the device synchronises the stream (the legacy one,
// whose own work is done here), stages the source and returns: the copy itself lands later,
// ordered after the blocking stream's kernel as legacy-stream work is. The host may
// overwrite its buffer at once.
TEST(Copies, ASynchronousCopyFromPageableMemoryReturnsOnceStaged) {
  cudaStream_t blocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 256 * sizeof(int)), cudaSuccess);
  Gate gate;
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, blocking, gate.flag);
  const unsigned long long syncs = cudasimHostSynchronizations();
  std::vector<int> src(256, 5);
  TimedOpener opener(gate);
  ASSERT_EQ(cudaMemcpy(d, src.data(), 256 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_FALSE(opener.opened) << "cudaMemcpy from pageable memory waited for the copy";
  std::fill(src.begin(), src.end(), -1);  // the staged copy must not see this
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady) << "the copy waits behind the blocking stream's kernel";
  EXPECT_EQ(cudasimHostSynchronizations(), syncs + 1) << "the stream sync before staging counts as one";
  opener.open();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto h = read_back(d, 256);
  EXPECT_EQ(h[0], 5);
  EXPECT_EQ(h[255], 5);
  cudaFree(d);
  cudaStreamDestroy(blocking);
}

// The stream sync before staging is a wait for the device: while a global capture runs, the
// call is refused and the capture invalidated, as before the copy returned early.
TEST(Copies, AStagedCopyStillSynchronisesSoAGlobalCaptureRefusesIt) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  int* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  const int v = 1;
  EXPECT_EQ(cudaMemcpy(d, &v, sizeof v, cudaMemcpyHostToDevice), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();
  cudaFree(d);
  cudaStreamDestroy(s);
}

// cudaMemcpyPeer is asynchronous with respect to the host and serialised with all pending
// and future work of the current device and both devices of the copy, on every stream (non-
// blocking ones included); cudaMemcpyPeerAsync is ordered on its stream only.
TEST(Copies, APeerCopyReturnsAtOnceAndIsSerialisedWithBothDevices) {
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  int* src = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 256 * sizeof(int)), cudaSuccess);
  cudaStream_t s1 = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  Gate gate;
  cudasim::launch("wait_for_flag", wait_for_flag, 1, 1, 0, s1, gate.flag);
  cudasim::launch("set_all", set_all, 1, 64, 0, s1, src, 256, 9);  // pending work on the source's device
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  int* dst = nullptr;
  int* out = nullptr;
  int* again = nullptr;
  ASSERT_EQ(cudaMalloc(&dst, 256 * sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&again, 256 * sizeof(int)), cudaSuccess);
  cudaStream_t s0 = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking), cudaSuccess);
  {
    TimedOpener opener(gate);
    ASSERT_EQ(cudaMemcpyPeer(dst, 0, src, 1, 256 * sizeof(int)), cudaSuccess) << cudasimLastErrorDetail();
    EXPECT_FALSE(opener.opened) << "cudaMemcpyPeer waited for the device";
    cudasim::launch("add_one", add_one, 1, 1, 0, s0, dst + 255, out);  // later work, on a non-blocking stream
    ASSERT_EQ(cudaMemcpyPeerAsync(again, 0, src, 1, 256 * sizeof(int), s0), cudaSuccess);
    EXPECT_FALSE(opener.opened) << "cudaMemcpyPeerAsync waited for its stream";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(cudaStreamQuery(s0), cudaErrorNotReady) << "later work on the destination's device waits for the copy";
    opener.open();
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto h = read_back(dst, 256);
  EXPECT_EQ(h[0], 9) << "the copy ran after the source device's pending work";
  EXPECT_EQ(h[255], 9);
  EXPECT_EQ(read_back(out, 1)[0], 10);
  EXPECT_EQ(read_back(again, 256)[128], 9);
  cudaFree(dst);
  cudaFree(out);
  cudaFree(again);
  cudaStreamDestroy(s0);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaFree(src);
  cudaStreamDestroy(s1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
