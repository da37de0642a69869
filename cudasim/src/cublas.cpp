// cuBLAS on the CPU: handles, streams, workspaces, math modes and the GEMM family that wick
// uses (cublasGemmEx, cublasGemmStridedBatchedEx and their _64 forms), with cuBLAS's
// documented argument checks and numerics.
//
// Model:
// - A handle belongs to the device current at cublasCreate and must be used while that device
//   is current, on a stream of that device (cuBLAS documents both; a GPU fails the launch
//   otherwise): a mismatch returns CUBLAS_STATUS_EXECUTION_FAILED and records
//   cudaErrorInvalidResourceHandle, as a failed kernel launch inside cuBLAS would.
// - The GEMM runs asynchronously on the handle's stream. The matrices and the user workspace
//   are checked there, when the "kernel" runs: memory the device may not touch is an illegal
//   address, a sticky error of the device, as on a GPU.
// - Numerics: products accumulate in the compute type (double for 64F, float for 32F, half
//   for 16F), summing over k in order. Fast compute types and math modes round the inputs
//   first: TF32 (10 mantissa bits), half or bfloat16, all round-to-nearest-even.
//   CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION changes nothing: k is never split.
// - alpha and beta are host scalars (the default pointer mode; cublasSetPointerMode is not
//   offered), read at the call. beta == 0 means C is not read; alpha == 0 or k == 0 means A
//   and B are not read (C = beta * C), as the reference BLAS specifies.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "float_formats.h"
#include "internal.h"

struct cublasContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;  // the user's (cublasSetWorkspace); nullptr: cuBLAS's own pool
  size_t workspace_bytes = 0;
};

