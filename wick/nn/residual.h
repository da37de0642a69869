#pragma once
// Residual: y = body(x) + shortcut(x), the shortcut being the identity unless given (e.g. a
// strided 1x1 convolution where the body changes the shape). Children "body", "shortcut".
#include <memory>

#include <wick/nn/module.h>

namespace wick {

class Residual : public UnaryModule {
 public:
  explicit Residual(std::shared_ptr<UnaryModule> body, std::shared_ptr<UnaryModule> shortcut = nullptr);
  const char* type_name() const override { return "Residual"; }
  Variable forward(const Variable& x) override;

  std::shared_ptr<UnaryModule> body, shortcut;
};

}  // namespace wick
