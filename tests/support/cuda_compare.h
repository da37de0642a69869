#pragma once
// The CUDA-vs-CPU case table machinery: each case runs one op on CPU inputs and on the
// same inputs copied to cuda:0 with the same layout (shape, strides, offset), and compares
// the results with a tolerance per dtype.
#include <functional>
#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {

// A copy of `t` on `device` with the same shape, strides and offset (the whole storage is
// copied, so non-contiguous and broadcast layouts reach the kernel as they are).
Tensor same_layout_on(const Tensor& t, Device device);

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs `op` on `inputs` (CPU) and on their cuda:0 copies; the results must have equal
// shapes and dtypes and values within the tolerance (default: the result dtype's, see
// default_rtol), with NaN matching NaN. `what` names the case in failure messages.
void expect_cuda_matches_cpu(const std::string& what, const std::vector<Tensor>& inputs, const OpFn& op,
                             double rtol = -1, double atol = -1);

}  // namespace wick::test
