#pragma once
// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning"), as the
// PyTorch-ecosystem references (timm's Lamb, pytorch-lamb) define it, with bias correction
// and without their optional gradient pre-clipping (use clip_grad_norm_); g = grad, or -grad
// with maximize (not in those references; added like torch's optimizers have it):
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   u = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * p
//   r = ||p|| / ||u|| when both norms are > 0, else 1     (per-parameter trust ratio)
//   p -= lr * r * u
// The ratio stays a tensor, so a step makes no host round trip.
#include <wick/optim/optimizer.h>

namespace wick {

struct LambOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  double weight_decay = 0.01;
  bool maximize = false;  // ascend the objective: step with -grad
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},     {"beta1", &beta1}, {"beta2", &beta2}, {"eps", &eps}, {"weight_decay", &weight_decay},
            {"maximize", nullptr, &maximize}};
  }
};

class Lamb : public OptimizerWith<LambOptions> {
 public:
  explicit Lamb(NamedParameters params, LambOptions options = {});
  explicit Lamb(std::vector<Group> groups);
  // PyTorch-style groups: what a group does not set comes from `defaults`.
  Lamb(std::vector<ParamGroup> groups, LambOptions defaults)
      : Lamb(with_defaults(std::move(groups), defaults, "Lamb")) {
    defaults_ = defaults;
  }

 protected:
  void check_options(const LambOptions& o) const override;
  void step_group(size_t group, const std::vector<Slot>& slots) override {
    for (const Slot& s : slots) update(group, s.param, s.grad, *s.state);
  }
  std::vector<std::string> buffer_names(size_t /*group*/) const override { return {"exp_avg", "exp_avg_sq"}; }

 private:
  void update(size_t group, Tensor param, const Tensor& grad, State& state);
};

}  // namespace wick