namespace {

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

// How inputs are down-converted before the products (the fast compute types).
enum class Rounding { None, TF32, Half, BF16 };

float apply(Rounding r, float v) {
  switch (r) {
    case Rounding::None: return v;
    case Rounding::TF32: return round_tf32(v);
    case Rounding::Half: return half_to_float(float_to_half(v));
    case Rounding::BF16: return bf16_to_float(float_to_bf16(v));
  }
  return v;
}

// The element format of a matrix type (a plan accepts only these four).
ElementFormat format_of(cudaDataType t) {
  switch (t) {
    case CUDA_R_64F: return ElementFormat::Float64;
    case CUDA_R_32F: return ElementFormat::Float32;
    case CUDA_R_16F: return ElementFormat::Half;
    default: return ElementFormat::BFloat16;
  }
}

// --- argument checks ------------------------------------------------------------------------

bool known_type(int t) { return t >= CUDA_R_32F && t <= CUDA_R_4F_E2M1; }

bool known_compute(int c) {
  switch (c) {
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: case CUBLAS_COMPUTE_32F_FAST_16F: case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32: case CUBLAS_COMPUTE_32F_EMULATED_16BFX9: case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC: case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
      return true;
    default: return false;
  }
}

bool known_algo(int a) {
  return a == CUBLAS_GEMM_DEFAULT || (a >= CUBLAS_GEMM_ALGO0 && a <= CUBLAS_GEMM_ALGO23) ||
         (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP) || a == CUBLAS_GEMM_AUTOTUNE;
}

bool known_op(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

bool known_math(int mode) {
  switch (mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) {
    case CUBLAS_DEFAULT_MATH: case CUBLAS_TENSOR_OP_MATH: case CUBLAS_PEDANTIC_MATH: case CUBLAS_TF32_TENSOR_OP_MATH:
    case CUBLAS_FP32_EMULATED_BF16X9_MATH: case CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH:
      return true;
    default: return false;
  }
}

enum class Accumulator { Double, Float, Half };

// What a (compute type, A/B/C types, math mode) combination computes.
struct Plan {
  Accumulator acc = Accumulator::Float;
  Rounding rounding = Rounding::None;
};

// The rows of cublasGemmEx's table of supported combinations that the simulator computes.
// The integer (8I/32I) and complex rows are real cuBLAS combinations the simulator does not
// implement: they answer CUBLAS_STATUS_NOT_SUPPORTED like any combination outside the table.
bool make_plan(cublasComputeType_t compute, cudaDataType a, cudaDataType b, cudaDataType c, cublasMath_t math,
               Plan* plan) {
  const bool all32 = a == CUDA_R_32F && b == CUDA_R_32F && c == CUDA_R_32F;
  switch (compute) {
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      plan->acc = Accumulator::Double;
      return a == CUDA_R_64F && b == CUDA_R_64F && c == CUDA_R_64F;
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      plan->acc = Accumulator::Half;
      return a == CUDA_R_16F && b == CUDA_R_16F && c == CUDA_R_16F;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: {
      plan->acc = Accumulator::Float;
      if (all32) {
        // The handle's math mode applies to the default (not the pedantic) compute type.
        const int mode = math & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
        if (compute == CUBLAS_COMPUTE_32F && mode == CUBLAS_TF32_TENSOR_OP_MATH) plan->rounding = Rounding::TF32;
        // Deprecated CUBLAS_TENSOR_OP_MATH: documented as CUBLAS_COMPUTE_32F_FAST_16F.
        if (compute == CUBLAS_COMPUTE_32F && mode == CUBLAS_TENSOR_OP_MATH) plan->rounding = Rounding::Half;
        return true;
      }
      const bool half_in = a == CUDA_R_16F && b == CUDA_R_16F, bf16_in = a == CUDA_R_16BF && b == CUDA_R_16BF;
      return (half_in && (c == CUDA_R_16F || c == CUDA_R_32F)) || (bf16_in && (c == CUDA_R_16BF || c == CUDA_R_32F));
    }
    case CUBLAS_COMPUTE_32F_FAST_TF32: plan->rounding = Rounding::TF32; return all32;
    case CUBLAS_COMPUTE_32F_FAST_16F: plan->rounding = Rounding::Half; return all32;
    case CUBLAS_COMPUTE_32F_FAST_16BF: plan->rounding = Rounding::BF16; return all32;
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9: return all32;  // emulates full float accuracy
    default: return false;                                     // 32I: not simulated
  }
}

// --- the computation ------------------------------------------------------------------------

// One stored matrix operand: rows x cols column-major with leading dimension ld, batch stride
// `stride` (elements; 0 broadcasts one matrix to every batch, negative is allowed).
struct Operand {
  const char* name;
  const void* data;
  cudaDataType type;
  int64_t rows, cols, ld;
  long long stride;
};

struct Gemm {
  std::string call;
  int device;
  cublasOperation_t ta, tb;
  int64_t m, n, k, batch;
  Operand a, b, c;
  Plan plan;
  double alpha, beta;  // exact copies of the scalars of the compute type
  void* workspace;
  size_t workspace_bytes;
};

// Throws the illegal address a GPU would report when `o`'s batches reach memory the device
// may not touch.
void check_operand(const Gemm& g, const Operand& o) {
  if (o.rows == 0 || o.cols == 0 || g.batch == 0) return;
  const __int128 es = static_cast<__int128>(element_bytes(format_of(o.type)));
  const __int128 span = static_cast<__int128>(o.cols - 1) * o.ld + o.rows;
  const __int128 last = static_cast<__int128>(g.batch - 1) * o.stride;
  const __int128 lo = std::min<__int128>(0, last) * es, hi = (std::max<__int128>(0, last) + span) * es;
  const auto first = reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(o.data) + static_cast<intptr_t>(lo));
  const __int128 bytes = hi - lo;
  std::string why;
  if (bytes > static_cast<__int128>(SIZE_MAX) / 2 ||
      !cudasim::device_can_access(g.device, first, static_cast<size_t>(bytes), &why)) {
    if (why.empty()) why = "the range does not fit in the address space";
    throw cudasim::AsyncError(cudaErrorIllegalAddress,
                              g.call + ": matrix " + o.name + " (" + std::to_string(static_cast<long long>(bytes)) +
                                  " bytes at " + cudasim::pointer_text(first) + ") is not accessible from cuda:" +
                                  std::to_string(g.device) + ": " + why);
  }
}

// acc (m x n, ld m) = op(A) @ op(B), where op(A) is m x k with element (i, p) at a[i + p * lda]
// and op(B)(p, j) is b[p * bp + j * bj]. Four columns at a time over row blocks that keep
// their accumulators in L1; each element sums over p in order.
template <class T>
void multiply(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t bp, int64_t bj, T* acc) {
  constexpr int64_t kRows = 256;
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    const int64_t rows = std::min(kRows, m - i0);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      T* __restrict c0 = acc + i0 + j * m;
      T* __restrict c1 = c0 + m;
      T* __restrict c2 = c1 + m;
      T* __restrict c3 = c2 + m;
      std::fill(c0, c0 + rows, T(0));
      std::fill(c1, c1 + rows, T(0));
      std::fill(c2, c2 + rows, T(0));
      std::fill(c3, c3 + rows, T(0));
      for (int64_t p = 0; p < k; ++p) {
        const T* __restrict ap = a + i0 + p * lda;
        const T b0 = b[p * bp + j * bj], b1 = b[p * bp + (j + 1) * bj];
        const T b2 = b[p * bp + (j + 2) * bj], b3 = b[p * bp + (j + 3) * bj];
        for (int64_t i = 0; i < rows; ++i) {
          const T v = ap[i];
          c0[i] += v * b0;
          c1[i] += v * b1;
          c2[i] += v * b2;
          c3[i] += v * b3;
        }
      }
    }
    for (; j < n; ++j) {
      T* __restrict c0 = acc + i0 + j * m;
      std::fill(c0, c0 + rows, T(0));
      for (int64_t p = 0; p < k; ++p) {
        const T* __restrict ap = a + i0 + p * lda;
        const T b0 = b[p * bp + j * bj];
        for (int64_t i = 0; i < rows; ++i) c0[i] += ap[i] * b0;
      }
    }
  }
}

