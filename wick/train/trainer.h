#pragma once
// Trainer: one pass over a batch stream, training or evaluating, on one replica. The
// single-device loop, the local data-parallel loop and the distributed driver/follower all
// run their epochs through it; what differs between them is the Replicas: the gradient
// reducer, the step policy and the metrics (replicas.h).
//
// Training, per batch: the step policy's before_forward (what a step left in flight that
// the forward reads), forward, loss, and the backward through the reducer, which seeds it
// so that its gradients become the mean over the step's examples on every replica; every
// `accumulate` batches (and after the last one, so an incomplete group still counts) the
// reducer finishes, and the step policy clips (optionally) and steps. That makes N replicas
// on batches of B the same as one replica on batches of N*B.
// Replicas may have different numbers of batches: an epoch runs as many rounds as the
// replica with the most batches has (one small collective per epoch), and a replica that
// has run out takes part with zero gradients until every replica is done. The example
// count of a step is reduced together with its gradients.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <wick/data/batch_source.h>
#include <wick/optim/grad_scaler.h>
#include <wick/optim/optimizer.h>
#include <wick/train/epoch_stats.h>
#include <wick/train/progress.h>
#include <wick/train/replicas.h>
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
  int64_t accumulate = 1;     // batches per optimizer step (gradient accumulation)
  double clip_grad_norm = 0;  // max global gradient norm; 0: no clipping
  Progress::Style progress = Progress::Style::Auto;
  // false: Heat's non-blocking DataParallelOptimizer. The gradient reduction of a step is
  // launched and the step itself deferred until the next batch has been loaded, just
  // before its forward uses the parameters (or the epoch's end), so the reduction overlaps
  // the data loading. The parameters are the same as with blocking steps.
  bool blocking = true;
  // Called after every `on_batch_every`-th training batch of an epoch (batch index k - 1,
  // 2k - 1, ...); each call reads that batch's loss, so it syncs a GPU once.
  std::function<void(const BatchReport&)> on_batch;
  int64_t on_batch_every = 1;
  Precision precision = Precision::Float32;
  GradScalerOptions grad_scaler;  // with Precision::Float16 (its `enabled` is ignored)
  // CUDA graphs (cuda::Graph, docs/training.md): the training step of a CUDA batch (forward,
  // loss, backward, optimizer step) is captured once, at the second batch of a shape, and
  // replayed for every later batch of that shape, its tensors copied into the captured
  // ones; the first batch, and any of another shape (a smaller last batch), run eagerly.
  // One replica, accumulate 1, blocking steps, no clipping, float32 or bfloat16, an
  // optimizer that a graph can hold (AdamW / Adam with capturable) and a model whose step
  // draws no random numbers (dropout 0): the Trainer refuses the others.
  bool cuda_graphs = false;
};

class Trainer {
 public:
  // `optimizer` may be null on replicas that do not step (see StepPolicy::steps_optimizer).
  Trainer(SupervisedModel& model, Optimizer* optimizer, Replicas replicas, TrainerOptions options = {});

  // One epoch of training in train mode. Stats are summed over replicas.
  EpochStats train_epoch(BatchSource& batches, int64_t epoch);
  // One pass in eval mode without gradients. Stats are summed over replicas.
  EpochStats evaluate(BatchSource& batches, int64_t epoch);

  SupervisedModel& model() { return model_; }
  const Replicas& replicas() const { return replicas_; }
  const TrainerOptions& options() const { return options_; }
  // The loss scaler (disabled unless the precision is Float16); its state is part of a
  // checkpoint.
  const GradScaler& grad_scaler() const { return scaler_; }
  TensorMap state_dict() const { return scaler_.state_dict(); }
  void load_state_dict(const TensorMap& state);

 private:
  // Sums this replica's stats over all replicas (one collective).
  EpochStats combine(EpochStats local, const Tensor& loss_sum, const Tensor& correct,
                     const std::vector<Tensor>& metric_sums);
  // The reducer's means, then the policy's step.
  void step();
  // cuda_graphs: the batch's forward, backward and step by a graph when one is captured for
  // its shape (capturing it at the second such batch; the result is captured_->result);
  // false when it ran none of them.
  struct CapturedStep;
  bool graphed_step(const Batch& batch, std::optional<Device> device);
  std::shared_ptr<CapturedStep> captured_;
  int64_t eager_full_batches_ = 0;  // eager steps of the captured shape so far

  SupervisedModel& model_;
  Optimizer* optimizer_;
  Replicas replicas_;
  TrainerOptions options_;
  GradScaler scaler_;
};

}  // namespace wick
