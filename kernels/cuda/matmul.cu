// Batched matrix product (the gemm slot) on CUDA through cuBLAS:
// out[b] = alpha * a[b] @ b[b] + beta * out[b] (=, or += scaled by beta when beta != 0).
//
// cuBLAS is column-major and out is row-major, so it computes out^T = b^T a^T: a row-major
// matrix with leading dimension ld *is* its transpose in column-major order, a column-major
// one is passed with CUBLAS_OP_T, and no operand is ever copied. A broadcast batch is a batch
// stride of 0. float32 uses TF32 tensor cores only when cuda::allow_tf32() is on; float16 and
// bfloat16 multiply with float accumulation (CUBLAS_COMPUTE_32F), and cuBLAS may add split-K
// partial products in 16 bits unless cuda::allow_reduced_precision_reduction() is off (on by
// default, as in PyTorch); float64 in double.
//
// One product (batch 1) goes through cublasGemmEx, a batch through
// cublasGemmStridedBatchedEx, and the 64-bit entry point only where a size or stride passes
// 32 bits (cuda::KernelTuning::gemm_api forces one of them, for benchmarks): cuBLAS picks
// its kernels per entry point, and the batched ones were 17-19% slower for one 4096^3
// product on an H200 (bench/README.md).
//
// Handles: one per (thread, device), made on first use and bound to the thread's current
// stream on every call, with a workspace per stream taken from the caching allocator (a
// workspace must not be shared by two streams that may run at the same time). Workspaces are
// keyed by cuda::Stream::id (a destroyed stream's handle is reused by the next stream made),
// and those of destroyed streams are freed on the next call (their blocks stay with the dead
// stream in the allocator, so no other stream reuses them while its last work may still run).
#include <cublas_v2.h>

#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"

namespace wick::cuda_kernels {

namespace {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    detail::throw_error("gemm: cuBLAS error ", cublasGetStatusString(status), " (", call, ")");
}
#define WICK_CUBLAS_CHECK(expr) check_cublas((expr), #expr)

struct DeviceHandle {
  cublasHandle_t handle = nullptr;
  std::vector<std::pair<uint64_t, Tensor>> workspaces;  // by stream id
};

// This thread's handles, destroyed when the thread ends (before the CUDA runtime shuts down,
// for the main thread too: thread-local objects go first).
struct ThreadHandles {
  std::vector<DeviceHandle> per_device;
  ~ThreadHandles() {
    for (size_t d = 0; d < per_device.size(); ++d) {
      if (!per_device[d].handle) continue;
      per_device[d].workspaces.clear();
      if (cudaSetDevice(static_cast<int>(d)) == cudaSuccess) (void)cublasDestroy(per_device[d].handle);
    }
  }
};
thread_local ThreadHandles t_handles;

// cuBLAS's recommendation: 32 MiB on Hopper and later, 4 MiB before.
size_t workspace_bytes(int device) {
  int major = 0;
  WICK_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9 ? (size_t{32} << 20) : (size_t{4} << 20);
}

// The handle for `device` (current), bound to this thread's current stream and its workspace.
cublasHandle_t handle_for(int device) {
  auto& all = t_handles.per_device;
  if (all.size() <= static_cast<size_t>(device)) all.resize(static_cast<size_t>(device) + 1);
  DeviceHandle& h = all[static_cast<size_t>(device)];
  if (!h.handle) WICK_CUBLAS_CHECK(cublasCreate(&h.handle));
  // The setting may change between calls; the math mode is a field of the handle (cheap).
  WICK_CUBLAS_CHECK(cublasSetMathMode(
      h.handle, cuda::allow_reduced_precision_reduction()
                    ? CUBLAS_DEFAULT_MATH
                    : static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  const cudaStream_t stream = stream_for(device);
  const uint64_t stream_id = stream_id_for(device);
  // cublasSetStream resets the workspace to cuBLAS's own, so ours is set again after it.
  WICK_CUBLAS_CHECK(cublasSetStream(h.handle, stream));
  h.workspaces.erase(std::remove_if(h.workspaces.begin(), h.workspaces.end(),
                                    [](const auto& w) { return !stream_alive(w.first); }),
                     h.workspaces.end());
  auto it = std::find_if(h.workspaces.begin(), h.workspaces.end(), [&](const auto& w) { return w.first == stream_id; });
  if (it == h.workspaces.end()) {
    const size_t bytes = workspace_bytes(device);
    h.workspaces.emplace_back(stream_id,
                              empty({static_cast<int64_t>(bytes)}, Options(DType::UInt8, Device::cuda(device))));
    it = h.workspaces.end() - 1;
  }
  WICK_CUBLAS_CHECK(cublasSetWorkspace(h.handle, it->second.data_ptr(), static_cast<size_t>(it->second.numel())));
  return h.handle;
}

// How cuBLAS sees the transpose of a [rows, cols] matrix with strides (sr, sc): row-major
// storage as is (OP_N, ld = sr), column-major storage transposed (OP_T, ld = sc). A dim of
// size 1 may carry any stride, so its stride is not trusted for the leading dimension.
struct CublasOperand {
  cublasOperation_t op;
  int64_t ld;
};

CublasOperand transposed_operand(const Tensor& m, const Tensor& out, const char* which) {
  const int64_t rows = m.size(1), cols = m.size(2), sr = m.stride(1), sc = m.stride(2);
  if ((sc == 1 || cols == 1) && (rows == 1 || sr >= cols)) return {CUBLAS_OP_N, rows == 1 ? std::max<int64_t>(cols, 1) : sr};
  if ((sr == 1 || rows == 1) && (cols == 1 || sc >= rows)) return {CUBLAS_OP_T, cols == 1 ? std::max<int64_t>(rows, 1) : sc};
  detail::throw_error("gemm: operand ", which, " of shape ", shape_str(m.shape()), " with strides ", shape_str(m.strides()),
                      " is neither row- nor column-major (output ", shape_str(out.shape()), ")");
}

// out = beta * out, or 0 when beta == 0 (out is not read then): the product of an empty K.
template <class T>
__global__ void scale_kernel(T* out, int64_t n, float beta) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = beta == 0.0f ? T(0.0f) : T(static_cast<float>(out[i]) * beta);
}

__global__ void scale_kernel_f64(double* out, int64_t n, double beta) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = beta == 0.0 ? 0.0 : out[i] * beta;
}

void scale_output(const Tensor& out, double beta, cudaStream_t stream) {
  const int64_t n = out.numel();
  void* p = out.data_ptr();
  switch (out.dtype()) {
    case DType::Float64: launch_kernel("scale_kernel_f64", &scale_kernel_f64, blocks_for(n), 256, 0, stream, static_cast<double*>(p), n, beta); break;
    case DType::Float32: launch_kernel("scale_kernel", &scale_kernel<float>, blocks_for(n), 256, 0, stream, static_cast<float*>(p), n, static_cast<float>(beta)); break;
    case DType::Float16: launch_kernel("scale_kernel", &scale_kernel<Half>, blocks_for(n), 256, 0, stream, static_cast<Half*>(p), n, static_cast<float>(beta)); break;
    case DType::BFloat16:
      launch_kernel("scale_kernel", &scale_kernel<BFloat16>, blocks_for(n), 256, 0, stream, static_cast<BFloat16*>(p), n, static_cast<float>(beta));
      break;
    default: throw_unsupported_dtype("gemm", out.device(), out.dtype());
  }
  WICK_CUDA_CHECK_LAUNCH("gemm");
}

void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  if (out.numel() == 0) return;
  WICK_CHECK(a.dtype() == out.dtype() && b.dtype() == out.dtype(), "gemm: dtypes ", dtype_name(a.dtype()), ", ",
             dtype_name(b.dtype()), " and ", dtype_name(out.dtype()), " differ");
  cudaDataType_t type;
  cublasComputeType_t compute;
  switch (out.dtype()) {
    case DType::Float32:
      type = CUDA_R_32F;
      compute = cuda::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case DType::Float64: type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F; break;
    case DType::Float16: type = CUDA_R_16F; compute = CUBLAS_COMPUTE_32F; break;
    case DType::BFloat16: type = CUDA_R_16BF; compute = CUBLAS_COMPUTE_32F; break;
    default: throw_unsupported_dtype("gemm", out.device(), out.dtype());
  }
  const int device = out.device().index;
  TensorDeviceGuard guard(device);
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  if (K == 0) return scale_output(out, beta, stream_for(device));