// CUBLAS_COMPUTE_16F: the running sum is a half, rounded after every step.
void multiply_half_acc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t bp,
                       int64_t bj, float* acc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s = half_to_float(float_to_half(s + a[i + p * lda] * b[p * bp + j * bj]));
      acc[i + j * m] = s;
    }
}

// op(X) as a contiguous column-major matrix of T: rows_out x cols_out where op(X)(r, c) is
// x[r + c * ld] untransposed and x[c + r * ld] transposed; inputs rounded as the plan says.
template <class T>
void pack(const Operand& o, const char* base, bool transposed, int64_t rows_out, int64_t cols_out, Rounding r,
          std::vector<T>& out) {
  out.resize(static_cast<size_t>(rows_out * cols_out));
  T* dst = out.data();
  auto get = [&](int64_t idx) {
    const T v = load_element<T>(base, format_of(o.type), idx);
    if constexpr (std::is_same_v<T, float>) return apply(r, v);
    return v;
  };
  if (!transposed) {
    for (int64_t c = 0; c < cols_out; ++c)
      for (int64_t i = 0; i < rows_out; ++i) dst[i + c * rows_out] = get(i + c * o.ld);
  } else {
    for (int64_t i = 0; i < rows_out; ++i)  // reads follow the stored columns
      for (int64_t c = 0; c < cols_out; ++c) dst[i + c * rows_out] = get(c + i * o.ld);
  }
}

const char* batch_base(const Operand& o, int64_t batch_index) {
  return static_cast<const char*>(o.data) +
         static_cast<intptr_t>(batch_index * o.stride * static_cast<long long>(element_bytes(format_of(o.type))));
}

template <class T>
void run(const Gemm& g) {
  const bool reads_ab = g.alpha != 0.0 && g.k > 0;
  if (reads_ab) {
    check_operand(g, g.a);
    check_operand(g, g.b);
  }
  check_operand(g, g.c);
  if (g.workspace && g.workspace_bytes > 0) {
    std::string why;
    if (!cudasim::device_can_access(g.device, g.workspace, g.workspace_bytes, &why))
      throw cudasim::AsyncError(cudaErrorIllegalAddress, g.call + ": the workspace set by cublasSetWorkspace (" +
                                                             std::to_string(g.workspace_bytes) + " bytes at " +
                                                             cudasim::pointer_text(g.workspace) +
                                                             ") is not accessible from cuda:" +
                                                             std::to_string(g.device) + ": " + why);
  }
  const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
  const Rounding r = g.plan.rounding;
  // The worker thread keeps its buffers: whole training runs make many calls of one shape.
  thread_local std::vector<T> apack, bpack, acc;
  acc.resize(static_cast<size_t>(g.m * g.n));
  const bool a_direct = g.ta == CUBLAS_OP_N && g.a.type == (sizeof(T) == 8 ? CUDA_R_64F : CUDA_R_32F) &&
                        r == Rounding::None && g.plan.acc != Accumulator::Half;
  const bool b_direct = g.b.type == (sizeof(T) == 8 ? CUDA_R_64F : CUDA_R_32F) && r == Rounding::None;
  for (int64_t bi = 0; bi < g.batch; ++bi) {
    char* cbase = const_cast<char*>(batch_base(g.c, bi));
    if (reads_ab) {
      const char* abase = batch_base(g.a, bi);
      const char* bbase = batch_base(g.b, bi);
      const T* a = reinterpret_cast<const T*>(abase);
      int64_t lda = g.a.ld;
      if (!a_direct) {
        if (bi == 0 || g.a.stride != 0) pack(g.a, abase, g.ta != CUBLAS_OP_N, g.m, g.k, r, apack);
        a = apack.data();
        lda = g.m;
      }
      const T* b = reinterpret_cast<const T*>(bbase);
      int64_t bp = g.tb == CUBLAS_OP_N ? 1 : g.b.ld, bj = g.tb == CUBLAS_OP_N ? g.b.ld : 1;
      if (!b_direct) {
        if (bi == 0 || g.b.stride != 0) pack(g.b, bbase, g.tb != CUBLAS_OP_N, g.k, g.n, r, bpack);
        b = bpack.data();
        bp = 1;
        bj = g.k;
      }
      if constexpr (std::is_same_v<T, float>) {
        if (g.plan.acc == Accumulator::Half) {
          multiply_half_acc(g.m, g.n, g.k, a, lda, b, bp, bj, acc.data());
        } else {
          multiply(g.m, g.n, g.k, a, lda, b, bp, bj, acc.data());
        }
      } else {
        multiply(g.m, g.n, g.k, a, lda, b, bp, bj, acc.data());
      }
    }
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        const int64_t ci = i + j * g.c.ld;
        T v = reads_ab ? alpha * acc[static_cast<size_t>(i + j * g.m)] : T(0);
        if (g.beta != 0.0) v += beta * load_element<T>(cbase, format_of(g.c.type), ci);  // beta == 0: C is not read
        store_element<T>(cbase, format_of(g.c.type), ci, v);
      }
  }
}

