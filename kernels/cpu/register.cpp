#include <wick/tensor/allocator.h>
#include <wick/tensor/dispatch.h>

#include "kernels/cpu/kernels.h"

namespace wick {

void register_cpu_kernels(Backend& b) {
  b.allocator = &cpu_allocator();
  b.device_count = [] { return 1; };
  KernelTable& t = b.kernels;
  cpu::register_copy(t);
  cpu::register_random(t);
  cpu::register_unary(t);
  cpu::register_binary(t);
  cpu::register_reduce(t);
  cpu::register_softmax(t);
  cpu::register_sort(t);
  cpu::register_matmul(t);
  cpu::register_index(t);
  cpu::register_conv(t);
  cpu::register_pool(t);
  cpu::register_norm(t);
  cpu::register_loss(t);
  cpu::register_attention(t);
  cpu::register_recurrent(t);
  cpu::register_optim(t);
}

}  // namespace wick
