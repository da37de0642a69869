#pragma once
// What the simulator's API files (runtime, cuBLAS, cuDNN, NCCL) share: devices, the memory
// registry, streams as asynchronous in-order queues, and error recording. Not installed and
// not seen by wick: wick only sees NVIDIA's API headers and <cudasim/*.h>.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cudasim {

// --- errors ---------------------------------------------------------------------------------
// Thrown by work running on a stream (a kernel, a library call, a collective). Errors found
// on a stream are asynchronous, so, as on a GPU, they are sticky: the stream's device keeps
// `code` and every later call returns it. `detail` names the kernel or call and the reason.
struct AsyncError : std::runtime_error {
  cudaError_t code;
  AsyncError(cudaError_t c, const std::string& detail) : std::runtime_error(detail), code(c) {}
};

// Records `code` as this host thread's last error (what cudaGetLastError returns) and, when
// `detail` is not empty, keeps it so that cudaGetErrorString(code) and cudasimLastErrorDetail()
// say which call or kernel failed; prints nothing. Returns `code` (cudaSuccess records nothing).
cudaError_t record_error(cudaError_t code, const std::string& detail = {});

// The sticky error of `device` (cudaSuccess when healthy). Every runtime call made while the
// current device has one returns it.
cudaError_t sticky_error(int device);

// The detail recorded with the sticky error of `device` ("" when none).
std::string sticky_detail(int device);

// Makes `code` the sticky error of `device` (the first one stays), printing the detail.
void set_sticky_error(int device, cudaError_t code, const std::string& detail);

// Forgets the sticky error of `device` (cudaDeviceReset).
void clear_sticky_error(int device);

// --- devices --------------------------------------------------------------------------------
int device_count();    // CUDASIM_DEVICE_COUNT, default 2
int current_device();  // this host thread's current device (cudaSetDevice), default 0
bool peer_access_enabled(int device, int peer);
// cudaSuccess for a device that exists, else records and returns cudaErrorNoDevice or
// cudaErrorInvalidDevice.
cudaError_t check_device(int device);
size_t device_capacity(int device);  // bytes (CUDASIM_DEVICE_MEMORY, cudasimSetDeviceMemoryLimit)

// --- memory ---------------------------------------------------------------------------------
enum class Region { Unknown, Device, Pinned, Freed };
struct PointerInfo {
  Region region = Region::Unknown;
  int device = -1;  // for Region::Device / Region::Freed
  const char* base = nullptr;
  size_t size = 0;  // bytes of the whole allocation
};
// What `p` points into: a live device allocation, pinned host memory, a freed device
// allocation (remembered until its addresses are reused), or something else (pageable host
// memory, a stack, garbage).
PointerInfo find_pointer(const void* p);

// Whether code running on `device` (a kernel, a library call) may touch [p, p + bytes): live
// memory of `device`, of a peer whose access `device` enabled, or pinned host memory. On
// failure `why` says what p is ("freed device memory of cuda:0", "host memory", ...).
// bytes == 0 only checks that p points into such a region.
bool device_can_access(int device, const void* p, size_t bytes, std::string* why);

// What `info` is, in words: "device memory of cuda:0", "pinned host memory", "freed device
// memory of cuda:1", or for anything else "pageable host memory" (`pageable` true, what copies
// say) or "host memory (not allocated by cudaMalloc or cudaHostAlloc)" (false).
std::string describe_pointer(const PointerInfo& info, bool pageable);

// `p` as text ("%p"), for error details.
inline std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// --- guard bytes around device allocations (memory.cpp) ------------------------------------
struct PointerArg;
// After a kernel ran on `device` (and as the device's last kernel, for later reports):
// checks the guard bytes of the device allocations that its pointer arguments point into or
// end at. Returns "" or what the kernel overwrote, naming the kernel and the argument (the
// guard is repaired, so it is reported once).
std::string check_kernel_guards(int device, const char* kernel, const PointerArg* args, size_t n);
// At a synchronisation (`call` names it): checks the guard bytes of every live allocation of
// `device`; damage becomes the device's sticky cudaErrorIllegalAddress, naming the
// allocation and the last kernel that ran on the device.
void check_device_guards(int device, const char* call);

