#pragma once
// One matrix product on the calling thread through Eigen's GEMM kernel (included only by
// gemm_variant.cpp, which compiles it once per instruction set: see serial_gemm.h). Eigen's own
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

namespace wick::cpu::WICK_GEMM_ISA {

// Eigen's blocking space with its packing buffers kept per thread across calls. Eigen
// allocates them for every product (a megabyte or two for a 1024^3 float product) and glibc
// hands such blocks back to the system, so each call paid their page faults again: about 2%
// of a 1024^3 product on two threads. The buffers belong to the calling thread (wick's pool
// threads live as long as the process) and only grow.
template <class T>
class ReusedBlockingSpace
    : public Eigen::internal::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> {
  using Base = Eigen::internal::gemm_blocking_space<Eigen::RowMajor, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic>;

  struct Buffer {
    T* data = nullptr;
    Eigen::Index size = 0;
    ~Buffer() { Eigen::internal::aligned_free(data); }
    T* at_least(Eigen::Index n) {
      if (n > size) {
        Eigen::internal::aligned_free(data);
        data = nullptr;  // aligned_malloc throws std::bad_alloc on failure
        data = static_cast<T*>(Eigen::internal::aligned_malloc(static_cast<size_t>(n) * sizeof(T)));
        size = n;
      }
      return data;
    }
  };

 public:
  ReusedBlockingSpace(Eigen::Index M, Eigen::Index N, Eigen::Index K) : Base(M, N, K, 1, true) {
    thread_local Buffer a, b;
    this->m_blockA = a.at_least(this->mc() * this->kc());
    this->m_blockB = b.at_least(this->kc() * this->nc());
  }
  // The base class frees what its pointers hold: hand it none.
  ~ReusedBlockingSpace() {
    this->m_blockA = nullptr;
    this->m_blockB = nullptr;
  }
  ReusedBlockingSpace(const ReusedBlockingSpace&) = delete;
  ReusedBlockingSpace& operator=(const ReusedBlockingSpace&) = delete;
};

// c += alpha * a @ b for a [M, K], b [K, N] and a row-major c [M, N] with leading dim ldc.
// OrderA / OrderB say whether a and b are Eigen::RowMajor (lda = stride between rows) or
// Eigen::ColMajor (lda = stride between columns).
template <class T, int OrderA, int OrderB>
void eigen_gemm(int64_t M, int64_t N, int64_t K, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
                 T alpha) {
  if (M == 0 || N == 0 || K == 0) return;
  using Index = Eigen::Index;
  using Product =
      Eigen::internal::general_matrix_matrix_product<Index, T, OrderA, false, T, OrderB, false, Eigen::RowMajor, 1>;
  ReusedBlockingSpace<T> blocking(M, N, K);
  Product::run(M, N, K, a, lda, b, ldb, c, 1, ldc, alpha, blocking, nullptr);
}

}  // namespace wick::cpu::WICK_GEMM_ISA
