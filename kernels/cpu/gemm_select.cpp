// Which copy of the matrix product's core (serial_gemm.h) this process runs.
#include <wick/tensor/cpu_capability.h>
#include <wick/tensor/error.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/cpu/serial_gemm.h"

namespace wick::cpu {

const GemmVariant& gemm_variant_baseline();
#if WICK_GEMM_X86_VARIANTS
const GemmVariant& gemm_variant_avx2();
const GemmVariant& gemm_variant_avx512();
#endif

namespace {

struct Variants {
  GemmVariantInfo list[3];
  int count = 0;
};

Variants detect() {
  Variants v;
  v.list[v.count++] = {"baseline", &gemm_variant_baseline(), true};
#if WICK_GEMM_X86_VARIANTS
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XGETBV).
  // x86-64-v3 also has F16C, LZCNT and MOVBE, which every CPU with AVX2, FMA and BMI2 has
  // (and clang 14 cannot ask for F16C here).
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  v.list[v.count++] = {"avx2", avx2 ? &gemm_variant_avx2() : nullptr, avx2};
  v.list[v.count++] = {"avx512", avx512 ? &gemm_variant_avx512() : nullptr, avx512};
#endif
  return v;
}

const Variants& variants() {
  static const Variants v = detect();
  return v;
}

// The widest supported variant, or the one WICK_CPU_ISA names when it is narrower.
const GemmVariant& choose() {
  const Variants& v = variants();
  int best = 0;
  for (int i = 0; i < v.count; ++i)
    if (v.list[i].supported) best = i;
  const char* asked = std::getenv("WICK_CPU_ISA");
  if (asked == nullptr || *asked == '\0') return *v.list[best].variant;
  std::string known;
  for (int i = 0; i < v.count; ++i) {
    if (std::strcmp(asked, v.list[i].name) == 0) return *v.list[std::min(i, best)].variant;
    known += std::string(i ? ", " : "") + v.list[i].name;
  }
  throw Error(std::string("WICK_CPU_ISA=") + asked + ": this build's CPU kernels are " + known);
}

}  // namespace

const GemmVariantInfo* gemm_variants(int* count) {
  *count = variants().count;
  return variants().list;
}

const GemmVariant& gemm_variant() {
  static const GemmVariant& chosen = choose();
  return chosen;
}

}  // namespace wick::cpu

namespace wick {

std::string cpu_capability() { return cpu::gemm_variant().name; }

}  // namespace wick
