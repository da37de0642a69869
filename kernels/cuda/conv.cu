// 2-d convolution on CUDA through cuDNN (NCHW, grouped, dilated):
//   forward          y  = conv(x, w)             cudnnConvolutionForward        (=, beta 0)
//   backward input   dx = conv^T(dy, w)          cudnnConvolutionBackwardData   (=, beta 0)
//   backward weight  dw = corr(dy, x)            cudnnConvolutionBackwardFilter (=, beta 0)
// The algorithm of each (direction, shapes, geometry, dtype, math mode, device) comes from
// cuDNN's heuristics once and is cached: the first entry cuDNN supports whose workspace fits
// in the memory the device has left (free memory plus the caching allocator's unused cache),
// with its math type (an entry is a kernel: an algorithm under a math type, whose workspace is
// the entry's `memory`), so the descriptor's math type is set to the entry's before each call.
// Workspaces come from the caching allocator.
// float32 may use TF32 tensor cores only when cuda::allow_tf32() is on, as for gemm.
#include <cudnn.h>

#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernels.h"

// Throws wick::Error naming the failed cuDNN call and its status.
#define WICK_CUDNN_CHECK(expr)                                                                               \
  do {                                                                                                       \
    cudnnStatus_t wick_st_ = (expr);                                                                         \
    if (wick_st_ != CUDNN_STATUS_SUCCESS)                                                                    \
      ::wick::detail::throw_error("cuDNN error: ", cudnnGetErrorString(wick_st_), " (", #expr, ") at ", __FILE__, \
                                  ":", __LINE__);                                                            \
  } while (0)

namespace wick::cuda_kernels {

namespace {

// One cuDNN handle per (thread, device): a handle must not be used by two threads at once.
// They are destroyed when the thread ends (thread-local objects go before the CUDA runtime
// shuts down, for the main thread too), as matmul.cu's cuBLAS handles are.
struct ThreadCudnnHandles {
  std::map<int, cudnnHandle_t> handles;
  ~ThreadCudnnHandles() {
    int previous = -1;
    const bool runtime_up = cudaGetDevice(&previous) == cudaSuccess;
    for (auto& [dev, h] : handles) {
      if (runtime_up && cudaSetDevice(dev) == cudaSuccess) (void)cudnnDestroy(h);
    }
    if (runtime_up) (void)cudaSetDevice(previous);
  }
};
thread_local ThreadCudnnHandles t_cudnn_handles;

cudnnHandle_t handle_for(const Tensor& t) {
  auto& handles = t_cudnn_handles.handles;
  const int dev = t.device().index;
  auto it = handles.find(dev);
  if (it == handles.end()) {
    cudnnHandle_t h = nullptr;
    WICK_CUDNN_CHECK(cudnnCreate(&h));
    it = handles.emplace(dev, h).first;
  }
  WICK_CUDNN_CHECK(cudnnSetStream(it->second, stream_for(t)));
  return it->second;
}

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::Float32: return CUDNN_DATA_FLOAT;
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: throw_unsupported_dtype("conv2d", Device::cuda(), t);
  }
}

cudnnMathType_t math_type(DType t) {
  if (t == DType::Float32) return cuda::allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  if (t == DType::Float64) return CUDNN_FMA_MATH;
  return CUDNN_TENSOR_OP_MATH;
}

// The descriptors of one convolution, destroyed with it. `x` is conv2d's input, `w` its
// weight, `y` its output, whichever of them the direction computes.
class ConvDescriptors {
 public:
  ConvDescriptors(const Shape& x, const Shape& w, const Shape& y, DType t, const ConvParams& p) {
    WICK_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    WICK_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_));
    WICK_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_));
    WICK_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
    const cudnnDataType_t dt = cudnn_type(t);
    auto i = [](int64_t v) { return static_cast<int>(v); };
    WICK_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, dt, i(x[0]), i(x[1]), i(x[2]), i(x[3])));
    WICK_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, dt, i(y[0]), i(y[1]), i(y[2]), i(y[3])));
    WICK_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_, dt, CUDNN_TENSOR_NCHW, i(w[0]), i(w[1]), i(w[2]), i(w[3])));
    // 16-bit data accumulates in float; float and double in their own type.
    const cudnnDataType_t compute = t == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    WICK_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_, i(p.padding[0]), i(p.padding[1]), i(p.stride[0]),
                                                     i(p.stride[1]), i(p.dilation[0]), i(p.dilation[1]),
                                                     CUDNN_CROSS_CORRELATION, compute));
    WICK_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_, i(p.groups)));
    WICK_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, math_type(t)));
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyTensorDescriptor(x_);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
};

