#include <wick/nn/activation.h>

#include <wick/autograd/ops.h>

namespace wick {

Variable ReLU::forward(const Variable& x) { return relu(x); }
Variable LeakyReLU::forward(const Variable& x) { return leaky_relu(x, negative_slope_); }
Variable GELU::forward(const Variable& x) { return gelu(x, approximate_); }
Variable SiLU::forward(const Variable& x) { return silu(x); }
Variable Tanh::forward(const Variable& x) { return tanh(x); }
Variable Sigmoid::forward(const Variable& x) { return sigmoid(x); }
Variable Softmax::forward(const Variable& x) { return softmax(x, dim_); }

}  // namespace wick
