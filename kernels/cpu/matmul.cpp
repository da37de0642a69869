// Batched matrix product (the gemm slot) on the CPU: floats through Eigen (serial_gemm.h),
// integers by a loop.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/serial_gemm.h"

namespace wick::cpu {

namespace {

// Row-major when the last dim has unit stride, else column-major (the contract guarantees one).
bool row_major(const Tensor& m) { return m.stride(2) == 1; }

// The leading dimension Eigen needs; a dim of size 1 may carry any stride, so it is not trusted.
int64_t leading_dim(const Tensor& m) {
  int64_t rows = m.size(1), cols = m.size(2);
  return row_major(m) ? std::max(m.stride(1), cols) : std::max(m.stride(2), rows);
}

// Multiply-adds below which a thread costs more than it saves (a fork and join of the
// OpenMP team is a few microseconds; 2^18 multiply-adds take about as long on one core).
constexpr int64_t kWorkPerThread = int64_t{1} << 18;

// out[i] = alpha * a[i] @ b[i] + beta * out[i] for float and double. With more matrices
// than threads each thread takes whole matrices; otherwise each product is cut into one
// block of rows of out per thread (of columns when there are too few rows to go round).
// Every block is a serial Eigen product (serial_gemm.h), so there is one fork and join per
// call and no waiting inside.
//
// The blocks give the same bits as the whole product, so results do not depend on the
// number of threads. Eigen sums over k in panels whose size depends on k alone, but which
// of its register kernels computes an element (3, 2 or 1 packets of rows of its column-
// major problem, whose rows are out's columns) depends on the element's place among the
// rows of the block it is given: a column block starting elsewhere than at a multiple of
// that kernel's height (gebp_traits::mr) moves columns from the 3-packet kernel to the
// smaller ones, which add their products in another order (found by
// ThreadCountTraining.OneMlpStepGivesTheSameBitsWithOneAndTwoThreads: 1947 of 32768
// values of the MNIST MLP's first layer differed between 1 and 2 threads). So row blocks
// are multiples of 16 rows and column blocks multiples of mr columns.
template <class T, int OrderA, int OrderB>
void gemm_typed(const Tensor& out, const Tensor& a, const Tensor& b, T alpha, T beta) {
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  const int64_t sa = a.size(0) == 1 ? 0 : a.stride(0), sb = b.size(0) == 1 ? 0 : b.stride(0);
  const int64_t lda = leading_dim(a), ldb = leading_dim(b);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(out.data_ptr());
  // Rows [r0, r1) and columns [c0, c1) of product i.
  auto block = [&](int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    T* c = pc + i * M * N;
    if (beta == T(0)) {
      for (int64_t r = r0; r < r1; ++r) std::fill(c + r * N + c0, c + r * N + c1, T(0));
    } else if (beta != T(1)) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = c0; j < c1; ++j) c[r * N + j] *= beta;
    }
    const T* ai = pa + i * sa + r0 * (OrderA == kRowMajor ? lda : 1);
    const T* bi = pb + i * sb + c0 * (OrderB == kRowMajor ? 1 : ldb);
    serial_gemm<T, OrderA, OrderB>(r1 - r0, c1 - c0, K, ai, lda, bi, ldb, c + r0 * N + c0, N, alpha);
  };
  const int64_t work = std::max<int64_t>(M * N * std::max<int64_t>(K, 1), 1);
  const int64_t threads = std::min<int64_t>(cpu_threads(), std::max<int64_t>(1, batch * work / kWorkPerThread));
  if (threads <= 1 || batch >= threads) {
    parallel_for(0, batch, threads <= 1 ? batch : 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) block(i, 0, M, 0, N);
    });
    return;
  }
  constexpr int64_t kRowUnit = 16;
  const int64_t column_unit = gemm_variant().column_unit<T>();  // this CPU's register kernel
  const int64_t row_parts = std::min<int64_t>(threads, (M + kRowUnit - 1) / kRowUnit);
  const int64_t column_parts = std::min<int64_t>(threads, (N + column_unit - 1) / column_unit);
  const bool by_rows = row_parts >= column_parts;
  const int64_t length = by_rows ? M : N, unit = by_rows ? kRowUnit : column_unit;
  const int64_t parts = by_rows ? row_parts : column_parts;
  const int64_t step = ((length + parts - 1) / parts + unit - 1) / unit * unit;
  for (int64_t i = 0; i < batch; ++i)
    parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t lo = std::min(length, p * step), hi = std::min(length, lo + step);
        if (lo >= hi) continue;
        if (by_rows) block(i, lo, hi, 0, N);
        else block(i, 0, M, lo, hi);
      }
    });
}

template <class T>
void gemm_dispatch(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
  constexpr int R = kRowMajor, C = kColMajor;
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

// The integer product (PyTorch's CPU has one; no BLAS does): a plain loop per output row,
// in the unsigned type of T's width so that overflow wraps around as PyTorch's does instead
// of being undefined. alpha and beta are whole numbers (the entry point checks).
template <class T>
void gemm_integer(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta) {
  using U = std::make_unsigned_t<T>;
  const int64_t M = out.size(1), N = out.size(2), K = a.size(2);
  const int64_t sa0 = a.size(0) == 1 ? 0 : a.stride(0), sa1 = a.stride(1), sa2 = a.stride(2);
  const int64_t sb0 = b.size(0) == 1 ? 0 : b.stride(0), sb1 = b.stride(1), sb2 = b.stride(2);
  const T* pa = static_cast<const T*>(a.data_ptr());
  const T* pb = static_cast<const T*>(b.data_ptr());
  T* pc = static_cast<T*>(out.data_ptr());
  const U al = static_cast<U>(static_cast<int64_t>(alpha)), be = static_cast<U>(static_cast<int64_t>(beta));
  const int64_t grain = std::max<int64_t>(1, kWorkPerThread / std::max<int64_t>(N * K, 1));
  parallel_for(0, out.size(0) * M, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t i = row / M, r = row % M;
      const T* ar = pa + i * sa0 + r * sa1;
      const T* bi = pb + i * sb0;
      T* c = pc + row * N;
      for (int64_t j = 0; j < N; ++j) {
        U acc = 0;
        for (int64_t k = 0; k < K; ++k) acc = static_cast<U>(acc + static_cast<U>(ar[k * sa2]) * static_cast<U>(bi[k * sb1 + j * sb2]));
        const U prior = beta == 0.0 ? U(0) : static_cast<U>(be * static_cast<U>(c[j]));
        c[j] = static_cast<T>(static_cast<U>(al * acc + prior));
      }
    }
  });
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
    case DType::UInt8: return gemm_integer<uint8_t>(out, a, b, alpha, beta);
    case DType::Int32: return gemm_integer<int32_t>(out, a, b, alpha, beta);
    case DType::Int64: return gemm_integer<int64_t>(out, a, b, alpha, beta);
    default: throw_unsupported_dtype("gemm", Device::cpu(), out.dtype());
  }
}

}  // namespace

void register_matmul(KernelTable& t) { t.gemm = &gemm; }

}  // namespace wick::cpu
