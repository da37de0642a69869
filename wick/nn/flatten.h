#pragma once
// Flatten: merges dims start_dim..end_dim into one ([N, C, H, W] -> [N, C*H*W] by default,
// keeping the batch dim as PyTorch's nn.Flatten does).
#include <wick/nn/module.h>

namespace wick {

class Flatten : public UnaryModule {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim_(start_dim), end_dim_(end_dim) {}
  const char* type_name() const override { return "Flatten"; }
  Variable forward(const Variable& x) override;

 private:
  int64_t start_dim_, end_dim_;
};

}  // namespace wick
