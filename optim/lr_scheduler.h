#pragma once
// Learning-rate schedules over an Optimizer's groups (torch.optim.lr_scheduler's semantics:
// constructing a scheduler applies the lr of epoch 0; each step() advances one epoch and sets
// every group's lr). Closed-form schedules compute lr(epoch) from each group's base lr, the
// group's lr when the scheduler was made:
//   StepLR          base * gamma^floor(epoch / step_size)
//   MultiStepLR     base * gamma^(number of milestones <= epoch), milestones sorted, a
//                   repeated one counting twice (torch's Counter)
//   ExponentialLR   base * gamma^epoch
//   LinearLR        base * (start + (end - start) * min(epoch, total_iters) / total_iters)
//   CosineWarmupLR  base * epoch / warmup for epoch < warmup, then (Hugging Face's
//                   get_cosine_schedule_with_warmup with a floor)
//                   min_lr + (base - min_lr) * (1 + cos(pi * min(1, (epoch - warmup) / (total - warmup)))) / 2
//   OneCycleLR      torch's one-cycle with cosine annealing (two phases):
//                   from max_lr / div_factor up to max_lr over the first pct_start * total_steps - 1
//                   steps, then down to max_lr / (div_factor * final_div_factor) at total_steps - 1;
//                   with cycle_momentum the momentum ("beta1" for the Adam family, else
//                   "momentum") moves the other way, max_momentum -> base_momentum -> max_momentum
//   CosineAnnealingLR   eta_min + (base - eta_min) (1 + cos(pi epoch / T_max)) / 2
//   CosineAnnealingWarmRestarts  the same within each period, restarting after T_0 epochs,
//                   then T_0 T_mult, T_0 T_mult^2...
//   LambdaLR        base * f(epoch)          (one f, or one per group)
//   MultiplicativeLR  base * f(1) * ... * f(epoch)
//   PolynomialLR    base * (1 - min(epoch, total_iters) / total_iters)^power
//   ConstantLR      base * factor before total_iters, base after
// ReduceLROnPlateau watches a metric instead (see below).
#include <functional>
#include <string>
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
  // Sets every group's lr (and whatever else a schedule drives) for last_epoch_; subclasses
  // call it at the end of their constructor.
  virtual void apply();

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

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t t_0, int64_t t_mult = 1, double eta_min = 0);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  int64_t t_0_, t_mult_;
  double eta_min_;
};

// factor(epoch) for every group, or one function per group.
class LambdaLR : public LRScheduler {
 public:
  using Factor = std::function<double(int64_t epoch)>;
  LambdaLR(Optimizer& optimizer, Factor factor);
  LambdaLR(Optimizer& optimizer, std::vector<Factor> per_group);
  double lr_at(size_t group, int64_t epoch) const override;

 protected:
  // Checks the functions; the most derived constructor then calls apply().
  LambdaLR(Optimizer& optimizer, std::vector<Factor> per_group, const char* name);
  std::vector<Factor> factors_;
};

// The lr of the previous epoch times factor(epoch), from the base lr at epoch 0.
class MultiplicativeLR : public LambdaLR {
 public:
  MultiplicativeLR(Optimizer& optimizer, Factor factor);
  double lr_at(size_t group, int64_t epoch) const override;
};

class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  int64_t total_;
  double power_;
};

class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);
  double lr_at(size_t group, int64_t epoch) const override;

 private:
  double factor_;
  int64_t total_;
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
  // torch.optim.lr_scheduler.OneCycleLR's defaults (anneal_strategy "cos", three_phase off).
  struct Options {
    double pct_start = 0.3;
    double div_factor = 25;
    double final_div_factor = 1e4;
    // Needs an optimizer with a "beta1" or a "momentum" hyper-parameter (Adagrad has
    // neither: turn it off there). Like torch, it overrides the momentum the optimizer was
    // made with, from the first step on.
    bool cycle_momentum = true;
    double base_momentum = 0.85;
    double max_momentum = 0.95;
  };
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, Options options);
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps)
      : OneCycleLR(optimizer, max_lr, total_steps, Options{}) {}
  // Both throw past total_steps, as torch does.
  double lr_at(size_t group, int64_t epoch) const override;
  double momentum_at(int64_t epoch) const;
  // The hyper-parameter cycled ("beta1" or "momentum"), empty without cycle_momentum.
  const std::string& momentum_name() const { return momentum_name_; }

 protected:
  void apply() override;

 private:
  // The value at `epoch` of the two-phase cosine cycle phase1_start -> peak -> phase2_end.
  double at(int64_t epoch, double phase1_start, double peak, double phase2_end) const;
  double max_lr_, initial_lr_, min_lr_, warmup_end_;
  int64_t total_;
  Options o_;
  std::string momentum_name_;
};

// Multiplies every group's lr by `factor` (not below min_lr) once the metric has not
// improved for more than `patience` steps; after a reduction `cooldown` steps pass before
// bad steps count again. Reductions smaller than eps are skipped. Improvement, as torch
// defines it:
//   mode Min, threshold_mode Rel:  metric < best * (1 - threshold)   (the defaults: a loss)
//   mode Min, threshold_mode Abs:  metric < best - threshold
//   mode Max, threshold_mode Rel:  metric > best * (1 + threshold)   (an accuracy)
//   mode Max, threshold_mode Abs:  metric > best + threshold
class ReduceLROnPlateau {
 public:
  enum class Mode { Min, Max };
  enum class ThresholdMode { Rel, Abs };
  struct Options {
    Mode mode = Mode::Min;
    ThresholdMode threshold_mode = ThresholdMode::Rel;
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
  // The best metric so far: +infinity (Min) or -infinity (Max) before the first step.
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_; }

  // "best", "num_bad_epochs", "cooldown_counter", "last_epoch", 0-d float64.
  TensorMap state_dict() const;
  void load_state_dict(const TensorMap& state);

 private:
  bool improves(double metric) const;
  Optimizer& optimizer_;
  Options o_;
  double best_;
  int64_t num_bad_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};

}  // namespace wick
