#include <wick/train/replicas.h>

#include <wick/tensor/tensor.h>

namespace wick {

Tensor SingleReplica::count_before_backward() { return scalar_tensor(examples_, DType::Float64); }

}  // namespace wick
