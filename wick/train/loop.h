#pragma once
// The training loop (lamp's IOLoops.epochs): epochs of training, validation every k
// epochs in eval mode, an exponentially smoothed validation loss, the model with the
// smallest smoothed validation loss kept and put back at the end, a learning curve, a
// learning-rate schedule, gradient accumulation, and a checkpoint after every epoch from
// which a run resumes exactly.
//
//   SupervisedModel model = classifier(net);
//   AdamW opt(net->named_parameters(), AdamOptions{.lr = 1e-3});
//   BatchStream train(train_set, {.batch_size = 64, .seed = 1});
//   BatchStream valid(test_set, {.batch_size = 256, .shuffle = false});
//   LoopState s = fit(model, opt, train, &valid, {.max_epochs = 10, .checkpoint_path = "run.ckpt"});
//
// The distributed driver runs the same loop (TrainingLoop's hooks tell the followers what
// to do), so single-device, local and distributed training share this logic.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <wick/data/batch_stream.h>
#include <wick/optim/factor_lr.h>
#include <wick/optim/lr_scheduler.h>
#include <wick/train/loop_state.h>
#include <wick/train/trainer.h>

namespace wick {

struct LoopOptions {
  int64_t max_epochs = 10;
  int64_t validation_frequency = 1;  // validate after every k-th epoch (and after the last)
  // s = f * loss + (1 - f) * s_previous, with 0 < f <= 1 (1: no smoothing).
  double validation_smoothing = 1.0;
  // The epochs (0-based) whose model may be returned as the best; empty: any.
  std::vector<int64_t> min_validation_epochs;
  bool restore_min_validation_model = true;
  // The learning rates' one owner, stepped after every epoch: a torch-style scheduler, or
  // lamp's factor of the epoch and the smoothed validation loss (the loop runs it as a
  // FactorLR: a factor <= 0 stops training before that epoch). The rates it gives rank 0's
  // optimizer are every rank's (as absolute values, with each epoch or step).
  LearningRateFactor lr_factor;
  LRScheduler* scheduler = nullptr;
  std::string checkpoint_path;       // written atomically after every epoch when set
  bool resume = false;               // start from checkpoint_path when that file exists
  std::string learning_curve_csv;    // rewritten after every epoch when set
  std::string learning_curve_png;
  std::string learning_curve_jsonl;  // JSON lines, rewritten after every epoch when set
  // TensorBoard event files in this folder, when set: the curve's scalars appended after
  // every epoch (events.out.tfevents.wick), and with log_every_n_steps the batch losses
  // (events.out.tfevents.wick.batches). A resumed run first drops what a run wrote after
  // the checkpoint it resumes from.
  std::string tensorboard_dir;
  // > 0: every n-th batch of an epoch, its loss (this replica's, rank 0's in a job) as
  // `train/batch_loss` at step epoch * batches per epoch + batch + 1, to TensorBoard and
  // (with log_epochs) a line on stderr. Each logged batch syncs a GPU once.
  int64_t log_every_n_steps = 0;
  std::function<void(const CurvePoint&)> on_epoch;
  bool log_epochs = true;  // one summary line per epoch on stderr
  TrainerOptions trainer;
};

class TrainingLoop {
 public:
  // `validation` may be null (no validation, no best model).
  TrainingLoop(SupervisedModel& model, Optimizer& optimizer, BatchSource& train, BatchSource* validation,
               LoopOptions options, Replicas replicas);
  virtual ~TrainingLoop() = default;
  TrainingLoop(const TrainingLoop&) = delete;
  TrainingLoop& operator=(const TrainingLoop&) = delete;

  LoopState run();

 protected:
  // Hooks for a driver of other replicas; each runs before this replica does the same.
  // After any resume, before the first epoch: the state every replica must share.
  virtual void before_first_epoch() {}
  virtual void before_train(int64_t /*epoch*/, const std::vector<double>& /*learning_rates*/) {}
  virtual void after_train(int64_t /*epoch*/) {}
  virtual void before_validate(int64_t /*epoch*/) {}
  // The other replicas' own state (their random generators) for the checkpoint, kept
  // under "replicas.", and handed back when resuming from it, before before_first_epoch().
  virtual TensorMap replica_state() const { return {}; }
  virtual void load_replica_state(const TensorMap& /*state*/) {}
  // After the loop, with the returned model in place.
  virtual void after_last_epoch() {}

  // This replica's trainer (its options, and the loss scaler's state followers must share).
  const Trainer& trainer() const { return trainer_; }

  SupervisedModel& model_;
  Optimizer& optimizer_;

 private:
  LoopOptions with_batch_log(LoopOptions options);
  void log_batch(const BatchReport& report);
  void save_checkpoint(const LoopState& state) const;
  // Loads the checkpoint when resuming and it exists; all or nothing.
  bool load_checkpoint(LoopState& state);

  BatchSource& train_;
  BatchSource* validation_;
  LoopOptions options_;
  Trainer trainer_;
  std::unique_ptr<FactorLR> factor_;  // made from options_.lr_factor
  LRScheduler* schedule_ = nullptr;   // options_.scheduler or factor_: the one owner of the rates
  StateDict best_;  // a deep copy of the best model so far
  std::unique_ptr<TensorBoardWriter> curve_events_, batch_events_;  // with tensorboard_dir
};

// Trains on one device.
LoopState fit(SupervisedModel& model, Optimizer& optimizer, BatchSource& train, BatchSource* validation,
              LoopOptions options = {});

// The model's state deep-copied (a snapshot that later steps do not change).
StateDict snapshot(const Module& module);

}  // namespace wick
