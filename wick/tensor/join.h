#pragma once
// Joining tensors along a dim.
#include <vector>

#include <wick/tensor/tensor.h>

namespace wick {

// Declared here for Tensors and in wick/autograd/ops.h for Variables from these rows
// (wick/tensor/mirrored_ops.h). cat concatenates along an existing dim (shapes must match
// elsewhere; dtypes are promoted); stack along a new dim (all shapes must be equal).
#define WICK_JOIN_OPS(X, In, Out)                            \
  X(Out, cat, (const std::vector<Out>& xs, int64_t dim = 0)) \
  X(Out, stack, (const std::vector<Out>& xs, int64_t dim = 0))
#include <wick/tensor/generated/join_ops.inc>
}  // namespace wick
