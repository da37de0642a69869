#pragma once
// One matrix product on the calling thread through Eigen's GEMM kernel. Eigen's own
// threading is bypassed on purpose: its threads wait for each other's packed panels by
// spinning, several times per product, which profiles of the MNIST examples showed as a
// quarter of the run time (and far more when the machine is busy); it would also start
// OpenMP teams inside the threads of our pool. Kernels give threads whole blocks instead.
#include <cstdint>

// GCC 12 reports false maybe-uninitialized warnings inside Eigen's AVX-512 packing code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

namespace wick::cpu {

// c += alpha * a @ b for a [M, K], b [K, N] and a row-major c [M, N] with leading dim ldc.
// OrderA / OrderB say whether a and b are Eigen::RowMajor (lda = stride between rows) or
// Eigen::ColMajor (lda = stride between columns).
template <class T, int OrderA, int OrderB>
void serial_gemm(int64_t M, int64_t N, int64_t K, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
                 T alpha) {
  if (M == 0 || N == 0 || K == 0) return;
  using Index = Eigen::Index;
  using Product =
      Eigen::internal::general_matrix_matrix_product<Index, T, OrderA, false, T, OrderB, false, Eigen::RowMajor, 1>;
  Eigen::internal::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> blocking(
      M, N, K, 1, true);
  Product::run(M, N, K, a, lda, b, ldb, c, 1, ldc, alpha, blocking, nullptr);
}

}  // namespace wick::cpu
