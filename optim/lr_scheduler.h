#pragma once
// Learning-rate schedules over an Optimizer's groups (torch.optim.lr_scheduler's semantics:
// constructing a scheduler applies the lr of epoch 0; each step() advances one epoch and sets
// every group's lr). Closed-form schedules compute lr(epoch) from each group's base lr, the
// group's lr when the scheduler was made:
//   StepLR          base * gamma^floor(epoch / step_size)
//   MultiStepLR     base * gamma^(number of milestones <= epoch)
//   ExponentialLR   base * gamma^epoch
//   LinearLR        base * (start + (end - start) * min(epoch, total_iters) / total_iters)
//   CosineWarmupLR  base * epoch / warmup for epoch < warmup, then (Hugging Face's
//                   get_cosine_schedule_with_warmup with a floor)
//                   min_lr + (base - min_lr) * (1 + cos(pi * min(1, (epoch - warmup) / (total - warmup)))) / 2
//   OneCycleLR      torch's one-cycle with cosine annealing (two phases, momentum not cycled):
//                   from max_lr / div_factor up to max_lr over the first pct_start * total_steps - 1
//                   steps, then down to max_lr / (div_factor * final_div_factor) at total_steps - 1
// ReduceLROnPlateau watches a metric instead (see below).
#include <vector>

#include <wick/optim/optimizer.h>

namespace wick {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  void step();
  int64_t last_epoch() const { return last_epoch_; }
  // The lr this schedule gives `group` at `epoch`.
  virtual double lr_at(size_t group, int64_t epoch) const = 0;

  // "last_epoch" and "base_lr.<group>", 0-d float64.
  TensorMap state_dict() const;
  void load_state_dict(const TensorMap& state);

 protected:
  LRScheduler(Optimizer& optimizer, const char* name);
  // Sets every group's lr for last_epoch_; subclasses call it at the end of their constructor.
  void apply();

  Optimizer& optimizer_;
  const char* name_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = 0;
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  double gamma_;
};

class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  double start_, end_;
  int64_t total_;
};

class CosineWarmupLR : public LRScheduler {
 public:
  CosineWarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr = 0);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  int64_t warmup_, total_;
  double min_lr_;
};

class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, double pct_start = 0.3,
             double div_factor = 25, double final_div_factor = 1e4);
  // Throws past total_steps - 1, as torch does.
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  double max_lr_, initial_lr_, min_lr_, warmup_end_;
  int64_t total_;
};

// Multiplies every group's lr by `factor` (not below min_lr) once the metric has not
// improved for more than `patience` steps; improvement means metric < best * (1 - threshold)
// (torch's mode "min", threshold_mode "rel"); after a reduction `cooldown` steps pass
// before bad steps count again. Reductions smaller than eps are skipped.
class ReduceLROnPlateau {
 public:
  struct Options {
    double factor = 0.1;
    int64_t patience = 10;
    double threshold = 1e-4;
    int64_t cooldown = 0;
    double min_lr = 0;
    double eps = 1e-8;
  };
  explicit ReduceLROnPlateau(Optimizer& optimizer, Options options);
  explicit ReduceLROnPlateau(Optimizer& optimizer) : ReduceLROnPlateau(optimizer, Options{}) {}
  void step(double metric);
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_; }

  // "best", "num_bad_epochs", "cooldown_counter", "last_epoch", 0-d float64.
  TensorMap state_dict() const;
  void load_state_dict(const TensorMap& state);

 private:
  Optimizer& optimizer_;
  Options o_;
  double best_;
  int64_t num_bad_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};

}  // namespace wick
