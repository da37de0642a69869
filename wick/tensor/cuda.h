#pragma once
// The CUDA runtime as wick exposes it: devices, streams, events, memory statistics.
// Available in every build: without CUDA (or without a GPU or driver) device_count() is 0
// and everything else throws wick::Error saying so. No CUDA header is needed to use it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include <wick/tensor/device.h>

namespace wick {
class Tensor;
}  // namespace wick

namespace wick::cuda {

// Number of usable CUDA devices; 0 without a GPU, driver or CUDA build (never throws).
int device_count();
bool is_available();
// Whether this build of wick contains the CUDA backend.
bool is_built();

int current_device();
void set_device(int index);
// Waits for all work on a device (default: the current one).
void synchronize(int index = -1);

// Makes `index` the current device for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

// A CUDA stream. Default-constructed: the device's default (legacy) stream.
class Stream {
 public:
  Stream() = default;
  // A new non-blocking stream on `device`, owned by this object (and its copies).
  static Stream create(int device = -1, int priority = 0);
  // The default (legacy) stream of `device` (default: the current one).
  static Stream default_stream(int device = -1);
  void* handle() const { return handle_.get(); }  // the cudaStream_t
  int device() const { return device_; }
  // Unique among all streams this process ever creates (0: the default streams). The driver
  // reuses a destroyed stream's handle for the next stream created; the id is never reused,
  // so per-stream state (the caching allocator's free lists, cuBLAS workspaces) is keyed by it.
  uint64_t id() const { return id_; }
  void synchronize() const;
  bool query() const;  // true when all work on it has finished
  friend bool operator==(const Stream& a, const Stream& b) { return a.id_ == b.id_ && a.device_ == b.device_; }

 private:
  std::shared_ptr<void> handle_;  // null = default stream
  int device_ = 0;
  uint64_t id_ = 0;
};

// This thread's current stream for a device (kernels and copies run on it).
Stream current_stream(int device = -1);
void set_current_stream(const Stream& s);

// Sets the current stream for the guard's lifetime.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

class Event {
 public:
  explicit Event(bool enable_timing = false);
  void record(const Stream& s);
  void record();                     // on the current stream
  void wait(const Stream& s) const;  // s waits for this event (no host block)
  void synchronize() const;
  bool query() const;
  float elapsed_ms(const Event& end) const;  // both recorded with timing enabled
  void* handle() const { return handle_.get(); }

 private:
  std::shared_ptr<void> handle_;
  int device_ = 0;
};

// Whether this thread's current stream of a device (default: the current one) is capturing
// a CUDA graph: its work is recorded, not run, and waiting for the device is an error.
bool is_capturing(int device = -1);

// A CUDA graph (PyTorch's torch.cuda.CUDAGraph): the kernels, copies and fills that a
// callable enqueues, captured once and then replayed by one launch, with no host work per
// kernel. capture() runs `work` with the graph's own stream current, recording instead of
// running (so nothing it computes is ready when it returns); replay() launches the recorded
// work on the current stream, reading and writing the same memory every time. Hence:
// - inputs go into tensors made before the capture (copy the next batch into them, then
//   replay); outputs are the tensors the captured work made, overwritten by each replay;
// - memory the captured work allocates comes from a pool private to the graph, alive while
//   the graph is; eager memory freed during the capture is not reused until the graph goes;
// - the captured work must not wait for the device (item(), a copy to the host,
//   synchronize, clip_grad_norm_'s returned norm) nor copy from pageable host memory:
//   capture() throws wick::Error naming what waited, and the graph stays empty;
// - host-side decisions are taken once, at capture (a learning rate passed by value, the
//   random numbers of dropout): the fused AdamW/Adam with capturable = true keep their step
//   count and learning rate on the device (optim/adam.h).
// Warm up (a step or two run eagerly) before capturing, so that lazily made state (the
// optimizer's buffers) exists.
class Graph {
 public:
  explicit Graph(int device = -1);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void capture(const std::function<void()>& work);
  void replay();
  bool captured() const;
  // The stream capture() records on (a created, non-blocking one).
  const Stream& stream() const;
  // Nodes in the captured graph (kernels, copies, fills).
  size_t num_nodes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Caching-allocator statistics for one device, in bytes.
struct MemoryStats {
  size_t allocated = 0;  // held by live tensors
  size_t reserved = 0;   // obtained from cudaMalloc (allocated + cached)
  size_t peak_allocated = 0;
  size_t peak_reserved = 0;
  size_t num_allocs = 0;         // allocate() calls
  size_t num_device_allocs = 0;  // cudaMalloc calls
};
MemoryStats memory_stats(int device = -1);
void reset_peak_memory_stats(int device = -1);
// Returns cached, unused blocks to the driver.
void empty_cache();

// Marks `t`'s memory as used by work on `s` (PyTorch's Tensor.record_stream): when the tensor
// is freed, its block is not handed out again until the work queued on `s` by then has
// finished. Needed whenever memory allocated on one stream is used on another (the caching
// allocator otherwise only orders reuse on the stream that allocated it). Does nothing for
// CPU tensors and for the stream the memory was allocated on.
void record_stream(const Tensor& t, const Stream& s);

// TF32 for float32 matrix products (off by default, as in PyTorch since 1.12).
void set_allow_tf32(bool allow);
bool allow_tf32();

// Whether float16 and bfloat16 matrix products may use reduced-precision reductions (cuBLAS
// splitting K and adding the partial products in 16 bits): on by default, as PyTorch's
// torch.backends.cuda.matmul.allow_fp16/bf16_reduced_precision_reduction. Off keeps float
// partial sums everywhere.
void set_allow_reduced_precision_reduction(bool allow);
bool allow_reduced_precision_reduction();

// Which cuBLAS entry point a matrix product calls (kernels/cuda/matmul.cu).
enum class GemmApi : uint8_t {
  Auto,              // one product: cublasGemmEx; a batch: cublasGemmStridedBatchedEx
  StridedBatched,    // cublasGemmStridedBatchedEx for every product (batch 1 included)
  StridedBatched64,  // cublasGemmStridedBatchedEx_64 (64-bit sizes) for every product
};

// Kernel variants, for benchmarks that measure one against another (tools/gpu-bench.sh) and
// for tests that compare them. The defaults are the fastest variants measured; every variant
// computes the same values up to the rounding of another summation order.
struct KernelTuning {
  bool reduce_unit_stride = true;    // unit-stride reductions: a warp per row, or one launch split over blocks;
                                     // unit-stride columns: the column kernel (off: the generic kernel)
  bool softmax_in_registers = true;  // softmax rows held in registers or shared memory (else two passes over memory)
  GemmApi gemm_api = GemmApi::Auto;
};
KernelTuning kernel_tuning();
void set_kernel_tuning(const KernelTuning& tuning);

}  // namespace wick::cuda
