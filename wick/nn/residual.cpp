#include <wick/nn/residual.h>

#include <wick/autograd/ops.h>

namespace wick {

Residual::Residual(std::shared_ptr<UnaryModule> body, std::shared_ptr<UnaryModule> shortcut) {
  this->body = register_module("body", std::move(body));
  if (shortcut) this->shortcut = register_module("shortcut", std::move(shortcut));
}

Variable Residual::forward(const Variable& x) {
  Variable y = body->forward(x);
  Variable skip = shortcut ? shortcut->forward(x) : x;
  WICK_CHECK(y.shape() == skip.shape(), "Residual: the body gives ", shape_str(y.shape()), " but the shortcut ",
             shape_str(skip.shape()), " (input ", shape_str(x.shape()), ")");
  return add(y, skip);
}

}  // namespace wick
