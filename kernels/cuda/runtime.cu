// The CUDA runtime of wick/tensor/cuda.h (devices, streams, events), pinned host memory, and the
// backend's allocator, device count and host <-> device copies.
//
// Current streams: each thread has its own current stream per device, the device's legacy
// default stream until set_current_stream() says otherwise. The legacy stream (rather than
// the per-thread default stream) because it is ordered with every blocking stream on the
// device, so wick's work interleaves correctly with cuBLAS, cuDNN, NCCL and user code that
// pass no stream, and because the per-thread default only works when every translation
// unit, the user's included, is built with the same --default-stream flag. Streams made by
// Stream::create are non-blocking, which opts them out of that implicit ordering.
#include <wick/tensor/allocator.h>
#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_error.cuh"
#include "kernels/cuda/kernels.h"

namespace wick {

namespace cuda_kernels {

namespace {
// The streams set by set_current_stream on this thread, indexed by device; a null handle
// (or a missing entry) means the default stream.
thread_local std::vector<cuda::Stream> t_current_streams;
}  // namespace

int resolve_device(const char* what, int index) {
  const int n = cuda::device_count();
  WICK_CHECK(n > 0, what, ": no CUDA device is available");
  if (index == -1) {
    WICK_CUDA_CHECK(cudaGetDevice(&index));
    return index;
  }
  WICK_CHECK(index >= 0 && index < n, what, ": no CUDA device ", index, " (", n, " available)");
  return index;
}

cudaStream_t stream_for(int device) {
  if (static_cast<size_t>(device) < t_current_streams.size())
    return static_cast<cudaStream_t>(t_current_streams[static_cast<size_t>(device)].handle());
  return nullptr;
}

uint64_t stream_id_for(int device) {
  if (static_cast<size_t>(device) < t_current_streams.size())
    return t_current_streams[static_cast<size_t>(device)].id();
  return 0;
}

namespace {
// The ids of the streams made by Stream::create that are not destroyed yet. Never destroyed:
// streams held by static objects may go after main returns.
struct LiveStreams {
  std::mutex mutex;
  std::unordered_set<uint64_t> ids;
};
LiveStreams& live_streams() {
  static auto* live = new LiveStreams;
  return *live;
}
std::atomic<uint64_t> g_next_stream_id{1};
}  // namespace

bool stream_alive(uint64_t id) {
  if (id == 0) return true;
  LiveStreams& live = live_streams();
  std::lock_guard<std::mutex> lock(live.mutex);
  return live.ids.count(id) > 0;
}

TensorDeviceGuard::TensorDeviceGuard(const Tensor& t) : TensorDeviceGuard(t.device().index) {}

TensorDeviceGuard::TensorDeviceGuard(int device) {
  int current = -1;
  WICK_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) {
    WICK_CUDA_CHECK(cudaSetDevice(device));
    previous_ = current;
  }
}

TensorDeviceGuard::~TensorDeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);  // a destructor cannot report failure
}

// --- errors found by kernels (device_error.cuh) ------------------------------------------------

namespace {

struct DeviceErrorState {
  DeviceErrorSlot slot;
  DeviceErrorRecord* host;  // the record as the host addresses it
  std::mutex mutex;         // one raise per report
};

constexpr int kMaxErrorDevices = 64;
std::atomic<DeviceErrorState*> g_device_errors[kMaxErrorDevices] = {};
std::mutex g_device_errors_made;

std::string describe_device_error(int64_t kind, const int64_t* v) {
  switch (static_cast<DeviceErrorKind>(kind)) {
    case DeviceErrorKind::CrossEntropyTarget:
      return "cross_entropy: target " + std::to_string(v[0]) + " at position " + std::to_string(v[1]) +
             " is out of range for " + std::to_string(v[2]) + " classes (ignore_index is " + std::to_string(v[3]) + ")";
    case DeviceErrorKind::IndexOutOfBounds:  // the CPU kernels' message
      return std::string(index_op_name(v[3])) + ": index " + std::to_string(v[0]) + " is out of bounds for dim " +
             std::to_string(v[1]) + " with size " + std::to_string(v[2]);
    default: return "a kernel reported error " + std::to_string(kind);
  }
}

}  // namespace

