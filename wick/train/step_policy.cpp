#include <wick/train/step_policy.h>

#include <wick/optim/clip.h>
#include <wick/tensor/error.h>

namespace wick {

void StepPolicy::step(Optimizer* optimizer, GradScaler& scaler, const std::vector<Variable>& params,
                      double max_norm) {
  const bool steps = steps_optimizer();
  if (scaler.is_enabled()) {
    // Unscaled before clipping; every replica checks (the same gradients after the
    // reduction, or a combined flag), so the scale stays the same everywhere.
    if (steps)
      scaler.unscale_(*optimizer);
    else
      scaler.unscale_(params);
  }
  if (max_norm > 0) clip(params, max_norm);
  if (steps) {
    if (scaler.is_enabled())
      scaler.step(*optimizer);
    else
      optimizer->step();
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