// --- streams --------------------------------------------------------------------------------
struct Stream;
// The stream a handle names for the current device: nullptr / cudaStreamLegacy are the
// device's legacy default stream, cudaStreamPerThread this thread's. nullptr when `s` is not
// a live stream handle (destroyed or never created).
Stream* find_stream(cudaStream_t s);
int stream_device(const Stream* s);

// Waits for every stream of `device` (the legacy one, created ones, per-thread ones).
void wait_device(int device);

// Runs `work` on the stream's own worker thread after everything enqueued on it before, and
// after the implicit dependencies of the legacy default stream. `what` names the work in
// errors. If `work` throws AsyncError (or any exception: reported as cudaErrorLaunchFailure),
// the stream's device gets a sticky error, the detail is printed once to stderr, and later
// work on that device is skipped. Returns at once.
void enqueue(Stream* s, std::string what, std::function<void()> work);

// Like enqueue() (on a stream that is not capturing), then waits for `work` when nothing it
// is ordered after is pending, so that it starts at once: for a copy that CUDA lets return
// once its source is staged, whose transfer an idle GPU then ends within microseconds.
// Returns whether it waited.
bool enqueue_waiting_unless_held(Stream* s, std::string what, std::function<void()> work);

// Like enqueue(), and also serialised with every stream of `devices`: `work` runs after all
// that is enqueued on them so far, and all that is enqueued on them later waits for it
// (cudaMemcpyPeer's ordering). Returns at once.
void enqueue_serialised(Stream* s, std::string what, std::function<void()> work, const std::vector<int>& devices);

// Blocks the calling host thread until everything enqueued on `s` so far has run.
void wait_stream(Stream* s);

// --- stream capture and graphs (streams.cpp, graphs.cpp) ------------------------------------
// One operation of a captured graph: what enqueue() would have run, and what a graph update
// compares (`what`, and for kernels the function).
struct GraphNode {
  std::string what;
  std::function<void()> work;
  const void* function = nullptr;
};

// While `s` is capturing, enqueue() appends to its capture instead of running (kernel
// launches pass `function`, so that cudaGraphExecUpdate can tell kernels apart).
void enqueue_node(Stream* s, std::string what, std::function<void()> work, const void* function);

// cudaErrorStreamCaptureInvalidated (recorded, naming `call`) when `s` belongs to a capture
// that an earlier refusal invalidated; cudaSuccess otherwise.
cudaError_t capture_invalidated(const char* call, Stream* s);

// Whether `s` is capturing (its work is recorded, not run).
bool is_capturing(Stream* s);

// What CUDA refuses during stream capture. `call` waits for the device (or, with
// `target`, for that stream): refused with cudaErrorStreamCaptureUnsupported, invalidating
// the captures concerned, when `target` is capturing, or when the calling thread is
// prohibited from unsafe calls by a capture (cudaThreadExchangeStreamCaptureMode's rules).
// Returns cudaSuccess when the call may go on.
cudaError_t refuse_wait_during_capture(const char* call, Stream* target);

// Invalidates the capture of `s` and records cudaErrorStreamCaptureUnsupported naming
// `call` and `why`: for operations a capturing stream cannot record (a pageable copy).
cudaError_t refuse_on_capturing_stream(const char* call, Stream* s, const std::string& why);

// A new graph holding `nodes` (cudaStreamEndCapture's result; graphs.cpp).
cudaGraph_t new_graph(std::vector<GraphNode> nodes);

// Counts one copy with pageable host memory on one side (cudasimPageableCopies).
void count_pageable_copy();

// Counts one host synchronisation (cudasimHostSynchronizations): a call that waits for device
// work (stream, device or event synchronize; a copy that returns once done).
void count_host_synchronization();

// --- library handles (cuBLAS, cuDNN) --------------------------------------------------------
// The checks a library call makes before launching on a handle of `device` whose stream is
// `handle`: no sticky error on the current device, `device` current, and the stream live and
// of `device`. Returns the stream, or records the error and returns nullptr. `library` names
// the library in errors ("cuBLAS"), `set_stream` its SetStream function ("cublasSetStream"),
// `call` the call.
Stream* handle_launch_stream(const std::string& call, const char* library, const char* set_stream, int device,
                             cudaStream_t handle);

// Waits for all work of `device` (cudaDeviceSynchronize on it), leaving the current device as
// it was: what destroying a library handle of `device` does.
void synchronize_handle_device(int device);

}  // namespace cudasim
