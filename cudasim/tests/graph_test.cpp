// Stream capture and CUDA graphs against the runtime API's documented behaviour: a
// capturing stream records instead of running, a graph launch replays the recorded work in
// order with the memory's contents at launch time, what capture refuses (waits for the
// device, pageable copies, events crossing the capture's boundary) returns the documented
// error and invalidates the capture, forks must join, and an executable graph takes a new
// graph's parameters only when the topology is unchanged.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <thread>

#include <cudasim/cudasim.h>

namespace {

__global__ void add_to(int* p, int value) { *p += value; }
__global__ void copy_one(int* dst, const int* src) { *dst = *src; }
__global__ void set_to(int* p, int value) { *p = value; }

struct Device {
  cudaStream_t s = nullptr;
  int* d = nullptr;  // two device ints, zeroed
  Device() {
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&d, 2 * sizeof(int)), cudaSuccess);
    EXPECT_EQ(cudaMemset(d, 0, 2 * sizeof(int)), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~Device() {
    cudaDeviceSynchronize();
    cudaFree(d);
    cudaStreamDestroy(s);
    cudaGetLastError();
  }
  int read(int i) {
    int v = -1;
    EXPECT_EQ(cudaMemcpy(&v, d + i, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

cudaStreamCaptureStatus status_of(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  EXPECT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  return st;
}

TEST(Graphs, ACapturingStreamRecordsAndALaunchReplaysInOrder) {
  Device t;
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(status_of(t.s), cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudasim::launch("add_to", add_to, 1, 1, 0, t.s, t.d, 5), cudaSuccess);
  ASSERT_EQ(cudasim::launch("copy_one", copy_one, 1, 1, 0, t.s, t.d + 1, t.d),
            cudaSuccess);  // reads what the first node wrote
  ASSERT_EQ(cudaMemsetAsync(t.d, 0, sizeof(int), t.s), cudaSuccess);
  ASSERT_EQ(cudasim::launch("add_to", add_to, 1, 1, 0, t.s, t.d, 2), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(t.s, &graph), cudaSuccess);
  EXPECT_EQ(status_of(t.s), cudaStreamCaptureStatusNone);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 4u);
  EXPECT_EQ(t.read(0), 0) << "captured work must not run";
  EXPECT_EQ(t.read(1), 0);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int launch = 0; launch < 3; ++launch) ASSERT_EQ(cudaGraphLaunch(exec, t.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(t.s), cudaSuccess);
  EXPECT_EQ(t.read(1), 7) << "each replay: 2 + 5, copied, reset, + 2";
  EXPECT_EQ(t.read(0), 2);
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

TEST(Graphs, AReplayedPinnedCopyReadsTheHostBufferAtLaunchTime) {
  Device t;
  int* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, sizeof(int), cudaHostAllocDefault), cudaSuccess);
  *pinned = 1;
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(t.d, pinned, sizeof(int), cudaMemcpyHostToDevice, t.s), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(t.s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int v : {3, 11}) {
    *pinned = v;
    ASSERT_EQ(cudaGraphLaunch(exec, t.s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(t.s), cudaSuccess);
    EXPECT_EQ(t.read(0), v);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFreeHost(pinned);
}

TEST(Graphs, WaitingForTheDeviceDuringCaptureIsRefusedAndInvalidatesTheCapture) {
  Device t;
  using Wait = cudaError_t (*)(cudaStream_t);
  const Wait waits[] = {
      [](cudaStream_t s) { return cudaStreamSynchronize(s); },
      [](cudaStream_t) { return cudaDeviceSynchronize(); },
      [](cudaStream_t) {  // another stream: still a wait while a global capture runs
        return cudaStreamSynchronize(nullptr);
      },
  };
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
    ASSERT_EQ(cudasim::launch("add_to", add_to, 1, 1, 0, t.s, t.d, 1), cudaSuccess);
    EXPECT_EQ(waits[i](t.s), cudaErrorStreamCaptureUnsupported);
    EXPECT_NE(std::string(cudasimLastErrorDetail()).find("not permitted while a stream captures"), std::string::npos)
        << cudasimLastErrorDetail();
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    EXPECT_STREQ(cudaGetErrorName(cudaErrorStreamCaptureUnsupported), "cudaErrorStreamCaptureUnsupported");
    EXPECT_EQ(status_of(t.s), cudaStreamCaptureStatusInvalidated);
    EXPECT_EQ(cudasim::launch("add_to", add_to, 1, 1, 0, t.s, t.d, 1), cudaErrorStreamCaptureInvalidated)
        << "work on an invalidated capture is refused";
    EXPECT_EQ(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);
    cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(1);
    EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(graph, nullptr);
    EXPECT_EQ(status_of(t.s), cudaStreamCaptureStatusNone);
    cudaGetLastError();
  }
  EXPECT_EQ(t.read(0), 0) << "nothing captured ran";
  // A synchronous copy waits too, and cudaFree waits for the device.
  int host = 0;
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&host, t.d, sizeof host, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorStreamCaptureInvalidated);
  int* spare = nullptr;
  ASSERT_EQ(cudaMalloc(&spare, 4), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaFree(spare), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(cudaFree(spare), cudaSuccess);
  cudaGetLastError();
}

TEST(Graphs, CaptureModesDecideWhichThreadsMayWait) {
  Device t;
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  const auto other_thread_syncs = [&] {
    cudaError_t e = cudaSuccess;
    std::thread([&] {
      cudaSetDevice(0);
      e = cudaStreamSynchronize(other);
      cudaGetLastError();
    }).join();
    return e;
  };
  cudaGraph_t graph = nullptr;
  // Thread-local: other threads may wait; this thread may not.
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(other_thread_syncs(), cudaSuccess);
  EXPECT_EQ(status_of(t.s), cudaStreamCaptureStatusActive);
  EXPECT_EQ(cudaStreamSynchronize(other), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorStreamCaptureInvalidated);
  // Global: another thread's wait invalidates it.
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(other_thread_syncs(), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorStreamCaptureInvalidated);
  // Relaxed: waiting for another stream is allowed; the capturing stream itself still is not.
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(status_of(t.s), cudaStreamCaptureStatusActive);
  EXPECT_EQ(cudaStreamSynchronize(t.s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorStreamCaptureInvalidated);
  // A thread that exchanged its mode for relaxed may wait during its own global capture.
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  EXPECT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(other);
  cudaGetLastError();
}

TEST(Graphs, PageableCopiesAreCountedAndRefusedOnACapturingStream) {
  Device t;
  int host = 4;
  int* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, sizeof(int), cudaHostAllocDefault), cudaSuccess);
  const unsigned long long before = cudasimPageableCopies();
  ASSERT_EQ(cudaMemcpyAsync(t.d, &host, sizeof host, cudaMemcpyHostToDevice, t.s), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&host, t.d, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudasimPageableCopies() - before, 2u);
  ASSERT_EQ(cudaMemcpyAsync(pinned, t.d, sizeof host, cudaMemcpyDeviceToHost, t.s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(t.d + 1, t.d, sizeof host, cudaMemcpyDeviceToDevice, t.s), cudaSuccess);
  EXPECT_EQ(cudasimPageableCopies() - before, 2u) << "pinned and device copies are not pageable";
  ASSERT_EQ(cudaStreamSynchronize(t.s), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(t.d, &host, sizeof host, cudaMemcpyHostToDevice, t.s), cudaErrorStreamCaptureUnsupported);
  EXPECT_NE(std::string(cudasimLastErrorDetail()).find("pageable host memory"), std::string::npos)
      << cudasimLastErrorDetail();
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorStreamCaptureInvalidated);
  cudaFreeHost(pinned);
  cudaGetLastError();
}

TEST(Graphs, CaptureBeginsAndEndsWhereCudaAllows) {
  Device t;
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported)
      << "the legacy default stream cannot capture";
  EXPECT_EQ(cudaStreamEndCapture(t.s, &graph), cudaErrorIllegalState);
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
  cudaError_t wrong_thread = cudaSuccess;
  std::thread([&] { wrong_thread = cudaStreamEndCapture(t.s, &graph); }).join();
  EXPECT_EQ(wrong_thread, cudaErrorStreamCaptureWrongThread);
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  unsigned long long id = 0, id2 = 0;
  ASSERT_EQ(cudaStreamGetCaptureInfo(t.s, &st, &id), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaStreamEndCapture(t.s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaStreamGetCaptureInfo(t.s, &st, &id2), cudaSuccess);
  EXPECT_NE(id, id2) << "capture ids are unique";
  ASSERT_EQ(cudaStreamEndCapture(t.s, &graph), cudaSuccess);
  cudaGraphDestroy(graph);
  cudaGetLastError();
}

TEST(Graphs, ForkedStreamsJoinTheCaptureAndMustRejoin) {
  Device t;
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t fork = nullptr, join = nullptr, outside = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&outside, cudaEventDisableTiming), cudaSuccess);
  cudaGraph_t graph = nullptr;
  for (bool rejoin : {true, false}) {
    SCOPED_TRACE(rejoin);
    ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
    ASSERT_EQ(cudasim::launch("set_to", set_to, 1, 1, 0, t.s, t.d, 3), cudaSuccess);
    ASSERT_EQ(cudaEventRecord(fork, t.s), cudaSuccess);
    EXPECT_EQ(cudaEventQuery(fork), cudaErrorCapturedEvent);
    ASSERT_EQ(cudaStreamWaitEvent(side, fork, 0), cudaSuccess);
    EXPECT_EQ(status_of(side), cudaStreamCaptureStatusActive);
    ASSERT_EQ(cudasim::launch("copy_one", copy_one, 1, 1, 0, side, t.d + 1, t.d), cudaSuccess);
    if (rejoin) {
      ASSERT_EQ(cudaEventRecord(join, side), cudaSuccess);
      ASSERT_EQ(cudaStreamWaitEvent(t.s, join, 0), cudaSuccess);
    }
    EXPECT_EQ(cudaStreamEndCapture(side, &graph), cudaErrorStreamCaptureUnmatched);
    cudaGraph_t ended = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(t.s, &ended), rejoin ? cudaSuccess : cudaErrorStreamCaptureUnjoined);
    EXPECT_EQ(status_of(side), cudaStreamCaptureStatusNone);
    if (rejoin) graph = ended;
    else EXPECT_EQ(ended, nullptr);
  }
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, t.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(t.s), cudaSuccess);
  EXPECT_EQ(t.read(1), 3);
  // An event recorded outside the capture cannot order captured work.
  ASSERT_EQ(cudaEventRecord(outside, side), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(t.s, outside, 0), cudaErrorStreamCaptureIsolation);
  cudaGraph_t bad = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(t.s, &bad), cudaErrorStreamCaptureInvalidated);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (cudaEvent_t e : {fork, join, outside}) cudaEventDestroy(e);
  cudaStreamDestroy(side);
  cudaGetLastError();
}

