#pragma once
// Elementwise reduction kernels handed to Gloo: out[i] = a[i] op b[i] for n elements
// (out may alias a or b). 16-bit floats are combined in float and rounded once per step.
#include <cstddef>
#include <functional>

#include <wick/distributed/comm/communicator.h>

namespace wick::distributed::detail {

using GlooReduceFunction = std::function<void(void*, const void*, const void*, size_t)>;

// Mean reduces as Sum; the caller divides afterwards. Throws for bool.
GlooReduceFunction gloo_reduce_function(DType dtype, ReduceOp op);

// x[i] /= divisor for a floating buffer of n elements (the Mean step).
void divide_in_place(void* data, DType dtype, size_t n, int divisor);

}  // namespace wick::distributed::detail
