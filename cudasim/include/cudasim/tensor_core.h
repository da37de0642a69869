#pragma once
// The PTX instructions behind warp-level matrix code on sm_80 and later, for kernels compiled
// by the host compiler: what kernels/cuda/tensor_core.cuh issues as inline PTX under nvcc.
// The fragment layouts are the PTX ISA's (tensor_core.cuh lists them); cudasim/src/
// tensor_core.cpp implements them, and a kernel that gets a layout wrong computes wrong
// numbers here as on a GPU. Misuse fails the launch naming the kernel, as a bad shuffle does.
#include <cstdint>

namespace cudasim {

enum class MmaInput { BFloat16, Float16 };

// One lane's part in mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32: all 32
// lanes of the warp take part, each giving its A, B and C fragments and receiving its four
// floats of D = A B + C. d may alias c. The products are exact and the sum is rounded once
// to float (tensor_core.cpp), which can differ from a GPU's tensor cores in the last bits.
void mma_m16n8k16(MmaInput type, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4]);

// One lane's part in ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16 (count 1, 2 or
// 4): lanes 8i..8i+7 give the 16-byte aligned addresses of rows 0..7 of matrix i (the other
// lanes' addresses are not read); r[i] receives this lane's part of matrix i.
void ldmatrix(int count, bool trans, uint32_t* r, const void* row);

// cp.async of the calling simulated thread: copies copy_bytes (4, 8 or 16; both addresses
// aligned to it), the first src_bytes from src and zeros after them (src is not read when
// src_bytes is 0). The copy is recorded now and performed by the cp_async_wait that
// completes its group, so reading dst before that reads what was there before.
void cp_async(void* dst, const void* src, int copy_bytes, int src_bytes);
// cp.async.commit_group: the thread's copies issued since its last commit form a group.
void cp_async_commit();
// cp.async.wait_group n: completes the thread's oldest committed groups until at most n are
// pending. Copies not yet committed stay pending.
void cp_async_wait(int n);

}  // namespace cudasim
