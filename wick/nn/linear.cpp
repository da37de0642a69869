#include <wick/nn/linear.h>

#include <wick/autograd/ops.h>
#include <wick/nn/init.h>
#include <wick/tensor/factories.h>

namespace wick {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, const Options& o, Generator* g)
    : in_features_(in_features), out_features_(out_features) {
  WICK_CHECK(in_features >= 0 && out_features >= 0, "Linear: feature counts must be >= 0, got in_features=",
             in_features, ", out_features=", out_features);
  WICK_CHECK(is_floating(o.dtype), "Linear: parameters must be floating, not ", dtype_name(o.dtype));
  weight = register_parameter("weight", empty({out_features, in_features}, o));
  if (bias) this->bias = register_parameter("bias", empty({out_features}, o));
  reset_parameters(g);
}

void Linear::reset_parameters(Generator* g) {
  init::layer_default_(weight.data(), bias.defined() ? bias.data() : Tensor(), g);
}

Variable Linear::forward(const Variable& x) {
  WICK_CHECK(x.dim() >= 1 && x.size(-1) == in_features_, "Linear: input of shape ", shape_str(x.shape()),
             " does not end in in_features=", in_features_, " (weight ", shape_str(weight.shape()), ")");
  return linear(x, weight, bias);
}

}  // namespace wick
