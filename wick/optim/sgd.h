#pragma once
// Stochastic gradient descent with momentum, dampening, Nesterov and L2 weight decay,
// torch.optim.SGD's update:
//   g = (maximize ? -grad : grad) + weight_decay * p
//   momentum != 0:  b = g at the first step, else b = momentum * b + (1 - dampening) * g
//                   g = nesterov ? g + momentum * b : b
//   p -= lr * g
// A step is one fused multi-tensor launch (wick/tensor/optim_step.h) per device of a group (two
// where only some parameters already have a momentum buffer). Parameters must be contiguous.
// With maximize the gradients are negated into temporaries before the launch.
#include <wick/optim/optimizer.h>

namespace wick {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},
            {"momentum", &momentum},
            {"dampening", &dampening},
            {"weight_decay", &weight_decay},
            {"nesterov", nullptr, &nesterov},
            {"maximize", nullptr, &maximize}};
  }
};

class SGD : public OptimizerWith<SGDOptions> {
 public:
  explicit SGD(NamedParameters params, SGDOptions options = {});
  explicit SGD(std::vector<Group> groups);
  // PyTorch-style groups: what a group does not set comes from `defaults`.
  SGD(std::vector<ParamGroup> groups, SGDOptions defaults) : SGD(with_defaults(std::move(groups), defaults, "SGD")) {
    defaults_ = defaults;
  }

 protected:
  void check_options(const SGDOptions& o) const override;
  void step_group(size_t group, const std::vector<Slot>& slots) override;
  std::vector<std::string> buffer_names(size_t /*group*/) const override { return {"momentum_buffer"}; }
};

}  // namespace wick
