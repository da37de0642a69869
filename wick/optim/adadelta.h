#pragma once
// Adadelta (Zeiler 2012), torch.optim.Adadelta's update and defaults:
//   g = (maximize ? -grad : grad) + weight_decay * p
//   v = rho * v + (1 - rho) * g^2                          (square_avg)
//   d = sqrt(u + eps) / sqrt(v + eps) * g
//   u = rho * u + (1 - rho) * d^2                          (acc_delta)
//   p -= lr * d
// Each parameter is updated with tensor ops (no fused kernel), on any device.
#include <wick/optim/optimizer.h>

namespace wick {

struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},
            {"rho", &rho},
            {"eps", &eps},
            {"weight_decay", &weight_decay},
            {"maximize", nullptr, &maximize}};
  }
};

class Adadelta : public OptimizerWith<AdadeltaOptions> {
 public:
  explicit Adadelta(NamedParameters params, AdadeltaOptions options = {});
  explicit Adadelta(std::vector<Group> groups);
  // PyTorch-style groups: what a group does not set comes from `defaults`.
  Adadelta(std::vector<ParamGroup> groups, AdadeltaOptions defaults)
      : Adadelta(with_defaults(std::move(groups), defaults, "Adadelta")) {
    defaults_ = defaults;
  }

 protected:
  void check_options(const AdadeltaOptions& o) const override;
  void step_group(size_t group, const std::vector<Slot>& slots) override {
    for (const Slot& s : slots) update(group, s.param, s.grad, *s.state);
  }
  std::vector<std::string> buffer_names(size_t /*group*/) const override { return {"square_avg", "acc_delta"}; }

 private:
  void update(size_t group, Tensor param, const Tensor& grad, State& state);
};

}  // namespace wick
