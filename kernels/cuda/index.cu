#include "kernels/cuda/kernels.h"

namespace wick::cuda_kernels {

void register_index(KernelTable&) {}

}  // namespace wick::cuda_kernels
