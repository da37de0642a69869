#include "kernels/cuda/kernels.h"

namespace wick::cuda_kernels {

void register_unary(KernelTable&) {}

}  // namespace wick::cuda_kernels
