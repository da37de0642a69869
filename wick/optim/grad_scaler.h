#pragma once
// GradScaler: loss scaling for float16 (and, if wanted, bfloat16) training, with the
// semantics of torch.amp.GradScaler. The loss is multiplied by a large scale before backward
// so that small gradients survive in 16 bits; before the step the gradients are divided by
// it in one fused pass (wick/tensor/optim_step.h unscale_grads_) that also notes any inf or NaN,
// and a step with one is skipped. The scale halves after such a step and doubles after
// growth_interval clean steps in a row.
//
//   GradScaler scaler;
//   {
//     AutocastGuard autocast(Device::cuda(), DType::Float16);
//     loss = loss_fn(model.forward(x), y);
//   }
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);                      // optional: to clip true gradients
//   clip_grad_norm_(model.parameters(), 1.0);
//   scaler.step(opt);                          // skipped when a gradient was inf/NaN
//   scaler.update();
//
// Deciding a skip reads one flag per optimizer from the device (torch does the same).
// Replicas whose gradients differ (pipeline stages, DASO between syncs) must agree on the
// skip: set_found_inf_combiner() is given the flag before anyone decides (all-reduce it with
// max). After a data-parallel all-reduce the gradients, and so the flags, are already equal.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <wick/optim/optimizer.h>
#include <wick/tensor/safetensors.h>

namespace wick {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;  // disabled: scale() returns the loss, step() just steps
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale (in the loss's dtype).
  Variable scale(const Variable& loss) const;
  // Divides the gradients of every parameter of `opt` by the scale, in place, noting whether
  // any was inf or NaN. At most once per optimizer between update()s, and not after step().
  void unscale_(Optimizer& opt);
  // The same for parameters no optimizer steps here (a data-parallel replica whose driver
  // steps for it): their gradients are unscaled and checked, and update() counts the result.
  // At most once between update()s.
  void unscale_(const std::vector<Variable>& params);
  // unscale_(opt) unless done, then opt.step() unless an inf or NaN was found. Returns whether
  // the optimizer stepped. Once per optimizer between update()s.
  bool step(Optimizer& opt);
  // The next scale: x backoff_factor when any optimizer since the last update found an inf
  // or NaN, x growth_factor after growth_interval clean updates in a row (kept if that would
  // overflow float32). Throws when no optimizer was unscaled since the last update.
  void update();
  // Sets the scale (and restarts the growth count) instead.
  void update(double new_scale);

  // The current scale (1 when disabled), as float32 holds it.
  double get_scale() const;
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }

  // Called with each optimizer's flag (float32 [1] on its gradients' device: 1 where this
  // replica found an inf or NaN) before the skip is decided; it must make every replica's
  // flag the same (an all-reduce with max).
  void set_found_inf_combiner(std::function<void(Tensor& found_inf)> combine);

  // "scale", "growth_tracker" and the options, as 0-d float64 tensors (empty when disabled,
  // as torch's). load_state_dict checks every entry before changing anything.
  TensorMap state_dict() const;
  void load_state_dict(const TensorMap& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    Tensor found_inf;           // float32 [1]
    std::optional<bool> found;  // found_inf read back (step and update both ask)
  };

  // The record of an optimizer (or of this scaler, for the parameter-list unscale_).
  PerOptimizer& record(const void* owner) { return per_optimizer_[owner]; }
  void unscale_grads(PerOptimizer& s, const NamedParameters& params, const char* what);
  bool found_inf(PerOptimizer& s) const;

  GradScalerOptions options_;
  float scale_;
  int64_t growth_tracker_ = 0;
  std::function<void(Tensor&)> combine_;
  std::map<const void*, PerOptimizer> per_optimizer_;
};

}  // namespace wick
