#pragma once
// Trainer: one pass over a batch stream, training or evaluating, on one replica. The
// single-device loop, the local data-parallel loop and the distributed driver/follower all
// run their epochs through it; what differs between them is the ReplicaSync.
//
// Training, per batch: forward, loss, backward seeded with the batch's example count (so
// gradients are sums over examples); every `accumulate` batches (and after the last one,
// so an incomplete group still counts) the gradients are summed over replicas and divided
// by the group's example count over all replicas (both by the sync:
// ReplicaSync::finish_gradient_sync), optionally clipped, and the optimizer steps. When a
// group is one batch and the sync knows the group's count over replicas before the
// backward (data parallelism: it is reduced from arm_gradient_sync on, while the forward
// runs), the seed is the batch's count divided by it instead, so the reduced gradients are
// the mean with no pass over them. That makes N replicas on batches of B the same as one
// replica on batches of N*B.
// Replicas may have different numbers of batches: an epoch runs as many rounds as the
// replica with the most batches has (one small collective per epoch), and a replica that
// has run out takes part with zero gradients until every replica is done. The example
// count of a step is reduced together with its gradients.
#include <functional>
#include <optional>
#include <string>

#include <wick/data/batch_source.h>
#include <wick/optim/grad_scaler.h>
#include <wick/optim/optimizer.h>
#include <wick/train/epoch_stats.h>
#include <wick/train/progress.h>
#include <wick/train/replica_sync.h>
#include <wick/train/supervised_model.h>

namespace wick {

struct BatchReport {
  int64_t epoch;
  int64_t batch;     // this replica's batch index in the epoch
  int64_t examples;  // in this batch
  double loss;       // mean loss of this batch
};

// The dtype training computes in (docs/mixed_precision.md): float32, or the forward (and
// evaluation) under an AutocastGuard of bfloat16 or float16 on the parameters' device, the
// parameters staying float32. Float16 also scales the loss (GradScaler: a step whose
// gradients hold an inf or NaN is skipped on every replica, and the scale adapts).
enum class Precision { Float32, BFloat16, Float16 };
// "fp32" / "float32", "bf16" / "bfloat16", "fp16" / "float16"; throws wick::Error otherwise.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);  // "fp32", "bf16", "fp16"

struct TrainerOptions {
  int64_t accumulate = 1;       // batches per optimizer step (gradient accumulation)
  double clip_grad_norm = 0;    // max global gradient norm; 0: no clipping
  Progress::Style progress = Progress::Style::Auto;
  // false: Heat's non-blocking DataParallelOptimizer. The gradient reduction of a step is
  // launched and the step itself deferred until the next batch has been loaded, just
  // before its forward uses the parameters (or the epoch's end), so the reduction overlaps
  // the data loading. The parameters are the same as with blocking steps.
  bool blocking = true;
  // Called after every training batch (reads the loss, so it syncs a GPU once per batch).
  std::function<void(const BatchReport&)> on_batch;
  Precision precision = Precision::Float32;
  GradScalerOptions grad_scaler;  // with Precision::Float16 (its `enabled` is ignored)
};

class Trainer {
 public:
  // `optimizer` may be null on replicas that do not step (see ReplicaSync::steps_optimizer).
  Trainer(SupervisedModel& model, Optimizer* optimizer, ReplicaSync& sync, TrainerOptions options = {});

  // One epoch of training in train mode. Stats are summed over replicas.
  EpochStats train_epoch(BatchSource& batches, int64_t epoch);
  // One pass in eval mode without gradients. Stats are summed over replicas.
  EpochStats evaluate(BatchSource& batches, int64_t epoch);

  SupervisedModel& model() { return model_; }
  ReplicaSync& sync() { return sync_; }
  const ReplicaSync& sync() const { return sync_; }
  const TrainerOptions& options() const { return options_; }
  // The loss scaler (disabled unless the precision is Float16); its state is part of a
  // checkpoint.
  const GradScaler& grad_scaler() const { return scaler_; }
  TensorMap state_dict() const { return scaler_.state_dict(); }
  void load_state_dict(const TensorMap& state);

 private:
  // Sums this replica's stats over all replicas (one collective).
  EpochStats combine(EpochStats local, const Tensor& loss_sum, const Tensor& correct, const std::vector<Tensor>& metric_sums);
  // Has the sync make the gradients means over the group and steps; `means`: the
  // backward's seed made the reduced gradients means already (ReplicaSync::group_examples).
  void step(bool means);
  // Whether backward is seeded with the batch size (gradients summed over examples, divided
  // by the group's count by the sync) rather than back-propagating the batch mean.
  bool backprops_sums() const;

  SupervisedModel& model_;
  Optimizer* optimizer_;
  ReplicaSync& sync_;
  TrainerOptions options_;
  GradScaler scaler_;
};

}  // namespace wick