DeviceErrorSlot device_error_slot(int device) {
  WICK_CHECK(device >= 0 && device < kMaxErrorDevices, "device errors: cuda:", device, " is beyond the ",
             kMaxErrorDevices, " devices supported");
  if (DeviceErrorState* s = g_device_errors[device].load(std::memory_order_acquire)) return s->slot;
  std::lock_guard<std::mutex> lock(g_device_errors_made);
  if (DeviceErrorState* s = g_device_errors[device].load(std::memory_order_acquire)) return s->slot;
  TensorDeviceGuard guard(device);
  // Both live as long as the process: kernels launched up to its end may report.
  auto* state = new DeviceErrorState;
  void* host = nullptr;
  WICK_CUDA_CHECK(cudaHostAlloc(&host, sizeof(DeviceErrorRecord), cudaHostAllocPortable | cudaHostAllocMapped));
  std::memset(host, 0, sizeof(DeviceErrorRecord));
  state->host = static_cast<DeviceErrorRecord*>(host);
  state->host->generation = 1;
  void* device_view = host;  // with unified addressing (every 64-bit platform) the same address
#if defined(__CUDACC__)
  WICK_CUDA_CHECK(cudaHostGetDevicePointer(&device_view, host, 0));
#endif
  void* claim = nullptr;
  WICK_CUDA_CHECK(cudaMalloc(&claim, sizeof(unsigned long long)));
  state->slot = DeviceErrorSlot{static_cast<unsigned long long*>(claim), static_cast<DeviceErrorRecord*>(device_view)};
  g_device_errors[device].store(state, std::memory_order_release);
  return state->slot;
}

void raise_device_errors(int device, const char* where) {
  if (device < 0 || device >= kMaxErrorDevices) return;
  DeviceErrorState* s = g_device_errors[device].load(std::memory_order_acquire);
  if (!s) return;  // no kernel of this device could report
  volatile DeviceErrorRecord* r = s->host;
  if (r->raised == 0) return;
  int64_t kind = 0, values[4] = {};
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (r->raised == 0) return;  // another thread raised it
    std::atomic_thread_fence(std::memory_order_acquire);
    kind = r->kind;
    for (int k = 0; k < 4; ++k) values[k] = r->values[k];
    r->raised = 0;
    r->generation = r->generation + 1;  // the next report is written again
  }
  detail::throw_error(describe_device_error(kind, values), " (found on cuda:", device,
                      " by a kernel that ran before this wait, ", where,
                      ": CUDA kernels report errors in their data asynchronously)");
}

}  // namespace cuda_kernels

using cuda_kernels::resolve_device;
using cuda_kernels::TensorDeviceGuard;

// --- devices --------------------------------------------------------------------------------

namespace cuda {

int device_count() {
  // Asked once: a machine without a GPU or driver answers with an error, which means 0.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

bool is_available() { return device_count() > 0; }
bool is_built() { return true; }

int current_device() { return resolve_device("cuda::current_device", -1); }

void set_device(int index) {
  WICK_CHECK(index >= 0, "cuda::set_device: bad device index ", index);
  WICK_CUDA_CHECK(cudaSetDevice(resolve_device("cuda::set_device", index)));
}

void synchronize(int index) {
  const int device = resolve_device("cuda::synchronize", index);
  TensorDeviceGuard guard(device);
  WICK_CUDA_CHECK(cudaDeviceSynchronize());
  cuda_kernels::raise_device_errors(device, "cuda::synchronize");
}

DeviceGuard::DeviceGuard(int index) : previous_(-1) {
  WICK_CHECK(index >= 0, "cuda::DeviceGuard: bad device index ", index);
  const int target = resolve_device("cuda::DeviceGuard", index);
  int current = -1;
  WICK_CUDA_CHECK(cudaGetDevice(&current));
  if (current != target) {
    WICK_CUDA_CHECK(cudaSetDevice(target));
    previous_ = current;  // -1 means nothing to restore
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

// --- streams --------------------------------------------------------------------------------

Stream Stream::create(int device, int priority) {
  const int d = resolve_device("cuda::Stream::create", device);
  TensorDeviceGuard guard(d);
  cudaStream_t s = nullptr;
  WICK_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
  const uint64_t id = cuda_kernels::g_next_stream_id++;
  {
    cuda_kernels::LiveStreams& live = cuda_kernels::live_streams();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.ids.insert(id);
  }
  Stream out;
  out.handle_ = std::shared_ptr<void>(static_cast<void*>(s), [d, id](void* h) {
    {
      cuda_kernels::LiveStreams& live = cuda_kernels::live_streams();
      std::lock_guard<std::mutex> lock(live.mutex);
      live.ids.erase(id);
    }
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) return;  // the driver is gone (program exit)
    (void)cudaSetDevice(d);
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(h));
    (void)cudaSetDevice(previous);
  });
  out.device_ = d;
  out.id_ = id;
  return out;
}

Stream Stream::default_stream(int device) {
  Stream out;
  out.device_ = resolve_device("cuda::Stream::default_stream", device);
  return out;
}

void Stream::synchronize() const {
  TensorDeviceGuard guard(device_);  // the null handle means this device's default stream
  WICK_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle())));
  cuda_kernels::raise_device_errors(device_, "cuda::Stream::synchronize");
}

