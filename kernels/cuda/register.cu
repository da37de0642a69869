#include <wick/tensor/dispatch.h>

#include "kernels/cuda/kernels.h"

namespace wick {

void register_cuda_kernels(Backend& b) {
  cuda_kernels::register_runtime(b);
  KernelTable& t = b.kernels;
  cuda_kernels::register_copy(t);
  cuda_kernels::register_random(t);
  cuda_kernels::register_unary(t);
  cuda_kernels::register_binary(t);
  cuda_kernels::register_reduce(t);
  cuda_kernels::register_softmax(t);
  cuda_kernels::register_sort(t);
  cuda_kernels::register_matmul(t);
  cuda_kernels::register_index(t);
  cuda_kernels::register_conv(t);
  cuda_kernels::register_pool(t);
  cuda_kernels::register_norm(t);
  cuda_kernels::register_layer_norm(t);
  cuda_kernels::register_loss(t);
  cuda_kernels::register_attention(t);
  cuda_kernels::register_recurrent(t);
  cuda_kernels::register_optim(t);
}

}  // namespace wick
