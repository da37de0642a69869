#pragma once
// WICK_ISA_CLONES before a function: GCC compiles it three times, for AVX-512, AVX2 and the
// baseline x86-64 the library is built for, and the dynamic loader picks the widest this CPU
// runs (target_clones, an ifunc). For the few compute-bound float loops (exp, tanh, GELU...)
// whose speed is their vector width; memory-bound kernels gain nothing and stay baseline, and
// matrix products have their own three builds (serial_gemm.h). Clang before 17 refuses it on
// templates, and other targets have no such choice: there it is empty (baseline code).
// The copies compute the same bits as the baseline one: the CPU kernels are compiled with
// -ffp-contract=off (kernels/CMakeLists.txt), so no copy fuses a multiply-add. They are
// chosen by the CPU alone: WICK_CPU_ISA (serial_gemm.h) narrows only the matrix products.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WICK_ISA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WICK_ISA_CLONES
#endif
