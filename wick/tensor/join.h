#pragma once
// Joining tensors along a dim.
#include <vector>

#include <wick/tensor/tensor.h>

namespace wick {

// Concatenates along an existing dim; shapes must match elsewhere; dtypes are promoted.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Stacks along a new dim; all shapes must be equal.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

}  // namespace wick
