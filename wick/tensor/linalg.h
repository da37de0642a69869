#pragma once
// Matrix products with PyTorch's rules. Floating dtypes only; float32 on CUDA uses TF32
// only when cuda::set_allow_tf32(true) was called (off by default).
#include <wick/tensor/tensor.h>

namespace wick {

// The products, declared here for Tensors and in wick/autograd/ops.h for Variables from these
// rows (wick/tensor/mirrored_ops.h). matmul is torch.matmul: 1-d x 1-d is a dot product,
// 2-d x 2-d a matrix product, 1-d operands are promoted to a row/column and the added dim
// removed, and leading dims broadcast (batched). addmm is beta * input + alpha * (a @ b),
// input broadcast to [n, m].
#define WICK_LINALG_OPS(X, In, Out)                                                                           \
  X(Out, matmul, (In a, In b))                                                                                \
  X(Out, mm, (In a, In b), Record<MatmulBackward>(a, b), Autocast)                /* [n, k] x [k, m] */       \
  X(Out, bmm, (In a, In b), Record<MatmulBackward>(a, b, /*bmm=*/true), Autocast) /* [b, n, k] x [b, k, m] */ \
  X(Out, addmm, (In input, In a, In b, double beta = 1.0, double alpha = 1.0),                                \
    Record<AddmmBackward>(input.shape(), a, b, beta, alpha), Autocast)                                        \
  X(Out, outer, (In a, In b))                                    /* [n] x [m] -> [n, m] */                    \
  X(Out, dot, (In a, In b), Record<DotBackward>(a, b), Autocast) /* [n] x [n] -> 0-d */
#include <wick/tensor/generated/linalg_ops.inc>
}  // namespace wick
