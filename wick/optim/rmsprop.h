#pragma once
// RMSprop, torch.optim.RMSprop's update:
//   g = (maximize ? -grad : grad) + weight_decay * p
//   s = alpha * s + (1 - alpha) * g^2
//   centered: a = alpha * a + (1 - alpha) * g;  d = sqrt(s - a^2) + eps,  else d = sqrt(s) + eps
//   momentum > 0: b = momentum * b + g / d;  p -= lr * b,  else p -= lr * g / d
#include <wick/optim/optimizer.h>

namespace wick {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},
            {"alpha", &alpha},
            {"eps", &eps},
            {"weight_decay", &weight_decay},
            {"momentum", &momentum},
            {"centered", nullptr, &centered},
            {"maximize", nullptr, &maximize}};
  }
};

class RMSprop : public OptimizerWith<RMSpropOptions> {
 public:
  explicit RMSprop(NamedParameters params, RMSpropOptions options = {});
  explicit RMSprop(std::vector<Group> groups);
  // PyTorch-style groups: what a group does not set comes from `defaults`.
  RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
      : RMSprop(with_defaults(std::move(groups), defaults, "RMSprop")) {
    defaults_ = defaults;
  }

 protected:
  void check_options(const RMSpropOptions& o) const override;
  // One fused step per device (rmsprop_step, wick/tensor/optim_step.h).
  void step_group(size_t group, const std::vector<Slot>& slots) override;
  std::vector<std::string> buffer_names(size_t /*group*/) const override {
    return {"square_avg", "grad_avg", "momentum_buffer"};
  }
};

}  // namespace wick