  const CublasOperand opa = transposed_operand(a, out, "a"), opb = transposed_operand(b, out, "b");
  const int64_t stride_a = a.size(0) == 1 ? 0 : a.stride(0), stride_b = b.size(0) == 1 ? 0 : b.stride(0);
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* alpha_p = type == CUDA_R_64F ? static_cast<const void*>(&alpha) : static_cast<const void*>(&alpha_f);
  const void* beta_p = type == CUDA_R_64F ? static_cast<const void*>(&beta) : static_cast<const void*>(&beta_f);
  cublasHandle_t handle = handle_for(device);
  // Column-major: out^T [N, M] (ld N) = op(b^T) [N, K] @ op(a^T) [K, M].
  constexpr int64_t k32 = int64_t{1} << 31;
  const bool fits_32bit = std::max({M, N, K, opa.ld, opb.ld, stride_a, stride_b, M * N, batch}) < k32;
  cuda::GemmApi api = cuda::kernel_tuning().gemm_api;
  if (!fits_32bit) api = cuda::GemmApi::StridedBatched64;
  else if (api == cuda::GemmApi::Auto && batch > 1) api = cuda::GemmApi::StridedBatched;
  const auto i32 = [](int64_t v) { return static_cast<int>(v); };
  switch (api) {
    case cuda::GemmApi::Auto:
      WICK_CUBLAS_CHECK(cublasGemmEx(handle, opb.op, opa.op, i32(N), i32(M), i32(K), alpha_p, b.data_ptr(), type,
                                     i32(opb.ld), a.data_ptr(), type, i32(opa.ld), beta_p, out.data_ptr(), type, i32(N),
                                     compute, CUBLAS_GEMM_DEFAULT));
      break;
    case cuda::GemmApi::StridedBatched:
      WICK_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, opb.op, opa.op, i32(N), i32(M), i32(K), alpha_p,
                                                   b.data_ptr(), type, i32(opb.ld), stride_b, a.data_ptr(), type,
                                                   i32(opa.ld), stride_a, beta_p, out.data_ptr(), type, i32(N), M * N,
                                                   i32(batch), compute, CUBLAS_GEMM_DEFAULT));
      break;
    case cuda::GemmApi::StridedBatched64:
      WICK_CUBLAS_CHECK(cublasGemmStridedBatchedEx_64(handle, opb.op, opa.op, N, M, K, alpha_p, b.data_ptr(), type,
                                                      opb.ld, stride_b, a.data_ptr(), type, opa.ld, stride_a, beta_p,
                                                      out.data_ptr(), type, N, M * N, batch, compute,
                                                      CUBLAS_GEMM_DEFAULT));
      break;
  }
}

}  // namespace

void register_matmul(KernelTable& t) { t.gemm = &gemm; }

}  // namespace wick::cuda_kernels