double read_scalar(const void* p, Accumulator acc) {
  switch (acc) {
    case Accumulator::Double: return *static_cast<const double*>(p);
    case Accumulator::Float: return *static_cast<const float*>(p);
    case Accumulator::Half: return half_to_float(*static_cast<const uint16_t*>(p));
  }
  return 0.0;
}

// Everything a GEMM entry point does: checks in cuBLAS's order, then the asynchronous work.
cublasStatus_t gemm(const char* call, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                    int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType at, int64_t lda,
                    long long sa, const void* B, cudaDataType bt, int64_t ldb, long long sb, const void* beta, void* C,
                    cudaDataType ct, int64_t ldc, long long sc, int64_t batch, cublasComputeType_t compute,
                    cublasGemmAlgo_t algo) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!known_op(ta) || !known_op(tb) || m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  // Stored shapes: A is m x k (N) or k x m (T, C); B is k x n or n x k; C is m x n.
  const int64_t a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
  if (lda < std::max<int64_t>(1, a_rows) || ldb < std::max<int64_t>(1, b_rows) || ldc < std::max<int64_t>(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!known_type(at) || !known_type(bt) || !known_type(ct) || !known_compute(compute) || !known_algo(algo))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  Plan plan;
  if (!make_plan(compute, at, bt, ct, h->math, &plan)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;  // nothing to launch

  // The launch: on the handle's device, into the handle's stream.
  cudasim::Stream* stream = cudasim::handle_launch_stream(call, "cuBLAS", "cublasSetStream", h->device, h->stream);
  if (!stream) return CUBLAS_STATUS_EXECUTION_FAILED;

  Gemm g{call, h->device, ta, tb, m, n, k, batch,
         Operand{"A", A, at, a_rows, ta == CUBLAS_OP_N ? k : m, lda, sa},
         Operand{"B", B, bt, b_rows, tb == CUBLAS_OP_N ? n : k, ldb, sb},
         Operand{"C", C, ct, m, n, ldc, sc},
         plan, read_scalar(alpha, plan.acc), read_scalar(beta, plan.acc), h->workspace, h->workspace_bytes};
  cudasim::enqueue(stream, call, [g = std::move(g)] {
    if (g.plan.acc == Accumulator::Double) {
      run<double>(g);
    } else {
      run<float>(g);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  // A device whose context is broken cannot initialize the library.
  if (cudasim::sticky_error(cudasim::current_device()) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new cublasContext;
  h->device = cudasim::current_device();
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

// Documented to synchronize the device: work the handle launched is finished afterwards.
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  cudasim::synchronize_handle_device(handle->device);
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

// Documented: setting a stream resets the workspace to cuBLAS's default pool, so a workspace
// set for one stream is never used by work on another.
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

// The workspace must be device memory of the handle's device, aligned to 256 bytes, and hold
// `bytes`; nullptr with 0 bytes means no workspace.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (workspace || bytes) {
    if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
    const cudasim::PointerInfo info = cudasim::find_pointer(workspace);
    if (info.region != cudasim::Region::Device || info.device != handle->device) return CUBLAS_STATUS_INVALID_VALUE;
    if (static_cast<size_t>(static_cast<const char*>(workspace) - info.base) + bytes > info.size)
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->workspace = workspace;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!known_math(mode)) return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
  }
  return "unknown error";
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C,
              Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                               int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType Atype,
                               int64_t lda, const void* B, cudaDataType Btype, int64_t ldb, const void* beta, void* C,
                               cudaDataType Ctype, int64_t ldc, cublasComputeType_t computeType,
                               cublasGemmAlgo_t algo) {
  return gemm("cublasGemmEx_64", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C,
              Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype,
              ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int64_t m, int64_t n, int64_t k,
                                             const void* alpha, const void* A, cudaDataType Atype, int64_t lda,
                                             long long int strideA, const void* B, cudaDataType Btype, int64_t ldb,
                                             long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                             int64_t ldc, long long int strideC, int64_t batchCount,
                                             cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return gemm("cublasGemmStridedBatchedEx_64", handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,
              Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}

}  // extern "C"
