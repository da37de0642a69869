#pragma once
// Adam and AdamW, torch.optim.Adam / AdamW's updates (t = step count from 1, G = grad, or
// -grad with maximize):
//   Adam:  g = G + weight_decay * p                    (L2 penalty in the gradient)
//   AdamW: p *= 1 - lr * weight_decay; g = G            (decoupled weight decay)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g^2
//   amsgrad: v_max = max(v_max, v), used instead of v below
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// evaluated in torch's order of operations (m += (1 - beta1) (g - m), as lerp_; v * beta2 +
// ((1 - beta2) g) g, as addcmul_; the bias corrections in double; the step's numbers rounded
// once to the parameter's precision), so that float32 rounds as PyTorch's float32 does (see
// kernels/optim_math.h and docs/training.md).
// Without amsgrad a step is one fused multi-tensor launch (wick/tensor/optim_step.h) per device
// and step count of a group; parameters must be contiguous. The fused kernel has no amsgrad,
// which runs as tensor ops per parameter. With maximize the fused path negates the gradients
// into temporaries first.
#include <wick/optim/optimizer.h>

namespace wick {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  // AdamW's default is 1e-2
  bool amsgrad = false;
  bool maximize = false;  // ascend the objective: step with -grad
  // For CUDA graphs (cuda::Graph, torch's capturable=True): on CUDA the step count and the
  // learning rate are kept on the device and the update's numbers derived there, so that a
  // replayed step advances as an eager one; the same bits as capturable = false. A group's
  // parameters then step together (all with gradients, one dtype, no amsgrad), its first
  // step runs eagerly (before any capture), and the learning rate is read at each eager
  // step: call Adam::write_device_learning_rates() after changing it between replays. The
  // state's "step" counts eager steps only. A mode, not a hyper-parameter: not in state dicts.
  bool capturable = false;
  std::vector<HyperParameter> fields() {
    return {{"lr", &lr},
            {"beta1", &beta1},
            {"beta2", &beta2},
            {"eps", &eps},
            {"weight_decay", &weight_decay},
            {"amsgrad", nullptr, &amsgrad},
            {"maximize", nullptr, &maximize}};
  }
};

class Adam : public OptimizerWith<AdamOptions> {
 public:
  explicit Adam(NamedParameters params, AdamOptions options = {});
  explicit Adam(std::vector<Group> groups);
  // PyTorch-style groups: what a group does not set comes from `defaults`.
  Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
      : Adam(with_defaults(std::move(groups), defaults, "Adam")) {
    defaults_ = defaults;
  }

  // Writes each capturable group's learning rate where its device steps read it (done by
  // every eager step anyway); for a schedule that changes it between graph replays. Not
  // during a capture.
  void write_device_learning_rates();
  void before_graph_replay() override { write_device_learning_rates(); }

 protected:
  Adam(std::vector<Group> groups, const char* name, bool decoupled);
  void check_options(const AdamOptions& o) const override;
  void step_group(size_t group, const std::vector<Slot>& slots) override;
  std::vector<std::string> buffer_names(size_t /*group*/) const override {
    return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  }

 private:
  void update_amsgrad(const AdamOptions& o, Tensor param, const Tensor& grad, State& state);
  void step_capturable(size_t group, const std::vector<Slot>& slots);
  AdamHyper hyper(const AdamOptions& o) const;
  static std::vector<optim_detail::Batch<AdamHyper, int64_t>> batches_by_step(const AdamOptions& o, const AdamHyper& h,
                                                                              const std::vector<Slot>& slots);
  bool decoupled_;
  // Per group, for capturable steps on CUDA: {step, lr} on the device, the lr written there,
  // and the fused step's cached tables.
  struct DeviceStep {
    Tensor scalars;
    double lr = 0;
    FusedTables tables;
  };
  std::map<size_t, DeviceStep> device_steps_;
};

class AdamW : public Adam {
 public:
  explicit AdamW(NamedParameters params, AdamOptions options = {.weight_decay = 1e-2});
  explicit AdamW(std::vector<Group> groups);
  // PyTorch-style groups: what a group does not set comes from `defaults` (weight_decay 1e-2
  // unless they say otherwise).
  AdamW(std::vector<ParamGroup> groups, AdamOptions defaults = {.weight_decay = 1e-2})
      : AdamW(with_defaults(std::move(groups), defaults, "AdamW")) {
    defaults_ = defaults;
  }
};

}  // namespace wick
