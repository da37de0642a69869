// cuda::Graph and cuda::is_capturing (wick/tensor/cuda.h): stream capture on a stream of the
// graph's own, with the caching allocator's private pool for what the capture allocates.
#include <wick/tensor/cuda.h>

#include <string>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"

namespace wick::cuda {

bool is_capturing(int device) {
  const int d = cuda_kernels::resolve_device("cuda::is_capturing", device);
  cuda_kernels::TensorDeviceGuard guard(d);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  WICK_CUDA_CHECK(cudaStreamIsCapturing(cuda_kernels::stream_for(d), &status));
  return status != cudaStreamCaptureStatusNone;
}

struct Graph::State {
  int device = 0;
  Stream stream;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  uint64_t pool = 0;  // 0: none
  size_t nodes = 0;
};

Graph::Graph(int device) : state_(std::make_unique<State>()) {
  state_->device = cuda_kernels::resolve_device("cuda::Graph", device);
  state_->stream = Stream::create(state_->device);
}

Graph::~Graph() {
  if (state_->exec) (void)cudaGraphExecDestroy(state_->exec);
  if (state_->graph) (void)cudaGraphDestroy(state_->graph);
  // Launches already queued keep their own copy of the work; the memory they use is handed
  // out again only after them on the streams they were queued on (the default stream, as a
  // rule), as any freed memory is.
  if (state_->pool) cuda_kernels::release_graph_pool(state_->pool);
}

bool Graph::captured() const { return state_->exec != nullptr; }
const Stream& Graph::stream() const { return state_->stream; }
size_t Graph::num_nodes() const { return state_->nodes; }

void Graph::capture(const std::function<void()>& work) {
  State& s = *state_;
  WICK_CHECK(!s.exec, "cuda::Graph::capture: the graph holds a capture already (make a new Graph)");
  cuda_kernels::TensorDeviceGuard device(s.device);
  const auto stream = static_cast<cudaStream_t>(s.stream.handle());
  s.pool = cuda_kernels::begin_graph_capture(s.device, s.stream.id());
  std::string failure;
  {
    StreamGuard current(s.stream);
    // Thread-local: this thread's waits are refused (they would be the step's), while other
    // threads (a DataLoader delivering the next batch to the GPU) may go on waiting for
    // their own streams, which global mode would refuse and so fail the capture.
    WICK_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      work();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (ended != cudaSuccess && failure.empty()) failure = cudaGetErrorString(ended);
    (void)cudaGetLastError();
    s.graph = graph;
  }
  cuda_kernels::end_graph_capture(s.pool);
  if (!failure.empty()) {
    if (s.graph) (void)cudaGraphDestroy(s.graph);
    s.graph = nullptr;
    // Nothing will launch: the eager memory freed meanwhile is free again, and the graph
    // may capture anew (into a new pool).
    cuda_kernels::release_graph_pool(s.pool);
    s.pool = 0;
    ::wick::detail::throw_error("cuda::Graph::capture on cuda:", s.device,
                                ": the captured work did what a CUDA graph cannot hold (a wait for the device, a copy "
                                "from pageable host memory) or failed: ",
                                failure);
  }
  WICK_CUDA_CHECK(cudaGraphGetNodes(s.graph, nullptr, &s.nodes));
  WICK_CUDA_CHECK(cudaGraphInstantiate(&s.exec, s.graph, 0));
}

void Graph::replay() {
  State& s = *state_;
  WICK_CHECK(s.exec, "cuda::Graph::replay: nothing captured");
  cuda_kernels::TensorDeviceGuard device(s.device);
  WICK_CUDA_CHECK(cudaGraphLaunch(s.exec, cuda_kernels::stream_for(s.device)));
}

}  // namespace wick::cuda