enum class Direction { Forward, BackwardData, BackwardFilter };

// Everything the algorithm choice depends on.
using AlgoKey = std::tuple<int, Shape, Shape, Shape, std::array<int64_t, 7>, int, int, int>;

AlgoKey algo_key(Direction d, const Tensor& any, const Shape& x, const Shape& w, const Shape& y, const ConvParams& p) {
  return {static_cast<int>(d), x, w, y,
          {p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], p.groups},
          static_cast<int>(any.dtype()), static_cast<int>(math_type(any.dtype())), any.device().index};
}

// A heuristics entry as it is run: the algorithm, the math type the convolution descriptor
// must have for it, and its workspace.
struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

std::mutex g_algo_mutex;
std::map<AlgoKey, AlgoChoice> g_algos;

// The cached choice for `key`, or the one `find` (cuDNN's heuristics) makes.
template <class Find>
AlgoChoice cached_algo(const AlgoKey& key, Find&& find) {
  {
    std::lock_guard<std::mutex> lock(g_algo_mutex);
    auto it = g_algos.find(key);
    if (it != g_algos.end()) return it->second;
  }
  const AlgoChoice choice = find();
  std::lock_guard<std::mutex> lock(g_algo_mutex);
  g_algos.emplace(key, choice);
  return choice;
}

// The most workspace a convolution on `device` (current) may take: what the driver has free
// plus what the caching allocator holds unused.
size_t workspace_limit(int device) {
  size_t free = 0, total = 0;
  WICK_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const cuda::MemoryStats s = cuda::memory_stats(device);
  return free + (s.reserved - s.allocated);
}

// The first entry of a heuristics result list that cuDNN supports and whose workspace fits.
template <class Perf>
AlgoChoice first_usable(const char* op, const Perf* perf, int count, size_t limit) {
  bool supported = false;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    supported = true;
    if (perf[i].memory <= limit) return {static_cast<int>(perf[i].algo), perf[i].mathType, perf[i].memory};
  }
  if (supported)
    detail::throw_error(op, ": every algorithm cuDNN proposes for this convolution needs more workspace than the ",
                        limit, " bytes the device has left");
  detail::throw_error(op, ": cuDNN proposes no algorithm for this convolution");
}

// A device buffer of `bytes` from the caching allocator (undefined for 0 bytes).
Tensor workspace(const Tensor& like, size_t bytes) {
  if (bytes == 0) return Tensor();
  return empty({static_cast<int64_t>(bytes)}, Options(DType::UInt8, like.device()));
}
void* ptr(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// alpha = 1, beta = 0 in the type cuDNN expects for the dtype (double for float64).
struct Scaling {
  float f1 = 1.0f, f0 = 0.0f;
  double d1 = 1.0, d0 = 0.0;
  bool dbl;
  explicit Scaling(DType t) : dbl(t == DType::Float64) {}
  const void* one() const { return dbl ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return dbl ? static_cast<const void*>(&d0) : &f0; }
};

// An output that an empty operand makes all zeros (cuDNN rejects zero-sized descriptors).
bool zero_if_empty(const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return true;
  if (a.numel() != 0 && b.numel() != 0) return false;
  Tensor(out).zero_();
  return true;
}

void conv2d_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const ConvParams& p) {
  if (zero_if_empty(out, in, weight)) return;
  TensorDeviceGuard guard(out);
  cudnnHandle_t h = handle_for(out);
  ConvDescriptors d(in.shape(), weight.shape(), out.shape(), out.dtype(), p);
  const AlgoChoice c = cached_algo(algo_key(Direction::Forward, out, in.shape(), weight.shape(), out.shape(), p), [&] {
    int max = 0;
    WICK_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
    int n = 0;
    WICK_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x_, d.w_, d.conv_, d.y_, static_cast<int>(perf.size()),
                                                            &n, perf.data()));
    return first_usable("conv2d", perf.data(), n, workspace_limit(out.device().index));
  });
  const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(c.algo);
  WICK_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv_, c.math));
  const size_t bytes = c.workspace;
  Tensor ws = workspace(out, bytes);
  Scaling s(out.dtype());
  WICK_CUDNN_CHECK(cudnnConvolutionForward(h, s.one(), d.x_, in.data_ptr(), d.w_, weight.data_ptr(), d.conv_, algo,
                                           ptr(ws), bytes, s.zero(), d.y_, out.data_ptr()));
}

