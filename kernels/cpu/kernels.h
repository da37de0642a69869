#pragma once
// The CPU backend's op families. Each file fills its slots of the kernel table through one
// registration function; kernels/cpu/register.cpp calls them all.
#include <wick/tensor/dispatch.h>

namespace wick::cpu {

void register_copy(KernelTable& t);     // copy.cpp: copy, fill, sequence
void register_random(KernelTable& t);   // random.cpp
void register_unary(KernelTable& t);    // unary.cpp
void register_binary(KernelTable& t);   // binary.cpp: binary, where
void register_reduce(KernelTable& t);   // reduce.cpp: reduce, reduce_with_index
void register_softmax(KernelTable& t);  // softmax.cpp: softmax, the scans
void register_sort(KernelTable& t);     // sort.cpp: sort
void register_matmul(KernelTable& t);   // matmul.cpp: gemm
void register_index(KernelTable& t);    // index.cpp: index_select, gather, scatter, index_add, nonzero
void register_conv(KernelTable& t);     // conv.cpp: conv2d_forward, conv2d_backward_input/_weight
void register_pool(KernelTable& t);     // pool.cpp: max/avg/adaptive_avg pool2d forward and backward
void register_norm(KernelTable& t);     // norm.cpp: batch_norm, group_norm (+ backward)
void register_loss(KernelTable& t);     // loss.cpp: cross_entropy (+ target weights, scale, backward)
void register_attention(KernelTable& t);  // attention.cpp: attention_forward, attention_backward
void register_recurrent(KernelTable& t);  // recurrent.cpp: recurrent_cell_forward/_backward
void register_optim(KernelTable& t);    // optim.cpp: fused_step, unscale_grads

}  // namespace wick::cpu
