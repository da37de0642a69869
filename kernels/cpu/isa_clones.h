#pragma once
#include <type_traits>

// WICK_ISA_CLONES before a function: GCC compiles it three times, for AVX-512, AVX2 and the
// baseline x86-64 the library is built for, and the dynamic loader picks the widest this CPU
// runs (target_clones, an ifunc). For the compute-bound float loops (exp, tanh, GELU...)
// whose speed is their vector width; matrix products have their own three builds
// (serial_gemm.h). Clang before 17 refuses it on templates, and other targets have no such
// choice: there it is empty (baseline code).
// The copies compute the same bits as the baseline one: the CPU kernels are compiled with
// -ffp-contract=off (kernels/CMakeLists.txt), so no copy fuses a multiply-add, and a sum
// inside a copy keeps lanes written in the source (lane_sum.h; an `omp simd` sum reduction
// takes as many lanes as the vector is wide, other bits per CPU). tests/consumer's
// cpu_isa_copies_give_the_same_bits runs them on emulated CPUs and compares. They are chosen
// by the CPU alone: WICK_CPU_ISA (serial_gemm.h) narrows only the matrix products.
//
// The same choice for a loop nest written with templates and lambdas (a row of a binary
// op, the norms' rows, a reduction, softmax, cross-entropy, fused attention): with_isa_clones<T>(f)
// runs f() through run_isa_clones, whose three copies each inline every call beneath them
// (`flatten`), so the whole nest is compiled for each target; what the nest reaches through
// a function pointer or the thread pool stays baseline (so call it inside a parallel_for
// task, not around one). Only for float and double: other dtypes gain little from width and
// would triple their code. These loops are mostly bound by memory: the GPT and CNN steps
// gain 0-4% of CPU time (bench/README.md, issue 49).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WICK_ISA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define WICK_ISA_CLONES_FLAT __attribute__((flatten, target_clones("avx512f", "avx2", "default")))
#else
#define WICK_ISA_CLONES
#define WICK_ISA_CLONES_FLAT
#endif

namespace wick::cpu {

template <class F>
WICK_ISA_CLONES_FLAT void run_isa_clones(const F& f) {
  f();
}

template <class T, class F>
inline void with_isa_clones(const F& f) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) run_isa_clones(f);
  else f();
}

}  // namespace wick::cpu
