#pragma once
// Activations built from primitives, each written once for Tensor and Variable: they run on
// every device the primitives run on, and their gradients come from the primitives' (no
// backward of their own). Where PyTorch's hand-written backward picks a side at a kink, the
// composite is arranged to pick the same one (hardswish at +-3, elu at 0, prelu at 0).
//
//   elu(x, alpha)          x > 0 ? x : alpha (e^x - 1)
//   selu(x)                scale * elu(x, alpha) with PyTorch's constants
//   celu(x, alpha)         x > 0 ? x : alpha (e^(x / alpha) - 1)
//   hardtanh(x, lo, hi)    clamp (gradient strictly inside)
//   relu6(x)               hardtanh(x, 0, 6)
//   hardsigmoid(x)         relu6(x + 3) / 6
//   hardswish(x)           x relu6(x + 3) / 6
//   mish(x)                x tanh(softplus(x))
//   logsigmoid(x)          min(x, 0) - log1p(e^-|x|)
//   softsign(x)            x / (1 + |x|)
//   glu(x, dim)            a sigmoid(b), a and b the halves of x along dim
//   prelu(x, weight)       x > 0 ? x : weight x, weight [1] or [C] along dim 1
#include <wick/autograd/variable.h>
#include <wick/tensor/tensor.h>

namespace wick {

// One row each, declared for Tensor and for Variable (wick/tensor/mirrored_ops.h).
#define WICK_ACTIVATION_OPS(X, In, Out)                                                                   \
  X(Out, elu, (In x, double alpha = 1.0), elu_of(x, alpha, 1.0, "elu"))                                   \
  X(Out, selu, (In x), mul(elu_of(x, kSeluAlpha, 1.0, "selu"), kSeluScale))                               \
  X(Out, celu, (In x, double alpha = 1.0), celu_of(x, alpha))                                             \
  X(Out, hardtanh, (In x, double min_val = -1.0, double max_val = 1.0), hardtanh_of(x, min_val, max_val)) \
  X(Out, relu6, (In x), hardtanh_of(x, 0.0, 6.0, "relu6"))                                                \
  X(Out, hardsigmoid, (In x), hardsigmoid_of(x))                                                          \
  X(Out, hardswish, (In x), hardswish_of(x))                                                              \
  X(Out, mish, (In x), (check_floating("mish", x), mul(x, tanh(softplus(x)))))                            \
  X(Out, logsigmoid, (In x), logsigmoid_of(x))                                                            \
  X(Out, softsign, (In x), (check_floating("softsign", x), div(x, add(abs(x), 1.0))))                     \
  X(Out, glu, (In x, int64_t dim = -1), glu_of(x, dim))                                                   \
  X(Out, prelu, (In x, In weight), prelu_of(x, weight), Autocast)
#include <wick/autograd/generated/activation_ops_tensor.inc>
#include <wick/autograd/generated/activation_ops.inc>
}  // namespace wick
