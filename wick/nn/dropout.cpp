#include <wick/nn/dropout.h>

#include <wick/autograd/ops.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

void check_probability(double p) {
  WICK_CHECK(p >= 0.0 && p <= 1.0, "dropout: probability p must be in [0, 1], got ", p);
}

}  // namespace

Variable dropout(const Variable& x, double p, bool training, Generator* g) {
  check_probability(p);
  if (!training || p == 0.0) return x;
  WICK_CHECK(x.data().is_floating_point(), "dropout: needs a floating input, got ", dtype_name(x.dtype()),
             " of shape ", shape_str(x.shape()));
  // The kept elements are scaled by 1/(1-p) through the mask; p = 1 keeps nothing.
  Tensor mask = bernoulli(x.shape(), 1.0 - p, x.data().options(), g);
  if (p < 1.0) mask.mul_(1.0 / (1.0 - p));
  return mul(x, Variable(mask));
}

Dropout::Dropout(double p, Generator* g) : p_(p), generator_(g) { check_probability(p); }

Variable Dropout::forward(const Variable& x) { return dropout(x, p_, is_training(), generator_); }

}  // namespace wick