TEST(Graphs, AnExecutableGraphTakesNewParametersOnlyForTheSameTopology) {
  Device t;
  const auto capture = [&](auto&& record) {
    cudaGraph_t g = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(t.s, cudaStreamCaptureModeGlobal), cudaSuccess);
    record();
    EXPECT_EQ(cudaStreamEndCapture(t.s, &g), cudaSuccess);
    return g;
  };
  cudaGraph_t seven = capture([&] { ASSERT_EQ(cudasim::launch("set_to", set_to, 1, 1, 0, t.s, t.d, 7), cudaSuccess); });
  cudaGraph_t nine = capture([&] { ASSERT_EQ(cudasim::launch("set_to", set_to, 1, 1, 0, t.s, t.d, 9), cudaSuccess); });
  cudaGraph_t other_kernel =
      capture([&] { ASSERT_EQ(cudasim::launch("add_to", add_to, 1, 1, 0, t.s, t.d, 9), cudaSuccess); });
  cudaGraph_t two_nodes = capture([&] {
    ASSERT_EQ(cudasim::launch("set_to", set_to, 1, 1, 0, t.s, t.d, 1), cudaSuccess);
    ASSERT_EQ(cudasim::launch("set_to", set_to, 1, 1, 0, t.s, t.d, 2), cudaSuccess);
  });
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, seven, 0), cudaSuccess);
  cudaGraphExecUpdateResultInfo info{};
  EXPECT_EQ(cudaGraphExecUpdate(exec, other_kernel, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorFunctionChanged);
  EXPECT_EQ(cudaGraphExecUpdate(exec, two_nodes, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  ASSERT_EQ(cudaGraphLaunch(exec, t.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(t.s), cudaSuccess);
  EXPECT_EQ(t.read(0), 7) << "a failed update leaves the executable graph as it was";
  ASSERT_EQ(cudaGraphExecUpdate(exec, nine, &info), cudaSuccess);
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, t.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(t.s), cudaSuccess);
  EXPECT_EQ(t.read(0), 9);
  cudaGraphExecDestroy(exec);
  for (cudaGraph_t g : {seven, nine, other_kernel, two_nodes}) cudaGraphDestroy(g);
  cudaGetLastError();
}

}  // namespace
