#include <wick/nn/activation.h>

#include <wick/autograd/activations.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/factories.h>

namespace wick {

Variable ReLU::forward(const Variable& x) { return relu(x); }
Variable LeakyReLU::forward(const Variable& x) { return leaky_relu(x, negative_slope_); }
Variable GELU::forward(const Variable& x) { return gelu(x, approximate_); }
Variable SiLU::forward(const Variable& x) { return silu(x); }
Variable Tanh::forward(const Variable& x) { return tanh(x); }
Variable Sigmoid::forward(const Variable& x) { return sigmoid(x); }
Variable Softmax::forward(const Variable& x) { return softmax(x, dim_); }
Variable ELU::forward(const Variable& x) { return elu(x, alpha_); }
Variable CELU::forward(const Variable& x) { return celu(x, alpha_); }
Variable Hardtanh::forward(const Variable& x) { return hardtanh(x, min_, max_); }
Variable GLU::forward(const Variable& x) { return glu(x, dim_); }
Variable SELU::forward(const Variable& x) { return selu(x); }
Variable ReLU6::forward(const Variable& x) { return relu6(x); }
Variable Hardsigmoid::forward(const Variable& x) { return hardsigmoid(x); }
Variable Hardswish::forward(const Variable& x) { return hardswish(x); }
Variable Mish::forward(const Variable& x) { return mish(x); }
Variable LogSigmoid::forward(const Variable& x) { return logsigmoid(x); }
Variable Softsign::forward(const Variable& x) { return softsign(x); }

PReLU::PReLU(int64_t num_parameters, double init, const Options& o) {
  WICK_CHECK(num_parameters >= 1, "PReLU: num_parameters must be at least 1, got ", num_parameters);
  weight = register_parameter("weight", full({num_parameters}, init, o));
}
Variable PReLU::forward(const Variable& x) { return prelu(x, weight); }

}  // namespace wick
