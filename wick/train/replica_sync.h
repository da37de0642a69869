#pragma once
// ReplicaSync: what one pass of the training loop needs from the other replicas of a
// data-parallel run. A single device needs nothing (SingleReplica); the local and the
// distributed data-parallel loops implement it over a Communicator (distributed/), so one
// copy of the epoch logic (Trainer) serves all three.
#include <cstdint>
#include <vector>

#include <wick/optim/clip.h>
#include <wick/tensor/safetensors.h>

namespace wick {

// Divides the defined gradients of `params` by `count` (sums over examples to means). A
// count of 0 (no replica had an example) leaves them as they are: zeros, not 0 / 0.
void divide_gradients(const std::vector<Variable>& params, double count);

class ReplicaSync {
 public:
  virtual ~ReplicaSync() = default;
  virtual int64_t world_size() const = 0;
  // Element-wise sum over replicas (loss sums, example counts); every replica gets it.
  virtual std::vector<double> sum(std::vector<double> values) = 0;
  // The largest `value` over replicas (the number of batch rounds of an epoch).
  virtual int64_t max(int64_t value) = 0;
  // The next backward ends an accumulation group with `examples` examples on this replica
  // (its earlier micro-batches' and the coming one's): gradients may start their reduction
  // from hooks as soon as they are final.
  virtual void arm_gradient_sync(double examples) = 0;
  // After arm_gradient_sync: the group's example count summed over replicas, as a 0-d
  // float64 tensor on the gradients' device, ready for the current stream, when this sync
  // delivers the plain sum of what the backward seeds (data parallelism, which reduces the
  // count from arm_gradient_sync on, while the forward runs). The Trainer then seeds a group
  // of one micro-batch with n / count, so the reduced gradients are the mean and nothing
  // scales them afterwards. Undefined otherwise.
  virtual Tensor group_examples() { return {}; }
  // Optional: starts what finish_gradient_sync would wait for and returns at once, so
  // that the reduction overlaps other work (Heat's non-blocking DataParallelOptimizer);
  // finish_gradient_sync, called later, then only waits.
  virtual void launch_gradient_sync() {}
  // Makes every parameter's grad the mean over the group's examples on all replicas and
  // waits for it: the sum over replicas (a replica that ran no backward contributes zeros),
  // divided by the group's example count summed over replicas unless `means` says the
  // backward's seed did that already (group_examples). `params` are the Trainer's (the
  // module's); a sync that knows its parameters, or a model spread over several processes,
  // covers all of its own. Each sync divides where it is cheapest (data parallelism: once
  // over each reduced bucket).
  virtual void finish_gradient_sync(const std::vector<Variable>& params, bool means) = 0;
  // Clips the gradients of `params` to a total 2-norm of max_norm (for a model spread over
  // several processes: the norm over all of them).
  virtual void clip_gradients(const std::vector<Variable>& params, double max_norm) {
    clip_grad_norm_(params, max_norm);
  }
  // Called after the optimizer step of the replicas that step (see steps_optimizer).
  virtual void after_step() {}
  // Around each training epoch: the number of optimizer steps it will take (the same on
  // every replica), and after it, its loss averaged over all replicas. For schemes that
  // change their behaviour per epoch (DASO).
  virtual void start_epoch(int64_t /*steps*/) {}
  virtual void end_epoch(double /*mean_loss*/) {}
  // State that a checkpoint must hold for an exact resume (keys without prefix; empty for
  // syncs without state). load_state_dict refuses a state this sync does not have.
  virtual TensorMap state_dict() const { return {}; }
  virtual void load_state_dict(const TensorMap& state) {
    if (!state.empty())
      throw Error("load_state_dict: the checkpoint holds the state of another data-parallel scheme (key 'sync." +
                  state.begin()->first + "'), this run has none");
  }
  // Whether this replica runs the optimizer itself (otherwise after_step brings it the
  // stepped parameters).
  virtual bool steps_optimizer() const { return true; }
};

class SingleReplica final : public ReplicaSync {
 public:
  int64_t world_size() const override { return 1; }
  std::vector<double> sum(std::vector<double> values) override { return values; }
  int64_t max(int64_t value) override { return value; }
  void arm_gradient_sync(double examples) override { examples_ = examples; }
  void finish_gradient_sync(const std::vector<Variable>& params, bool means) override {
    if (!means) divide_gradients(params, examples_);
  }

 private:
  double examples_ = 0;
};

}  // namespace wick
