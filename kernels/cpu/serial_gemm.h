#pragma once
// One matrix product on the calling thread (the kernels' threads take whole blocks; see
// isa/eigen_gemm.h for why Eigen's own threading is bypassed), in the widest instruction
// set the CPU has.
//
// The library is built for baseline x86-64 unless WICK_NATIVE asks for this machine's
// (-march=native), so that an installed libwick runs on any x86-64 CPU. Matrix products,
// where the vector width is most of the speed, are compiled three times instead
// (isa/gemm_variant.cpp: baseline, x86-64-v3 = AVX2 + FMA, x86-64-v4 = AVX-512) and the
// widest the CPU and OS support is chosen on first use. WICK_CPU_ISA=baseline|avx2|avx512 in
// the environment asks for a narrower one (never a wider one than the CPU has).
#include <cstdint>

namespace wick::cpu {

// Eigen's storage orders (isa/gemm_variant.cpp checks that they are Eigen's values).
inline constexpr int kColMajor = 0, kRowMajor = 1;

struct GemmVariant {
  // c += alpha * a @ b for a [M, K], b [K, N] and a row-major c [M, N] with leading dim ldc;
  // a and b row-major (ld = stride between rows) or column-major (ld = stride between columns).
  template <class T>
  using Fn = void (*)(int64_t M, int64_t N, int64_t K, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                      int64_t ldc, T alpha);
  const char* name = "";
  Fn<float> f32[2][2] = {};  // [order of a][order of b]
  Fn<double> f64[2][2] = {};
  // The register kernel's height in output columns (Eigen's gebp_traits::mr): column blocks
  // that start at multiples of it give the same bits as the whole product (matmul.cpp).
  int64_t column_unit_f32 = 1, column_unit_f64 = 1;

  template <class T>
  Fn<T> fn(int order_a, int order_b) const {
    if constexpr (sizeof(T) == 4) return f32[order_a][order_b];
    else return f64[order_a][order_b];
  }
  template <class T>
  int64_t column_unit() const {
    return sizeof(T) == 4 ? column_unit_f32 : column_unit_f64;
  }
};

// The variants this build has, narrowest first, and whether this CPU can run each. `variant`
// is null for one the CPU cannot run: even asking a copy for its table runs code compiled
// for its instruction set (the compiler vectorises filling it), so it is not asked.
struct GemmVariantInfo {
  const char* name;
  const GemmVariant* variant;
  bool supported;
};
const GemmVariantInfo* gemm_variants(int* count);

// The variant in use: chosen once per process.
const GemmVariant& gemm_variant();

template <class T, int OrderA, int OrderB>
inline void serial_gemm(int64_t M, int64_t N, int64_t K, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                        int64_t ldc, T alpha) {
  if (M == 0 || N == 0 || K == 0) return;
  gemm_variant().fn<T>(OrderA, OrderB)(M, N, K, a, lda, b, ldb, c, ldc, alpha);
}

}  // namespace wick::cpu
