#pragma once
// The tensor-core attention kernels (flash_attention.cu), which attention.cu dispatches to
// for bfloat16 and float16 when flash_attention_supported() and every operand's rows are
// 16-byte aligned (flash_rows_aligned). Same contract as the KernelTable slots: q, k, v,
// out, dq, dk, dv are [B, H, N, D] with unit stride along D; lse and delta float32 [B, Hq, L]
// contiguous; bias undefined or float32 [B, Hq, L, S] (any strides).
#include <wick/tensor/op_kinds.h>
#include <wick/tensor/tensor.h>

namespace wick::cuda_kernels {

// bfloat16 or float16 with E == Ev in {32, 64, 96, 128}.
bool flash_attention_supported(DType dtype, int64_t e, int64_t ev);
// The base pointer and every stride (in elements) allow 16-byte copies of each row.
bool flash_rows_aligned(const Tensor& t);

void flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& bias, const AttentionParams& p);
void flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                              const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lse,
                              const Tensor& delta, const Tensor& bias, const AttentionParams& p);

}  // namespace wick::cuda_kernels
