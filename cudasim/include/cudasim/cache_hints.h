#pragma once
// Loads and stores with cache hints (__ldg, __ldcs, __stcs, ...). The hints change where a
// GPU caches the line, never the value, so each is a plain access here; the overload set is
// CUDA's (sm_32_intrinsics.h, cuda_fp16.h, cuda_bf16.h) so that code compiling here compiles
// with nvcc.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <type_traits>

namespace cudasim {

template <class T, class... U>
inline constexpr bool one_of = (std::is_same_v<T, U> || ...);

template <class T>
concept CacheHintValue =
    one_of<T, char, signed char, short, int, long, long long, unsigned char, unsigned short, unsigned, unsigned long,
           unsigned long long, float, double, char2, char4, short2, short4, int2, int4, longlong2, uchar2, uchar4,
           ushort2, ushort4, uint2, uint4, ulonglong2, float2, float4, double2, __half, __half2, __nv_bfloat16,
           __nv_bfloat162>;

}  // namespace cudasim

#define CUDASIM_HINTED_LOAD(name) \
  template <::cudasim::CacheHintValue T> \
  inline T name(const T* ptr) { return *ptr; }
#define CUDASIM_HINTED_STORE(name) \
  template <::cudasim::CacheHintValue T> \
  inline void name(T* ptr, T value) { *ptr = value; }
CUDASIM_HINTED_LOAD(__ldg)   // read-only data cache
CUDASIM_HINTED_LOAD(__ldca)  // cache at all levels
CUDASIM_HINTED_LOAD(__ldcg)  // cache in L2 only
CUDASIM_HINTED_LOAD(__ldcs)  // streaming, used once
CUDASIM_HINTED_LOAD(__ldlu)  // last use
CUDASIM_HINTED_LOAD(__ldcv)  // volatile: fetch again
CUDASIM_HINTED_STORE(__stwb)  // write back
CUDASIM_HINTED_STORE(__stcg)  // L2 only
CUDASIM_HINTED_STORE(__stcs)  // streaming
CUDASIM_HINTED_STORE(__stwt)  // write through
#undef CUDASIM_HINTED_LOAD
#undef CUDASIM_HINTED_STORE
