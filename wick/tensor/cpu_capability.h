#pragma once
// The instruction set wick's CPU matrix products run in on this machine: "baseline"
// (x86-64 SSE2, or the build's own target with WICK_NATIVE), "avx2" (x86-64-v3) or "avx512"
// (x86-64-v4), chosen at run time from the CPU; the environment variable
// WICK_CPU_ISA=baseline|avx2|avx512 asks for a narrower one. Throws wick::Error for a
// WICK_CPU_ISA this build does not know.
#include <string>

namespace wick {

std::string cpu_capability();

}  // namespace wick
