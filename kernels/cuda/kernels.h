#pragma once
// The CUDA backend's op families, mirroring kernels/cpu/kernels.h. Each .cu file fills its
// slots through one registration function; kernels/cuda/register.cu calls them all.
#include <wick/tensor/dispatch.h>

namespace wick::cuda_kernels {

void register_runtime(Backend& b);      // runtime.cu: allocator, device_count, copy_across_devices
void register_copy(KernelTable& t);     // copy.cu: copy, fill, sequence
void register_random(KernelTable& t);   // random.cu
void register_unary(KernelTable& t);    // unary.cu
void register_binary(KernelTable& t);   // binary.cu: binary, where
void register_reduce(KernelTable& t);   // reduce.cu: reduce, reduce_with_index
void register_softmax(KernelTable& t);  // softmax.cu: softmax, cumsum
void register_matmul(KernelTable& t);   // matmul.cu: gemm (cuBLAS / cuBLASLt)
void register_index(KernelTable& t);    // index.cu: index_select, gather, scatter, index_add, nonzero

}  // namespace wick::cuda_kernels
