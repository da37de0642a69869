#include "kernels/cuda/kernels.h"

namespace wick::cuda_kernels {

void register_random(KernelTable&) {}

}  // namespace wick::cuda_kernels
