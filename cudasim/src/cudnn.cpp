// cuDNN on the CPU: handles, 4-d tensor/filter/convolution descriptors, the v7 algorithm
// heuristics, workspace sizes, and 2-d convolution forward, backward data and backward filter
// (grouped, dilated, strided, padded; convolution or cross-correlation), with cuDNN's
// documented argument checks.
//
// Model of a device of the Ampere/Hopper generation:
// - Every algorithm computes the same direct convolution, accumulating in double for DOUBLE
//   data and in float otherwise (TRUE_HALF, a HALF compute type, included: cuDNN leaves its
//   partial-sum precision open), and rounding once when storing the output. The only
//   difference between kernels: a tensor-core kernel rounds FLOAT inputs to TF32 first
//   (16-bit inputs are exact in it).
// - Tensor-core kernels exist for IMPLICIT_PRECOMP_GEMM and WINOGRAD_NONFUSED (forward) and
//   ALGO_1 and WINOGRAD_NONFUSED (backward data and filter), for FLOAT/HALF/BFLOAT16 data.
//   The kernel a call runs is chosen by (algorithm, data type, the convolution descriptor's
//   math type): CUDNN_DEFAULT_MATH (which on this generation permits TF32),
//   CUDNN_TENSOR_OP_MATH and CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION run an algorithm's
//   tensor-core kernel when it has one; CUDNN_FMA_MATH never does. Tensor-core kernels on
//   NCHW data need workspace for NHWC copies of the operands (and time for the copies), so
//   workspace and time depend on the math type too.
// - The v7 heuristics list, as cuDNN documents for the ...AlgorithmMaxCount calls, every
//   algorithm plus, when the descriptor permits tensor cores, a second entry for each
//   algorithm that has both kernels: one with mathType CUDNN_TENSOR_OP_MATH (the tensor-core
//   kernel) and one with CUDNN_FMA_MATH (its FMA kernel); algorithms with one kernel report
//   CUDNN_DEFAULT_MATH (CUDNN_FMA_MATH under an FMA descriptor). An entry's memory is what
//   GetWorkspaceSize returns once the descriptor's math type is set to the entry's mathType,
//   the documented way to run the entry; a caller that runs an entry under another math type
//   runs another kernel (other numerics, other workspace).
// - WINOGRAD_NONFUSED on 16-bit data exists only as a tensor-core kernel: under
//   CUDNN_FMA_MATH it is CUDNN_STATUS_NOT_SUPPORTED (the math-type compatibility rule).
// - A convolution call checks the descriptors (CUDNN_STATUS_BAD_PARAM for mismatches), that
//   the algorithm is supported for them (CUDNN_STATUS_NOT_SUPPORTED), and that the workspace
//   holds what the matching GetWorkspaceSize call returns (CUDNN_STATUS_BAD_PARAM).
// - The work runs asynchronously on the handle's stream; memory the device may not touch is
//   an illegal address found there (a sticky error), as on a GPU.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // cuDNN 9 deprecates the legacy API it offers

#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cudnn_model.h"
#include "float_formats.h"
#include "internal.h"

struct cudnnContext {
  int device = 0;
  cudaStream_t stream = nullptr;
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t sn = 0, sc = 0, sh = 0, sw = 0;  // element strides
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int64_t k = 0, c = 0, h = 0, w = 0;
};