bool Stream::query() const {
  TensorDeviceGuard guard(device_);
  cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(handle()));
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  WICK_CUDA_CHECK(err);
  return true;
}

Stream current_stream(int device) {
  const int d = resolve_device("cuda::current_stream", device);
  auto& streams = cuda_kernels::t_current_streams;
  if (static_cast<size_t>(d) < streams.size() && streams[static_cast<size_t>(d)].handle())
    return streams[static_cast<size_t>(d)];
  return Stream::default_stream(d);
}

void set_current_stream(const Stream& s) {
  const int d = resolve_device("cuda::set_current_stream", s.device());
  auto& streams = cuda_kernels::t_current_streams;
  if (streams.size() <= static_cast<size_t>(d)) streams.resize(static_cast<size_t>(d) + 1);
  streams[static_cast<size_t>(d)] = s;
}

StreamGuard::StreamGuard(const Stream& s) : previous_(current_stream(s.device())) { set_current_stream(s); }

StreamGuard::~StreamGuard() { cuda_kernels::t_current_streams[static_cast<size_t>(previous_.device())] = previous_; }

// --- events ---------------------------------------------------------------------------------

Event::Event(bool enable_timing) {
  device_ = resolve_device("cuda::Event", -1);
  cudaEvent_t e = nullptr;
  WICK_CUDA_CHECK(cudaEventCreateWithFlags(&e, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
  handle_ = std::shared_ptr<void>(static_cast<void*>(e),
                                  [](void* h) { (void)cudaEventDestroy(static_cast<cudaEvent_t>(h)); });
}

void Event::record(const Stream& s) {
  WICK_CHECK(s.device() == device_, "cuda::Event::record: the event belongs to cuda:", device_,
             " but the stream to cuda:", s.device());
  TensorDeviceGuard guard(device_);
  WICK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(handle()), static_cast<cudaStream_t>(s.handle())));
}

void Event::record() { record(current_stream(device_)); }

void Event::wait(const Stream& s) const {
  TensorDeviceGuard guard(s.device());
  WICK_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(s.handle()), static_cast<cudaEvent_t>(handle()), 0));
}

void Event::synchronize() const {
  WICK_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle())));
  cuda_kernels::raise_device_errors(device_, "cuda::Event::synchronize");
}

bool Event::query() const {
  cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(handle()));
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  WICK_CUDA_CHECK(err);
  return true;
}

// Waits for both events: the time between two events is only known once both have happened,
// and `start` may have been recorded on another stream that has not reached it yet
// (cudaEventElapsedTime answers cudaErrorNotReady then).
float Event::elapsed_ms(const Event& end) const {
  synchronize();
  end.synchronize();
  float ms = 0;
  WICK_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(handle()), static_cast<cudaEvent_t>(end.handle())));
  return ms;
}

// --- settings -------------------------------------------------------------------------------

namespace {
std::atomic<bool> g_allow_tf32{false};
std::atomic<bool> g_allow_reduced_precision_reduction{true};
// KernelTuning's fields as bits of one word, read by every launch without a lock.
uint32_t pack(const KernelTuning& t) {
  return uint32_t{t.reduce_unit_stride} | uint32_t{t.softmax_in_registers} << 1 | uint32_t(t.gemm_api) << 8;
}
KernelTuning unpack(uint32_t w) {
  KernelTuning t;
  t.reduce_unit_stride = w & 1;
  t.softmax_in_registers = (w >> 1) & 1;
  t.gemm_api = static_cast<GemmApi>((w >> 8) & 0xff);
  return t;
}
std::atomic<uint32_t> g_kernel_tuning{pack(KernelTuning{})};
}  // namespace

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32.load(); }
void set_allow_reduced_precision_reduction(bool allow) { g_allow_reduced_precision_reduction = allow; }
bool allow_reduced_precision_reduction() { return g_allow_reduced_precision_reduction.load(); }
KernelTuning kernel_tuning() { return unpack(g_kernel_tuning.load(std::memory_order_relaxed)); }
void set_kernel_tuning(const KernelTuning& tuning) { g_kernel_tuning.store(pack(tuning), std::memory_order_relaxed); }

}  // namespace cuda

// --- pinned host memory -----------------------------------------------------------------------

