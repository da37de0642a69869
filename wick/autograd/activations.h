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

Tensor elu(const Tensor& x, double alpha = 1.0);
Variable elu(const Variable& x, double alpha = 1.0);
Tensor selu(const Tensor& x);
Variable selu(const Variable& x);
Tensor celu(const Tensor& x, double alpha = 1.0);
Variable celu(const Variable& x, double alpha = 1.0);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Variable hardtanh(const Variable& x, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& x);
Variable relu6(const Variable& x);
Tensor hardsigmoid(const Tensor& x);
Variable hardsigmoid(const Variable& x);
Tensor hardswish(const Tensor& x);
Variable hardswish(const Variable& x);
Tensor mish(const Tensor& x);
Variable mish(const Variable& x);
Tensor logsigmoid(const Tensor& x);
Variable logsigmoid(const Variable& x);
Tensor softsign(const Tensor& x);
Variable softsign(const Variable& x);
Tensor glu(const Tensor& x, int64_t dim = -1);
Variable glu(const Variable& x, int64_t dim = -1);
Tensor prelu(const Tensor& x, const Tensor& weight);
Variable prelu(const Variable& x, const Variable& weight);

}  // namespace wick
