#pragma once
// Checking CUDA calls and launches, and the stream kernels run on. For .cu files only.
#include <cuda_runtime.h>

#include <wick/tensor/error.h>
#include <wick/tensor/tensor.h>

// Throws wick::Error naming the failed call, the CUDA error and where it happened. The
// runtime also keeps the error as this thread's "last error"; it is cleared so that the next
// WICK_CUDA_CHECK_LAUNCH does not report it again for an innocent kernel.
#define WICK_CUDA_CHECK(expr)                                                                     \
  do {                                                                                            \
    cudaError_t wick_err_ = (expr);                                                               \
    if (wick_err_ != cudaSuccess) {                                                               \
      (void)cudaGetLastError();                                                                   \
      ::wick::detail::throw_error("CUDA error: ", cudaGetErrorString(wick_err_), " (", #expr, ") at ", \
                                  __FILE__, ":", __LINE__);                                       \
    }                                                                                             \
  } while (0)

// After a kernel launch: reports bad launch configurations at once.
#define WICK_CUDA_CHECK_LAUNCH(what)                                                               \
  do {                                                                                            \
    cudaError_t wick_err_ = cudaGetLastError();                                                   \
    if (wick_err_ != cudaSuccess)                                                                 \
      ::wick::detail::throw_error(what, ": CUDA kernel launch failed: ", cudaGetErrorString(wick_err_)); \
  } while (0)

namespace wick::cuda_kernels {

// Makes the tensor's device current for the guard's lifetime (cheap when it already is).
class TensorDeviceGuard {
 public:
  explicit TensorDeviceGuard(const Tensor& t);
  explicit TensorDeviceGuard(int device);
  ~TensorDeviceGuard();
  TensorDeviceGuard(const TensorDeviceGuard&) = delete;
  TensorDeviceGuard& operator=(const TensorDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// This thread's current stream for `device` (runtime.cu).
cudaStream_t stream_for(int device);
// The id (cuda::Stream::id, never reused) of this thread's current stream for `device`.
uint64_t stream_id_for(int device);
// Whether the stream with this id still exists (the default streams, id 0, always do); its
// handle may be used only then, since a destroyed stream's handle is given to new streams.
bool stream_alive(uint64_t id);

// `index`, or the current device when it is -1; throws wick::Error naming `what` when there
// is no such device (runtime.cu).
int resolve_device(const char* what, int index);
inline cudaStream_t stream_for(const Tensor& t) { return stream_for(t.device().index); }

// Blocks of 256 threads and enough of them to cover n elements with `per_thread` each,
// capped so grid-stride loops do the rest.
inline unsigned blocks_for(int64_t n, int threads = 256, int per_thread = 1) {
  int64_t b = (n + static_cast<int64_t>(threads) * per_thread - 1) / (static_cast<int64_t>(threads) * per_thread);
  if (b < 1) b = 1;
  if (b > (1 << 20)) b = 1 << 20;
  return static_cast<unsigned>(b);
}

}  // namespace wick::cuda_kernels
