#pragma once
// Matrix products with PyTorch's rules. Floating dtypes only; float32 on CUDA uses TF32
// only when cuda::set_allow_tf32(true) was called (off by default).
#include <wick/tensor/tensor.h>

namespace wick {

// torch.matmul: 1-d x 1-d is a dot product, 2-d x 2-d a matrix product, 1-d operands are
// promoted to a row/column and the added dim removed, and leading dims broadcast (batched).
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);    // [n, k] x [k, m]
Tensor bmm(const Tensor& a, const Tensor& b);   // [b, n, k] x [b, k, m]
// beta * input + alpha * (a @ b), input broadcast to [n, m].
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta = 1.0, double alpha = 1.0);
Tensor outer(const Tensor& a, const Tensor& b);  // [n] x [m] -> [n, m]
Tensor dot(const Tensor& a, const Tensor& b);    // [n] x [n] -> 0-d

}  // namespace wick
