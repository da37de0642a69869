#pragma once
// The CUDA backend's op families, mirroring kernels/cpu/kernels.h. Each .cu file fills its
// slots through one registration function; kernels/cuda/register.cu calls them all.
#include <wick/tensor/dispatch.h>

namespace wick::cuda_kernels {

void register_runtime(Backend& b);         // runtime.cu: allocator, device_count, copy_across_devices
void register_copy(KernelTable& t);        // copy.cu: copy, fill, sequence
void register_random(KernelTable& t);      // random.cu
void register_unary(KernelTable& t);       // unary.cu
void register_binary(KernelTable& t);      // binary.cu: binary, where
void register_reduce(KernelTable& t);      // reduce.cu: reduce, reduce_with_index
void register_softmax(KernelTable& t);     // softmax.cu: softmax, the scans
void register_sort(KernelTable& t);        // sort.cu: sort
void register_matmul(KernelTable& t);      // matmul.cu: gemm (cuBLAS / cuBLASLt)
void register_index(KernelTable& t);       // index.cu: index_select, gather, scatter, index_add, nonzero
void register_conv(KernelTable& t);        // conv.cu: conv2d_forward, conv2d_backward_input/_weight (cuDNN)
void register_pool(KernelTable& t);        // pool.cu: max/avg/adaptive_avg pool2d forward and backward
void register_norm(KernelTable& t);        // norm.cu: batch_norm, group_norm (+ backward)
void register_layer_norm(KernelTable& t);  // layer_norm.cu: layer_norm, rms via layer_norm (+ backward)
void register_loss(KernelTable& t);        // loss.cu: cross_entropy (+ target weights, scale, backward)
void register_attention(KernelTable& t);   // attention.cu: attention_forward, attention_backward
void register_recurrent(KernelTable& t);   // recurrent.cu: recurrent_cell_forward/_backward
void register_optim(KernelTable& t);       // optim.cu: fused_step, unscale_grads

}  // namespace wick::cuda_kernels
