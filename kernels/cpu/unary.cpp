#include "kernels/cpu/kernels.h"

namespace wick::cpu {

void register_unary(KernelTable&) {}

}  // namespace wick::cpu
