// Batched matrix product (the gemm slot) on the CPU through Eigen.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

// GCC 12 reports false maybe-uninitialized warnings inside Eigen's AVX-512 packing code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"

namespace wick::cpu {

namespace {

template <class T, int Order>
using MatrixMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, Eigen::Unaligned,
                             Eigen::OuterStride<>>;
template <class T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Row-major when the last dim has unit stride, else column-major (the contract guarantees one).
bool row_major(const Tensor& m) { return m.stride(2) == 1; }

// The leading dimension Eigen needs; a dim of size 1 may carry any stride, so it is not trusted.
int64_t leading_dim(const Tensor& m) {
  int64_t rows = m.size(1), cols = m.size(2);
  return row_major(m) ? std::max(m.stride(1), cols) : std::max(m.stride(2), rows);
}

// out[i] = alpha * a[i] @ b[i] + beta * out[i] for float and double. Small matrices are
// spread over threads one per matrix, with Eigen single-threaded inside (it starts no threads
// within a parallel region); large ones run one after another on Eigen's threads.
template <class T, int OrderA, int OrderB>
void gemm_typed(const Tensor& out, const Tensor& a, const Tensor& b, T alpha, T beta) {
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  const int64_t sa = a.size(0) == 1 ? 0 : a.stride(0), sb = b.size(0) == 1 ? 0 : b.stride(0);
  const int64_t lda = leading_dim(a), ldb = leading_dim(b);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(out.data_ptr());
  auto one = [&](int64_t i) {
    MatrixMap<T, OrderA> A(pa + i * sa, M, K, Eigen::OuterStride<>(lda));
    MatrixMap<T, OrderB> B(pb + i * sb, K, N, Eigen::OuterStride<>(ldb));
    OutMap<T> C(pc + i * M * N, M, N);
    if (beta == T(0)) {
      C.noalias() = alpha * (A * B);
    } else {
      if (beta != T(1)) C *= beta;
      C.noalias() += alpha * (A * B);
    }
  };
  // Below about kWorkPerThread multiply-adds a thread costs more than it saves; from about
  // kEigenWork on, Eigen's own threads inside one product use every core.
  constexpr int64_t kWorkPerThread = int64_t{1} << 17, kEigenWork = int64_t{1} << 21;
  const int64_t work = std::max<int64_t>(M * N * std::max<int64_t>(K, 1), 1);
  if (work >= kEigenWork) {
    for (int64_t i = 0; i < batch; ++i) one(i);
    return;
  }
  parallel_for(0, batch, (kWorkPerThread + work - 1) / work, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) one(i);
  });
}

template <class T>
void gemm_dispatch(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  if (row_major(a)) {
    if (row_major(b)) gemm_typed<T, R, R>(out, a, b, al, be);
    else gemm_typed<T, R, C>(out, a, b, al, be);
  } else {
    if (row_major(b)) gemm_typed<T, C, R>(out, a, b, al, be);
    else gemm_typed<T, C, C>(out, a, b, al, be);
  }
}

// A 16-bit operand as float32; a broadcast batch (stride 0) is converted once, not per batch.
Tensor as_float(const Tensor& m) {
  const Tensor one = m.size(0) > 1 && m.stride(0) == 0 ? m.narrow(0, 0, 1) : m;
  return one.to(DType::Float32);
}

// out[i] = alpha * a[i] @ b[i] + beta * out[i]; writes out (reads it only when beta != 0).
// 16-bit floats are multiplied in float32 and rounded once at the end.
void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  if (out.numel() == 0) return;
  switch (out.dtype()) {
    case DType::Float32: return gemm_dispatch<float>(out, a, b, alpha, beta);
    case DType::Float64: return gemm_dispatch<double>(out, a, b, alpha, beta);
    case DType::Float16:
    case DType::BFloat16: {
      Tensor out32 = beta == 0.0 ? empty(out.shape(), DType::Float32) : out.to(DType::Float32);
      gemm_dispatch<float>(out32, as_float(a), as_float(b), alpha, beta);
      Tensor(out).copy_(out32);
      return;
    }
    default: throw_unsupported_dtype("gemm", Device::cpu(), out.dtype());
  }
}

}  // namespace

void register_matmul(KernelTable& t) { t.gemm = &gemm; }

}  // namespace wick::cpu