struct cudnnConvolutionStruct {
  bool set = false;
  int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1;
  cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

namespace {

using namespace cudasim::cudnn;

// --- number formats (float_formats.h) ------------------------------------------------------

using cudasim::bf16_to_float;
using cudasim::element_bytes;
using cudasim::ElementFormat;
using cudasim::float_to_bf16;
using cudasim::float_to_half;
using cudasim::half_to_float;
using cudasim::load_element;
using cudasim::round_tf32;
using cudasim::store_element;

bool known_data_type(int t) { return t >= CUDNN_DATA_FLOAT && t <= CUDNN_DATA_COMPLEX_FP64; }

// --- the convolution a set of descriptors describes -----------------------------------------

int64_t out_size(int64_t in, int64_t pad, int64_t filter, int64_t dilation, int64_t stride) {
  return (in + 2 * pad - ((filter - 1) * dilation + 1)) / stride + 1;
}

// The descriptor checks every convolution entry point makes.
cudnnStatus_t describe(cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd, cudnnConvolutionDescriptor_t cd,
                       cudnnTensorDescriptor_t yd, Conv* g) {
  if (!xd || !wd || !cd || !yd || !xd->set || !wd->set || !cd->set || !yd->set) return CUDNN_STATUS_BAD_PARAM;
  if (xd->type != wd->type || yd->type != wd->type) return CUDNN_STATUS_BAD_PARAM;
  if (xd->c != wd->c * cd->groups || wd->k % cd->groups != 0) return CUDNN_STATUS_BAD_PARAM;
  if ((wd->h - 1) * cd->dil_h + 1 > xd->h + 2 * cd->pad_h || (wd->w - 1) * cd->dil_w + 1 > xd->w + 2 * cd->pad_w)
    return CUDNN_STATUS_BAD_PARAM;
  const int64_t oh = out_size(xd->h, cd->pad_h, wd->h, cd->dil_h, cd->u);
  const int64_t ow = out_size(xd->w, cd->pad_w, wd->w, cd->dil_w, cd->v);
  if (yd->n != xd->n || yd->c != wd->k || yd->h != oh || yd->w != ow) return CUDNN_STATUS_BAD_PARAM;
  // The configurations cuDNN documents for FLOAT/DOUBLE/HALF/BFLOAT16 data (TRUE_HALF,
  // PSEUDO_HALF, PSEUDO_BFLOAT16, FLOAT, DOUBLE); the INT8 ones are not simulated.
  const cudnnDataType_t d = xd->type, c = cd->compute;
  const bool config = (d == CUDNN_DATA_FLOAT && c == CUDNN_DATA_FLOAT) ||
                      (d == CUDNN_DATA_DOUBLE && c == CUDNN_DATA_DOUBLE) ||
                      (d == CUDNN_DATA_HALF && (c == CUDNN_DATA_HALF || c == CUDNN_DATA_FLOAT)) ||
                      (d == CUDNN_DATA_BFLOAT16 && c == CUDNN_DATA_FLOAT);
  if (!config) return CUDNN_STATUS_NOT_SUPPORTED;
  const Strides filter = wd->format == CUDNN_TENSOR_NHWC ? Strides{wd->h * wd->w * wd->c, 1, wd->w * wd->c, wd->c}
                                                         : Strides{wd->c * wd->h * wd->w, wd->h * wd->w, wd->w, 1};
  *g = Conv{xd->n,      xd->c,
            xd->h,      xd->w,
            wd->k,      wd->c,
            wd->h,      wd->w,
            oh,         ow,
            cd->groups, cd->pad_h,
            cd->pad_w,  cd->u,
            cd->v,      cd->dil_h,
            cd->dil_w,  cd->mode == CUDNN_CONVOLUTION,
            d,          c,
            cd->math,   Strides{xd->sn, xd->sc, xd->sh, xd->sw},
            filter,     Strides{yd->sn, yd->sc, yd->sh, yd->sw}};
  return CUDNN_STATUS_SUCCESS;
}

// A tensor in device memory: its data, type, sizes and strides.
struct Tensor {
  const char* name;
  const void* data;
  cudnnDataType_t type;
  int64_t n, c, h, w;
  Strides s;
  int64_t offset(int64_t i, int64_t j, int64_t k, int64_t l) const { return i * s.n + j * s.c + k * s.h + l * s.w; }
  size_t bytes() const {
    return static_cast<size_t>(offset(n - 1, c - 1, h - 1, w - 1) + 1) * element_bytes(format_of(type));
  }
};

template <class T>
void pack(const Tensor& t, bool tf32, std::vector<T>& out) {
  out.resize(static_cast<size_t>(t.n * t.c * t.h * t.w));
  T* dst = out.data();
  for (int64_t i = 0; i < t.n; ++i)
    for (int64_t j = 0; j < t.c; ++j)
      for (int64_t k = 0; k < t.h; ++k)
        for (int64_t l = 0; l < t.w; ++l) {
          T v = load_element<T>(t.data, format_of(t.type), t.offset(i, j, k, l));
          if constexpr (std::is_same_v<T, float>) {
            if (tf32) v = round_tf32(v);
          }
          *dst++ = v;
        }
}

// out = alpha * result + beta * out; beta == 0 does not read out.
template <class T>
void blend(const Tensor& t, const std::vector<T>& result, double alpha, double beta) {
  void* p = const_cast<void*>(t.data);
  const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
  const T* src = result.data();
  for (int64_t i = 0; i < t.n; ++i)
    for (int64_t j = 0; j < t.c; ++j)
      for (int64_t k = 0; k < t.h; ++k)
        for (int64_t l = 0; l < t.w; ++l) {
          const int64_t o = t.offset(i, j, k, l);
          T v = a * *src++;
          if (beta != 0.0) v += b * load_element<T>(p, format_of(t.type), o);
          store_element<T>(p, format_of(t.type), o, v);
        }
}

struct Job {
  std::string call;
  int device;
  Dir dir;
  Conv g;
  bool tf32;
  Tensor in0, in1, out;  // forward: x, w -> y; backward data: w, dy -> dx; backward filter: x, dy -> dw
  double alpha, beta;
  const void* workspace;
  size_t workspace_bytes;  // what the algorithm uses
};

void check_access(const Job& j, const char* what, const void* p, size_t bytes) {
  std::string why;
  if (!cudasim::device_can_access(j.device, p, bytes, &why))
    throw cudasim::AsyncError(cudaErrorIllegalAddress, j.call + ": " + what + " (" + std::to_string(bytes) +
                                                           " bytes at " + cudasim::pointer_text(p) +
                                                           ") is not accessible from cuda:" + std::to_string(j.device) +
                                                           ": " + why);
}

template <class T>
void run(const Job& j) {
  check_access(j, j.in0.name, j.in0.data, j.in0.bytes());
  check_access(j, j.in1.name, j.in1.data, j.in1.bytes());
  check_access(j, j.out.name, j.out.data, j.out.bytes());
  if (j.workspace_bytes > 0) check_access(j, "the workspace", j.workspace, j.workspace_bytes);
  thread_local std::vector<T> a, b, result;
  pack(j.in0, j.tf32, a);
  pack(j.in1, j.tf32, b);
  result.resize(static_cast<size_t>(j.out.n * j.out.c * j.out.h * j.out.w));
  switch (j.dir) {
    case Dir::Forward: forward(j.g, a.data(), b.data(), result.data()); break;
    case Dir::BackwardData: backward_data(j.g, a.data(), b.data(), result.data()); break;
    case Dir::BackwardFilter: backward_filter(j.g, a.data(), b.data(), result.data()); break;
  }
  blend(j.out, result, j.alpha, j.beta);
}

Tensor tensor(const char* name, const void* data, cudnnTensorDescriptor_t d) {
  return {name, data, d->type, d->n, d->c, d->h, d->w, {d->sn, d->sc, d->sh, d->sw}};
}
Tensor filter(const char* name, const void* data, const Conv& g) {
  return {name, data, g.data, g.K, g.Cg, g.R, g.S, g.ws};
}

// The checks a GPU launch makes, then the asynchronous work.
cudnnStatus_t launch(cudnnHandle_t h, Job job) {
  cudasim::Stream* stream = cudasim::handle_launch_stream(job.call, "cuDNN", "cudnnSetStream", h->device, h->stream);
  if (!stream) return CUDNN_STATUS_EXECUTION_FAILED;
  std::string what = job.call;
  cudasim::enqueue(stream, std::move(what), [job = std::move(job)] {
    if (job.g.data == CUDNN_DATA_DOUBLE) {
      run<double>(job);
    } else {
      run<float>(job);
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

// Everything the three convolution calls share: descriptor, algorithm and workspace checks.
cudnnStatus_t convolve(const char* call, Dir dir, cudnnHandle_t h, const void* alpha, cudnnTensorDescriptor_t xd,
                       cudnnFilterDescriptor_t wd, cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd,
                       int algo, const void* workspace, size_t workspace_bytes, const void* beta, const void* x,
                       const void* w, const void* y) {
  if (!h || !alpha || !beta) return CUDNN_STATUS_BAD_PARAM;
  Conv g;
  if (const cudnnStatus_t st = describe(xd, wd, cd, yd, &g); st != CUDNN_STATUS_SUCCESS) return st;
  if (algo < 0 || algo >= algo_count(dir)) return CUDNN_STATUS_BAD_PARAM;
  const AlgoInfo info = kernel_for(dir, algo, g);
  if (!info.supported) return CUDNN_STATUS_NOT_SUPPORTED;
  if (workspace_bytes < info.workspace || (info.workspace > 0 && !workspace)) return CUDNN_STATUS_BAD_PARAM;
  // The scaling factors are host values: double for DOUBLE data, float otherwise.
  const bool dbl = g.data == CUDNN_DATA_DOUBLE;
  const double a = dbl ? *static_cast<const double*>(alpha) : *static_cast<const float*>(alpha);
  const double b = dbl ? *static_cast<const double*>(beta) : *static_cast<const float*>(beta);
  const bool tf32 = info.tensor_cores && g.data == CUDNN_DATA_FLOAT;
  Job job{call, h->device, dir, g, tf32, {}, {}, {}, a, b, workspace, info.workspace};
  switch (dir) {
    case Dir::Forward: job.in0 = tensor("x", x, xd), job.in1 = filter("w", w, g), job.out = tensor("y", y, yd); break;
    case Dir::BackwardData:
      job.in0 = filter("w", w, g), job.in1 = tensor("dy", y, yd), job.out = tensor("dx", x, xd);
      break;
    case Dir::BackwardFilter:
      job.in0 = tensor("x", x, xd), job.in1 = tensor("dy", y, yd), job.out = filter("dw", w, g);
      break;
  }
  return launch(h, std::move(job));
}

// The v7 heuristics: every algorithm of the direction (and the FMA kernels of those that also
// have a tensor-core one), the supported entries first in order of estimated time, then the
// unsupported ones (status CUDNN_STATUS_NOT_SUPPORTED, time -1), the first `requested` of them.
template <class Perf, class Algo>
cudnnStatus_t heuristics(Dir dir, cudnnHandle_t h, cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                         cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd, int requested, int* returned,
                         Perf* results) {
  if (!h || !returned || !results || requested <= 0) return CUDNN_STATUS_BAD_PARAM;
  Conv g;
  if (const cudnnStatus_t st = describe(xd, wd, cd, yd, &g); st != CUDNN_STATUS_SUCCESS) return st;
  std::vector<Perf> all;
  auto add = [&](int a, const AlgoInfo& info, cudnnMathType_t math) {
    Perf p{};
    p.algo = static_cast<Algo>(a);
    p.status = info.supported ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
    p.time = info.time_ms;
    p.memory = info.workspace;
    p.determinism = info.deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
    p.mathType = math;
    all.push_back(p);
  };
  const cudnnMathType_t plain = g.math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  for (int a = 0; a < algo_count(dir); ++a) {
    const AlgoInfo info = kernel_for(dir, a, g);
    add(a, info, info.tensor_cores ? CUDNN_TENSOR_OP_MATH : plain);
    if (info.tensor_cores) {  // the same algorithm's FMA kernel, run under CUDNN_FMA_MATH
      const AlgoInfo fma = algo_info(dir, a, g, false);
      if (fma.supported) add(a, fma, CUDNN_FMA_MATH);
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Perf& l, const Perf& r) {
    const bool ls = l.status == CUDNN_STATUS_SUCCESS, rs = r.status == CUDNN_STATUS_SUCCESS;
    if (ls != rs) return ls;
    return ls && l.time < r.time;
  });
  const int count = std::min(requested, static_cast<int>(all.size()));
  std::copy(all.begin(), all.begin() + count, results);
  *returned = count;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t workspace_size(Dir dir, cudnnHandle_t h, cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                             cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd, int algo, size_t* bytes) {
  if (!h || !bytes) return CUDNN_STATUS_BAD_PARAM;
  Conv g;
  if (const cudnnStatus_t st = describe(xd, wd, cd, yd, &g); st != CUDNN_STATUS_SUCCESS) return st;
  if (algo < 0 || algo >= algo_count(dir)) return CUDNN_STATUS_BAD_PARAM;
  const AlgoInfo info = kernel_for(dir, algo, g);
  if (!info.supported) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = info.workspace;
  return CUDNN_STATUS_SUCCESS;
}

bool too_big(int64_t n, int64_t c, int64_t h, int64_t w) { return n * c * h * w > INT32_MAX; }

}  // namespace

extern "C" {

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_MAPPING_ERROR: return "CUDNN_STATUS_MAPPING_ERROR";
    case CUDNN_STATUS_INVALID_VALUE: return "CUDNN_STATUS_INVALID_VALUE";
    case CUDNN_STATUS_ALLOC_FAILED: return "CUDNN_STATUS_ALLOC_FAILED";
    default: return "CUDNN_UNKNOWN_STATUS_FOUND";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  if (cudasim::sticky_error(cudasim::current_device()) != cudaSuccess) return CUDNN_STATUS_NOT_INITIALIZED;
  auto* h = new cudnnContext;
  h->device = cudasim::current_device();
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

// Documented to synchronize the device, like cublasDestroy.
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  cudasim::synchronize_handle_device(handle->device);
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

// A created stream of another device does not belong with the handle (cuDNN's mapping error);
// the special handles (0, legacy, per-thread) name the handle's device's streams.
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  if (stream && stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
    cudasim::Stream* s = cudasim::find_stream(stream);
    if (s && cudasim::stream_device(s) != handle->device) return CUDNN_STATUS_MAPPING_ERROR;
  }
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (!handle || !stream) return CUDNN_STATUS_BAD_PARAM;
  *stream = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

// --- tensor descriptors ---------------------------------------------------------------------

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  *desc = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int n, int c, int h,
                                           int w, int ns, int cs, int hs, int ws) {
  if (!desc || !known_data_type(type) || n <= 0 || c <= 0 || h <= 0 || w <= 0 || ns <= 0 || cs <= 0 || hs <= 0 ||
      ws <= 0)
    return CUDNN_STATUS_BAD_PARAM;
  if (too_big(n, c, h, w)) return CUDNN_STATUS_NOT_SUPPORTED;
  *desc = cudnnTensorStruct{true, type, n, c, h, w, ns, cs, hs, ws};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format, cudnnDataType_t type,
                                         int n, int c, int h, int w) {
  if (!desc || n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (too_big(n, c, h, w)) return CUDNN_STATUS_NOT_SUPPORTED;
  switch (format) {
    case CUDNN_TENSOR_NCHW: return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, c * h * w, h * w, w, 1);
    case CUDNN_TENSOR_NHWC: return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, h * w * c, 1, w * c, c);
    case CUDNN_TENSOR_NCHW_VECT_C: return CUDNN_STATUS_NOT_SUPPORTED;  // int8 layouts: not simulated
    default: return CUDNN_STATUS_BAD_PARAM;
  }
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t desc, cudnnDataType_t* type, int* n, int* c,
                                         int* h, int* w, int* ns, int* cs, int* hs, int* ws) {
  if (!desc || !desc->set || !type || !n || !c || !h || !w || !ns || !cs || !hs || !ws) return CUDNN_STATUS_BAD_PARAM;
  *type = desc->type;
  *n = static_cast<int>(desc->n), *c = static_cast<int>(desc->c), *h = static_cast<int>(desc->h),
  *w = static_cast<int>(desc->w);
  *ns = static_cast<int>(desc->sn), *cs = static_cast<int>(desc->sc), *hs = static_cast<int>(desc->sh),
  *ws = static_cast<int>(desc->sw);
  return CUDNN_STATUS_SUCCESS;
}

// --- filter descriptors ---------------------------------------------------------------------

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  *desc = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  if (!desc || !known_data_type(type) || k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (format == CUDNN_TENSOR_NCHW_VECT_C) return CUDNN_STATUS_NOT_SUPPORTED;
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) return CUDNN_STATUS_BAD_PARAM;
  if (too_big(k, c, h, w)) return CUDNN_STATUS_NOT_SUPPORTED;
  *desc = cudnnFilterStruct{true, type, format, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t desc, cudnnDataType_t* type,
                                         cudnnTensorFormat_t* format, int* k, int* c, int* h, int* w) {
  if (!desc || !desc->set || !type || !format || !k || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  *type = desc->type, *format = desc->format;
  *k = static_cast<int>(desc->k), *c = static_cast<int>(desc->c), *h = static_cast<int>(desc->h),
  *w = static_cast<int>(desc->w);
  return CUDNN_STATUS_SUCCESS;
}

// --- convolution descriptors ----------------------------------------------------------------

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  *desc = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

// Keeps the group count and math type, which have their own setters.
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  if (!desc || pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dilation_h <= 0 || dilation_w <= 0 ||
      (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) || !known_data_type(compute))
    return CUDNN_STATUS_BAD_PARAM;
  desc->set = true;
  desc->pad_h = pad_h, desc->pad_w = pad_w, desc->u = u, desc->v = v;
  desc->dil_h = dilation_h, desc->dil_w = dilation_w;
  desc->mode = mode;
  desc->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t desc, int* pad_h, int* pad_w, int* u,
                                              int* v, int* dilation_h, int* dilation_w, cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  if (!desc || !pad_h || !pad_w || !u || !v || !dilation_h || !dilation_w || !mode || !compute)
    return CUDNN_STATUS_BAD_PARAM;
  *pad_h = desc->pad_h, *pad_w = desc->pad_w, *u = desc->u, *v = desc->v;
  *dilation_h = desc->dil_h, *dilation_w = desc->dil_w, *mode = desc->mode, *compute = desc->compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  if (!desc || groups <= 0) return CUDNN_STATUS_BAD_PARAM;
  desc->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int* groups) {
  if (!desc || !groups) return CUDNN_STATUS_BAD_PARAM;
  *groups = desc->groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  switch (math) {
    case CUDNN_DEFAULT_MATH:
    case CUDNN_TENSOR_OP_MATH:
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
    case CUDNN_FMA_MATH: desc->math = math; return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t* math) {
  if (!desc || !math) return CUDNN_STATUS_BAD_PARAM;
  *math = desc->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t cd,
                                                    const cudnnTensorDescriptor_t xd, const cudnnFilterDescriptor_t wd,
                                                    int* n, int* c, int* h, int* w) {
  if (!cd || !xd || !wd || !cd->set || !xd->set || !wd->set || !n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  if (xd->c != wd->c * cd->groups) return CUDNN_STATUS_BAD_PARAM;
  const int64_t oh = out_size(xd->h, cd->pad_h, wd->h, cd->dil_h, cd->u);
  const int64_t ow = out_size(xd->w, cd->pad_w, wd->w, cd->dil_w, cd->v);
  if ((wd->h - 1) * cd->dil_h + 1 > xd->h + 2 * cd->pad_h || (wd->w - 1) * cd->dil_w + 1 > xd->w + 2 * cd->pad_w)
    return CUDNN_STATUS_BAD_PARAM;
  *n = static_cast<int>(xd->n), *c = static_cast<int>(wd->k), *h = static_cast<int>(oh), *w = static_cast<int>(ow);
  return CUDNN_STATUS_SUCCESS;
}

// --- algorithm choice and workspaces --------------------------------------------------------

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  if (!handle || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = max_count(Dir::Forward);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  if (!handle || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = max_count(Dir::BackwardData);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  if (!handle || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = max_count(Dir::BackwardFilter);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t xd,
                                                     const cudnnFilterDescriptor_t wd,
                                                     const cudnnConvolutionDescriptor_t cd,
                                                     const cudnnTensorDescriptor_t yd, const int requested,
                                                     int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
  return heuristics<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(Dir::Forward, handle, xd, wd, cd, yd,
                                                                              requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t handle, const cudnnFilterDescriptor_t wd,
                                                          const cudnnTensorDescriptor_t dyd,
                                                          const cudnnConvolutionDescriptor_t cd,
                                                          const cudnnTensorDescriptor_t dxd, const int requested,
                                                          int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
  return heuristics<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      Dir::BackwardData, handle, dxd, wd, cd, dyd, requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnnHandle_t handle, const cudnnTensorDescriptor_t xd,
                                                            const cudnnTensorDescriptor_t dyd,
                                                            const cudnnConvolutionDescriptor_t cd,
                                                            const cudnnFilterDescriptor_t dwd, const int requested,
                                                            int* returned,
                                                            cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  return heuristics<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      Dir::BackwardFilter, handle, xd, dwd, cd, dyd, requested, returned, results);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xd,
                                                      const cudnnFilterDescriptor_t wd,
                                                      const cudnnConvolutionDescriptor_t cd,
                                                      const cudnnTensorDescriptor_t yd, cudnnConvolutionFwdAlgo_t algo,
                                                      size_t* bytes) {
  return workspace_size(Dir::Forward, handle, xd, wd, cd, yd, algo, bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t handle, const cudnnFilterDescriptor_t wd,
                                                           const cudnnTensorDescriptor_t dyd,
                                                           const cudnnConvolutionDescriptor_t cd,
                                                           const cudnnTensorDescriptor_t dxd,
                                                           cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
  return workspace_size(Dir::BackwardData, handle, dxd, wd, cd, dyd, algo, bytes);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t handle, const cudnnTensorDescriptor_t xd,
                                                             const cudnnTensorDescriptor_t dyd,
                                                             const cudnnConvolutionDescriptor_t cd,
                                                             const cudnnFilterDescriptor_t dwd,
                                                             cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
  return workspace_size(Dir::BackwardFilter, handle, xd, dwd, cd, dyd, algo, bytes);
}

// --- the convolutions -----------------------------------------------------------------------

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xd,
                                      const void* x, const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t algo,
                                      void* workspace, size_t workspace_bytes, const void* beta,
                                      const cudnnTensorDescriptor_t yd, void* y) {
  return convolve("cudnnConvolutionForward", Dir::Forward, handle, alpha, xd, wd, cd, yd, algo, workspace,
                  workspace_bytes, beta, x, w, y);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wd,
                                           const void* w, const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const cudnnConvolutionDescriptor_t cd, cudnnConvolutionBwdDataAlgo_t algo,
                                           void* workspace, size_t workspace_bytes, const void* beta,
                                           const cudnnTensorDescriptor_t dxd, void* dx) {
  return convolve("cudnnConvolutionBackwardData", Dir::BackwardData, handle, alpha, dxd, wd, cd, dyd, algo, workspace,
                  workspace_bytes, beta, dx, w, dy);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xd,
                                             const void* x, const cudnnTensorDescriptor_t dyd, const void* dy,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workspace,
                                             size_t workspace_bytes, const void* beta,
                                             const cudnnFilterDescriptor_t dwd, void* dw) {
  return convolve("cudnnConvolutionBackwardFilter", Dir::BackwardFilter, handle, alpha, xd, dwd, cd, dyd, algo,
                  workspace, workspace_bytes, beta, x, dw, dy);
}

}  // extern "C"
