#include <wick/nn/flatten.h>

#include <wick/autograd/ops.h>

namespace wick {

Variable Flatten::forward(const Variable& x) { return flatten(x, start_dim_, end_dim_); }

}  // namespace wick
