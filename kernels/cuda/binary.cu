#include "kernels/cuda/kernels.h"

namespace wick::cuda_kernels {

void register_binary(KernelTable&) {}

}  // namespace wick::cuda_kernels
