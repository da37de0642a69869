#pragma once
// StepPolicy: who steps the optimizer once the gradients are means, and what follows. One
// replica steps its own (SingleReplica); data parallelism steps every rank on the same
// reduced gradients, or only the driver, which then broadcasts its parameters
// (DataParallelSync); a pipeline's rank 0 steps its stage and has every other stage step
// with its learning rates (PipelineSync); DASO exchanges parameters across nodes after the
// steps its schedule says (DasoSync). The policy owns gradient clipping (for a model spread
// over several processes the norm is over all of them) and the state a resume needs.
#include <cstdint>
#include <string>
#include <vector>

#include <wick/optim/grad_scaler.h>
#include <wick/optim/optimizer.h>

namespace wick {

class StepPolicy {
 public:
  virtual ~StepPolicy() = default;

  // Unscales the gradients (float16), clips them to a total 2-norm of `max_norm` (0: not),
  // steps `optimizer` if this replica steps (skipped with the scaler when a gradient is not
  // finite), runs after_step and updates the scale. `params`: the replica's parameters.
  void step(Optimizer* optimizer, GradScaler& scaler, const std::vector<Variable>& params, double max_norm);

  // Whether this replica runs its optimizer (otherwise after_step brings it the stepped
  // parameters).
  virtual bool steps_optimizer() const { return true; }
  // The optimizer this replica steps: the caller's (`given`) when steps_optimizer(), else
  // none, or one of the policy's own (ShardedSync's, over this rank's slices). Float16's
  // scaler unscales the gradients of the one returned (of `params` when none), checks them
  // for inf/NaN and skips its step on one; `loss_scale` is the scale the gradients hold (1
  // without float16), for a policy whose optimizer sees only part of what .grad() shows.
  virtual Optimizer* optimizer_to_step(Optimizer* given, double /*loss_scale*/) {
    return steps_optimizer() ? given : nullptr;
  }
  // Clips the gradients of `params` to a total 2-norm of max_norm.
  virtual void clip(const std::vector<Variable>& params, double max_norm);
  // After the optimizer step of the replicas that step.
  virtual void after_step() {}
  // Before every forward (training and evaluation), once the batch is loaded: a policy whose
  // after_step left work that writes the parameters in flight, to overlap it with what
  // comes between, waits for what the forward may read (ShardedSync's all-gathers).
  virtual void before_forward() {}
  // Around each training epoch: the number of optimizer steps it will take (the same on
  // every replica), and after it, its loss averaged over all replicas. For schemes that
  // change their behaviour per epoch (DASO).
  virtual void start_epoch(int64_t /*steps*/) {}
  virtual void end_epoch(double /*mean_loss*/) {}
  // State that a checkpoint must hold for an exact resume (keys without prefix; empty for
  // policies without state). load_state_dict refuses a state this policy does not have.
  virtual TensorMap state_dict() const { return {}; }
  virtual void load_state_dict(const TensorMap& state);
  // The model's parameters (state-dict names) whose values a checkpoint keeps in files of
  // this policy's own rather than in the loop's file, given the policy's part of that
  // checkpoint (what state_dict() returned, or the state about to be loaded): the loop's
  // file leaves them out, and a loop's file without them loads, load_state_dict restoring
  // them (ShardedSync's sharded checkpoints of fully sharded units: each rank writes its
  // slices). Empty: the loop's file holds the whole model.
  virtual std::vector<std::string> checkpointed_parameters(const TensorMap& /*state*/) const { return {}; }
};

}  // namespace wick