void conv2d_backward_input(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight, const ConvParams& p) {
  if (zero_if_empty(grad_in, grad_out, weight)) return;
  TensorDeviceGuard guard(grad_in);
  cudnnHandle_t h = handle_for(grad_in);
  ConvDescriptors d(grad_in.shape(), weight.shape(), grad_out.shape(), grad_in.dtype(), p);
  const AlgoChoice c = cached_algo(
      algo_key(Direction::BackwardData, grad_in, grad_in.shape(), weight.shape(), grad_out.shape(), p), [&] {
        int max = 0;
        WICK_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max));
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
        int n = 0;
        WICK_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w_, d.y_, d.conv_, d.x_,
                                                                     static_cast<int>(perf.size()), &n, perf.data()));
        return first_usable("conv2d_backward_input", perf.data(), n, workspace_limit(grad_in.device().index));
      });
  const auto algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo);
  WICK_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv_, c.math));
  const size_t bytes = c.workspace;
  Tensor ws = workspace(grad_in, bytes);
  Scaling s(grad_in.dtype());
  WICK_CUDNN_CHECK(cudnnConvolutionBackwardData(h, s.one(), d.w_, weight.data_ptr(), d.y_, grad_out.data_ptr(),
                                                d.conv_, algo, ptr(ws), bytes, s.zero(), d.x_, grad_in.data_ptr()));
}

void conv2d_backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& in, const ConvParams& p) {
  if (zero_if_empty(grad_weight, grad_out, in)) return;
  TensorDeviceGuard guard(grad_weight);
  cudnnHandle_t h = handle_for(grad_weight);
  ConvDescriptors d(in.shape(), grad_weight.shape(), grad_out.shape(), grad_weight.dtype(), p);
  const AlgoChoice c = cached_algo(
      algo_key(Direction::BackwardFilter, grad_weight, in.shape(), grad_weight.shape(), grad_out.shape(), p), [&] {
        int max = 0;
        WICK_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max));
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(std::max(max, 1)));
        int n = 0;
        WICK_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x_, d.y_, d.conv_, d.w_,
                                                                       static_cast<int>(perf.size()), &n, perf.data()));
        return first_usable("conv2d_backward_weight", perf.data(), n, workspace_limit(grad_weight.device().index));
      });
  const auto algo = static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo);
  WICK_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv_, c.math));
  const size_t bytes = c.workspace;
  Tensor ws = workspace(grad_weight, bytes);
  Scaling s(grad_weight.dtype());
  WICK_CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, s.one(), d.x_, in.data_ptr(), d.y_, grad_out.data_ptr(), d.conv_,
                                                  algo, ptr(ws), bytes, s.zero(), d.w_, grad_weight.data_ptr()));
}

}  // namespace

void register_conv(KernelTable& t) {
  t.conv2d_forward = &conv2d_forward;
  t.conv2d_backward_input = &conv2d_backward_input;
  t.conv2d_backward_weight = &conv2d_backward_weight;
}

}  // namespace wick::cuda_kernels
