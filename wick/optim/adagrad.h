#pragma once
// Adagrad, torch.optim.Adagrad's update (t = step count from 1):
//   g = (maximize ? -grad : grad) + weight_decay * p
//   s += g^2                      (s starts at initial_accumulator_value)
//   p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)
#include <wick/optim/optimizer.h>

namespace wick {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},
            {"lr_decay", &lr_decay},
            {"weight_decay", &weight_decay},
            {"initial_accumulator_value", &initial_accumulator_value},
            {"eps", &eps},
            {"maximize", nullptr, &maximize}};
  }
};

class Adagrad : public OptimizerWith<AdagradOptions> {
 public:
  explicit Adagrad(NamedParameters params, AdagradOptions options = {});
  explicit Adagrad(std::vector<Group> groups);
  // PyTorch-style groups: what a group does not set comes from `defaults`.
  Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
      : Adagrad(with_defaults(std::move(groups), defaults, "Adagrad")) {
    defaults_ = defaults;
  }

 protected:
  void check_options(const AdagradOptions& o) const override;
  void step_group(size_t group, const std::vector<Slot>& slots) override {
    for (const Slot& s : slots) update(group, s.param, s.grad, *s.state);
  }
  std::vector<std::string> buffer_names(size_t /*group*/) const override { return {"sum"}; }

 private:
  void update(size_t group, Tensor param, const Tensor& grad, State& state);
};

}  // namespace wick
