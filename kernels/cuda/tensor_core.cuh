#pragma once
// Warp-level matrix instructions for sm_80 and later, the one seam between kernels and the
// hardware for tensor-core code: with nvcc each function is one PTX instruction; compiled by
// the host compiler (-DWICK_CUDA=SIM) it is the simulator's implementation of that
// instruction (cudasim/include/cudasim/tensor_core.h), written from the PTX ISA's fragment
// layouts, so a kernel that gets a layout wrong computes wrong numbers in CI as on the GPU.
//
// Fragments (PTX ISA, "Matrix fragments for mma.m16n8k16" with .bf16/.f16), for lane
// l = 4 g + t (g = l / 4 the group, t = l % 4 the thread in the group). A .b32 register
// holds two 16-bit elements, the lower index in the low half.
//   A, 16 x 16 (row-major, M x K), 4 registers:
//     a[0] = A[g][2t..2t+1],     a[1] = A[g+8][2t..2t+1],
//     a[2] = A[g][2t+8..2t+9],   a[3] = A[g+8][2t+8..2t+9]
//   B, 16 x 8 (K x N, "col": each register two consecutive k of one column), 2 registers:
//     b[0] = B[2t..2t+1][g],     b[1] = B[2t+8..2t+9][g]
//   C and D, 16 x 8 float, 4 registers:
//     c[0..1] = C[g][2t..2t+1],  c[2..3] = C[g+8][2t..2t+1]
// ldmatrix .m8n8.x1/x2/x4 .b16: lanes 8i..8i+7 give the addresses of rows 0..7 of matrix i
// (16 contiguous bytes each, 16-byte aligned, in shared memory); register i of lane l
// receives row g, elements 2t..2t+1 of matrix i. With .trans, register i receives
// elements (2t, g) and (2t+1, g) of matrix i: the fragment of its transpose. So, for
// example, ldmatrix_x4 of the four 8 x 8 quarters of a row-major 16 x 16 tile (lanes 0-7:
// rows 0-7 at column 0; 8-15: rows 8-15 at column 0; 16-23: rows 0-7 at column 8; 24-31:
// rows 8-15 at column 8) is exactly A's fragment.
// cp.async.cg (16 bytes, global to shared, bypassing L1): the copy is only guaranteed to
// have landed after cp_async_wait<N>() leaves at most N of this thread's committed groups
// pending (and other threads see it after a __syncthreads() that follows their writers'
// waits). The simulator performs the copies at the wait, so reading early reads old data.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#if !defined(__CUDACC__)
#include <cudasim/tensor_core.h>
#endif

namespace wick::cuda_kernels::tc {

// Two 16-bit values (lower index in the low half) as one register.
__device__ __forceinline__ uint32_t pack2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

#if defined(__CUDACC__)

// d = a b + c for one m16n8k16 tile; T is __nv_bfloat16 or __half (the inputs' type), float
// accumulate. d may alias c.
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                          const float (&c)[4]) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "mma_16816 takes bf16 or f16");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  }
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: `row` is this lane's row address (see above).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// x2: lanes 0-15 give the addresses (lanes 16-31's are ignored but must be valid).
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* row) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

// cp.async.cg.shared.global [dst], [src], 16, src_size: copies 16 bytes, or writes 16 zero
// bytes when `fill` is false (src is then not read: a row past the end of a tensor).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool fill) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(src), "r"(fill ? 16 : 0)
               : "memory");
}
// cp.async.commit_group: the copies this thread issued since the last commit form a group.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// cp.async.wait_group N: waits until at most N of this thread's committed groups are pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#else  // the host compiler: the simulator's instructions, the same contracts

template <class T>
inline void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "mma_16816 takes bf16 or f16");
  cudasim::mma_m16n8k16(std::is_same_v<T, __nv_bfloat16> ? cudasim::MmaInput::BFloat16 : cudasim::MmaInput::Float16,
                        d, a, b, c);
}
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row) { cudasim::ldmatrix(4, false, r, row); }
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) { cudasim::ldmatrix(4, true, r, row); }
inline void ldmatrix_x2(uint32_t (&r)[2], const void* row) { cudasim::ldmatrix(2, false, r, row); }
inline void ldmatrix_x2_trans(uint32_t (&r)[2], const void* row) { cudasim::ldmatrix(2, true, r, row); }
inline void cp_async_16(void* dst, const void* src, bool fill) { cudasim::cp_async(dst, src, 16, fill ? 16 : 0); }
inline void cp_async_commit() { cudasim::cp_async_commit(); }
template <int N>
inline void cp_async_wait() {
  cudasim::cp_async_wait(N);
}

#endif

}  // namespace wick::cuda_kernels::tc