namespace {

// Page-locked memory from cudaHostAlloc. Without a device (or driver) there is nothing to
// copy to, so plain host memory stands in and CPU-only programs that ask for pinned buffers
// keep working.
class PinnedAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    WICK_CHECK(device.is_cpu(), "pinned allocator: pinned memory is host memory, not ", device);
    if (cuda::device_count() == 0) return cpu_allocator().allocate(nbytes, device);
    void* p = nullptr;
    cudaError_t err = cudaHostAlloc(&p, nbytes == 0 ? 1 : nbytes, cudaHostAllocPortable);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      detail::throw_error("pinned allocator: cannot allocate ", nbytes,
                          " bytes of page-locked memory: ", cudaGetErrorString(err));
    }
    return DataPtr(p, [](void* q) { (void)cudaFreeHost(q); });
  }
};

}  // namespace

Allocator& pinned_allocator() {
  static PinnedAllocator alloc;  // stateless
  return alloc;
}

// --- the backend ------------------------------------------------------------------------------

namespace cuda_kernels {

namespace {

// Contiguous bytes between the host and a device, or between two devices. The copy runs on
// the CUDA side's current stream (the source's for device to device, ordered after the
// destination's stream through events). Unless the caller allows it and the host buffer is
// pinned, it is finished before returning, so the host buffer may be reused at once.
void copy_across_devices(const Tensor& dst, const Tensor& src, bool non_blocking) {
  WICK_CHECK(dst.dtype() == src.dtype() && dst.numel() == src.numel() && dst.is_contiguous() && src.is_contiguous(),
             "copy_across_devices: needs contiguous tensors of one dtype and size, got ", dtype_name(src.dtype()), " ",
             shape_str(src.shape()), " -> ", dtype_name(dst.dtype()), " ", shape_str(dst.shape()));
  const size_t n = dst.nbytes();
  if (n == 0) return;
  if (src.is_cuda() && dst.is_cuda()) {
    const int sd = src.device().index, dd = dst.device().index;
    cudaStream_t stream = stream_for(sd);
    if (sd == dd) {
      TensorDeviceGuard guard(sd);
      WICK_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), n, cudaMemcpyDeviceToDevice, stream));
    } else {
      // The destination may reuse memory its stream has only just finished with, and later
      // work on that stream reads the result: order the copy between the two streams.
      TensorDeviceGuard on_dst(dd);
      cuda::Event dst_ready;
      dst_ready.record(cuda::current_stream(dd));
      TensorDeviceGuard on_src(sd);
      dst_ready.wait(cuda::current_stream(sd));
      WICK_CUDA_CHECK(cudaMemcpyPeerAsync(dst.data_ptr(), dd, src.data_ptr(), sd, n, stream));
      cuda::Event copied;
      copied.record(cuda::current_stream(sd));
      copied.wait(cuda::current_stream(dd));
    }
    if (!non_blocking) {
      TensorDeviceGuard guard(sd);
      WICK_CUDA_CHECK(cudaStreamSynchronize(stream));
      raise_device_errors(sd, "a copy between devices");
    }
    return;
  }
  const Tensor& gpu = src.is_cuda() ? src : dst;
  const Tensor& host = src.is_cuda() ? dst : src;
  WICK_CHECK(gpu.is_cuda() && host.device().is_cpu(), "copy_across_devices: ", src.device(), " -> ", dst.device(),
             " is not a CUDA copy");
  TensorDeviceGuard guard(gpu);
  cudaStream_t stream = stream_for(gpu);
  const bool waits = !non_blocking || !host.storage()->pinned();
  WICK_CHECK(!waits || !cuda::is_capturing(gpu.device().index), "a copy ", src.is_cuda() ? "to" : "from",
             " the host of a ", dtype_name(src.dtype()), " ", shape_str(src.shape()),
             " tensor (Tensor::to, cpu, cuda, item) waits for the device or reads pageable memory, which a CUDA ",
             "graph cannot hold: ", gpu.device(), "'s current stream is capturing one");
  WICK_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), n,
                                  src.is_cuda() ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, stream));
  if (waits) {
    WICK_CUDA_CHECK(cudaStreamSynchronize(stream));
    raise_device_errors(gpu.device().index, src.is_cuda() ? "a copy to the host" : "a copy from the host");
  }
}

}  // namespace

void register_runtime(Backend& b) {
  b.allocator = &caching_allocator();
  b.device_count = &cuda::device_count;
  b.kernels.copy_across_devices = &copy_across_devices;
}

}  // namespace cuda_kernels

}  // namespace wick
