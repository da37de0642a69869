#include "kernels/cuda/kernels.h"

namespace wick::cuda_kernels {

void register_softmax(KernelTable&) {}

}  // namespace wick::cuda_kernels
