// The matrix product's Eigen core for one instruction set. CMake compiles this file once per
// x86-64 level (baseline, avx2 = x86-64-v3, avx512 = x86-64-v4), with WICK_GEMM_ISA naming
// the level, and serial_gemm.h picks one at run time from what the CPU supports.
//
// Every copy must keep its code to itself: an inline function or template instantiated in
// two copies is one weak symbol to the linker, which keeps one of them, and if it kept the
// AVX-512 one a baseline caller would die with an illegal instruction on an older CPU. So
// Eigen's namespace is renamed per copy (the macro below turns every `Eigen` token into a
// unique name), this file's own code lives in wick::cpu::<level>, and the ctest
// `cpu_gemm_variants_keep_to_themselves` (tools/check_isa_symbols.sh) fails the build's
// tests if any copy defines a symbol outside those names.
#ifndef WICK_GEMM_ISA
#error "compile with -DWICK_GEMM_ISA=<level> (kernels/CMakeLists.txt does)"
#endif
#define WICK_GEMM_CAT2(a, b) a##b
#define WICK_GEMM_CAT(a, b) WICK_GEMM_CAT2(a, b)
#define WICK_GEMM_STR2(x) #x
#define WICK_GEMM_STR(x) WICK_GEMM_STR2(x)
#define Eigen WICK_GEMM_CAT(wick_eigen_, WICK_GEMM_ISA)

#include "kernels/cpu/isa/eigen_gemm.h"
#include "kernels/cpu/serial_gemm.h"

namespace wick::cpu {

namespace WICK_GEMM_ISA {
namespace {

template <class T>
GemmVariant::Fn<T> product(int order_a, int order_b) {
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  static_assert(R == kRowMajor && C == kColMajor, "serial_gemm.h's order constants are Eigen's");
  if (order_a == R) return order_b == R ? &eigen_gemm<T, R, R> : &eigen_gemm<T, R, C>;
  return order_b == R ? &eigen_gemm<T, C, R> : &eigen_gemm<T, C, C>;
}

GemmVariant make() {
  GemmVariant v;
  v.name = WICK_GEMM_STR(WICK_GEMM_ISA);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      v.f32[a][b] = product<float>(a, b);
      v.f64[a][b] = product<double>(a, b);
    }
  v.column_unit_f32 = Eigen::internal::gebp_traits<float, float>::mr;
  v.column_unit_f64 = Eigen::internal::gebp_traits<double, double>::mr;
  return v;
}

}  // namespace
}  // namespace WICK_GEMM_ISA

const GemmVariant& WICK_GEMM_CAT(gemm_variant_, WICK_GEMM_ISA)() {
  static const GemmVariant v = WICK_GEMM_ISA::make();
  return v;
}

}  // namespace wick::cpu
