#include <wick/train/step_policy.h>

#include <wick/optim/clip.h>
#include <wick/tensor/error.h>

namespace wick {

void StepPolicy::step(Optimizer* optimizer, GradScaler& scaler, const std::vector<Variable>& params, double max_norm) {
  Optimizer* stepped = optimizer_to_step(optimizer, scaler.get_scale());
  if (scaler.is_enabled()) {
    // Unscaled before clipping; every replica checks (the same gradients after the
    // reduction, or a combined flag), so the scale stays the same everywhere.
    if (stepped) scaler.unscale_(*stepped);
    else scaler.unscale_(params);
  }
  if (max_norm > 0) clip(params, max_norm);
  if (stepped) {
    if (scaler.is_enabled()) scaler.step(*stepped);
    else stepped->step();
  }
  after_step();
  scaler.update();
}

void StepPolicy::clip(const std::vector<Variable>& params, double max_norm) { clip_grad_norm_(params, max_norm); }

void StepPolicy::load_state_dict(const TensorMap& state) {
  if (!state.empty())
    throw Error("load_state_dict: the checkpoint holds the state of another data-parallel scheme (key 'sync." +
                state.begin()->first + "'), this run has none");
}

}  // namespace wick
