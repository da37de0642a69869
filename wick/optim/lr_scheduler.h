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
//   OneCycleLR      torch's one-cycle, cosine or linear annealing (max_lr one for all groups
//                   or one per group): from max_lr / div_factor up to max_lr over the first
//                   pct_start * total_steps - 1 steps, then down to max_lr / (div_factor *
//                   final_div_factor) at total_steps - 1; three_phase goes back down to
//                   max_lr / div_factor at 2 pct_start total_steps - 2 first, then to the minimum.
//                   pct_start may be anything in [0, 1]: as torch, a phase that ends before
//                   a step is passed over, and a step that lands in a phase of length 0
//                   throws (torch divides by zero there).
//                   With cycle_momentum the momentum ("beta1" for the Adam family, else
//                   "momentum") moves the other way, max_momentum -> base_momentum -> max_momentum
//   CyclicLR        torch's cyclical lr between base_lr and max_lr (set for every group, or per
//                   group; they replace the optimizer's lr), up over step_size_up steps and down
//                   over step_size_down; the amplitude scaled by 1 (triangular), 1 / 2^(cycle - 1)
//                   (triangular2), gamma^epoch (exp_range) or a custom function; momentum
//                   cycles the other way between max_momentum and base_momentum
//   CosineAnnealingLR   eta_min + (base - eta_min) (1 + cos(pi epoch / T_max)) / 2
//   CosineAnnealingWarmRestarts  the same within each period, restarting after T_0 epochs,
//                   then T_0 T_mult, T_0 T_mult^2...
//   LambdaLR        base * f(epoch)          (one f, or one per group)
//   MultiplicativeLR  base * f(1) * ... * f(epoch)
//   PolynomialLR    base * (1 - min(epoch, total_iters) / total_iters)^power
//   ConstantLR      base * factor before total_iters, base after
// SequentialLR and ChainedScheduler combine schedules (see below); ReduceLROnPlateau watches
// a metric instead.
//
// A scheduler drives the groups the optimizer had when it was made: a group added later with
// Optimizer::add_param_group keeps its own lr until a new scheduler is made. (torch is not
// consistent here: its chainable schedulers such as StepLR scale every current group, its
// closed-form ones such as LambdaLR only the groups they saw; ReduceLROnPlateau, here as there,
// reduces every group.)
#include <functional>
#include <optional>
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
  // The lr each group's schedule starts from (torch's base_lrs).
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  const char* name() const { return name_; }
  Optimizer& optimizer() const { return optimizer_; }

  // "last_epoch" and "base_lr.<group>", 0-d float64 (SequentialLR and ChainedScheduler add
  // their schedulers' entries).
  virtual TensorMap state_dict() const;
  virtual void load_state_dict(const TensorMap& state);

 protected:
  LRScheduler(Optimizer& optimizer, const char* name);
  // Sets every group's lr (and whatever else a schedule drives) for last_epoch_; subclasses
  // call it at the end of their constructor.
  virtual void apply();
  // Makes `base` the lrs this schedule scales. SequentialLR and ChainedScheduler give every
  // schedule the first one's, as torch's schedules all start from a group's "initial_lr";
  // schedules that set the lr absolutely (CyclicLR, OneCycleLR) keep theirs.
  virtual void rebase(const std::vector<double>& base) { base_lrs_ = base; }
  // Whether lr_at sets the lr regardless of the one before (torch's non-chainable forms:
  // LambdaLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR...) rather than scaling the
  // base lr by a factor; ChainedScheduler composes the two kinds differently.
  virtual bool absolute() const { return false; }
  friend class SequentialLR;
  friend class ChainedScheduler;

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

 protected:
  bool absolute() const override { return true; }

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
  bool absolute() const override { return true; }
  // Checks the functions; the most derived constructor then calls apply().
  LambdaLR(Optimizer& optimizer, std::vector<Factor> per_group, const char* name);
  std::vector<Factor> factors_;
};

// The lr of the previous epoch times factor(epoch), from the base lr at epoch 0.
class MultiplicativeLR : public LambdaLR {
 public:
  MultiplicativeLR(Optimizer& optimizer, Factor factor);
  double lr_at(size_t group, int64_t epoch) const override;

 protected:
  bool absolute() const override { return false; }
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

 protected:
  bool absolute() const override { return true; }

 private:
  int64_t warmup_, total_;
  double min_lr_;
};

class OneCycleLR : public LRScheduler {
 public:
  enum class Anneal { Cos, Linear };
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
    // torch's anneal_strategy: "cos" (Cos) or "linear" (Linear) interpolation in each phase.
    Anneal anneal_strategy = Anneal::Cos;
    // torch's three_phase: up to max_lr, back down to max_lr / div_factor over as many steps,
    // then down to the minimum (momentum: down, up, then held at max_momentum).
    bool three_phase = false;
  };
  // max_lr: one for every group, or one per group.
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, int64_t total_steps, Options options);
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, int64_t total_steps)
      : OneCycleLR(optimizer, std::move(max_lr), total_steps, Options{}) {}
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, Options options)
      : OneCycleLR(optimizer, std::vector<double>{max_lr}, total_steps, options) {}
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps)
      : OneCycleLR(optimizer, std::vector<double>{max_lr}, total_steps, Options{}) {}
  // Both throw past total_steps, as torch does.
  double lr_at(size_t group, int64_t epoch) const override;
  double momentum_at(int64_t epoch) const;
  // The hyper-parameter cycled ("beta1" or "momentum"), empty without cycle_momentum.
  const std::string& momentum_name() const { return momentum_name_; }

 protected:
  void apply() override;
  // The base lrs are max_lr / div_factor (torch's initial_lr), whatever a sequence says.
  void rebase(const std::vector<double>&) override {}
  bool absolute() const override { return true; }

 private:
  // Where a phase ends (a step, fractional as torch's) and the lr level and momentum it
  // goes between.
  enum class Level { Initial, Max, Min };
  struct Phase {
    double end;
    Level lr_from, lr_to;
    double momentum_from, momentum_to;
  };
  // The phase `epoch` falls in and how far through it (0..1).
  const Phase& phase_at(int64_t epoch, double& pct) const;
  double anneal(double from, double to, double pct) const;
  double level(size_t group, Level l) const;
  std::vector<double> max_lrs_;
  int64_t total_;
  Options o_;
  std::vector<Phase> phases_;
  std::string momentum_name_;
};

// torch.optim.lr_scheduler.CyclicLR: every step the lr of each group moves linearly between
// its base_lr and max_lr, over step_size_up steps up then step_size_down steps down, with
// (cycle = 1 + floor(epoch / (up + down)), x = 1 + epoch / (up + down) - cycle)
//   scale = x <= r ? x / r : (x - 1) / (r - 1)        (r = up / (up + down))
//   lr = base_lr + (max_lr - base_lr) * scale * f
// where f is 1 (Triangular), 1 / 2^(cycle - 1) (Triangular2), gamma^epoch (ExpRange), or
// scale_fn(cycle) / scale_fn(epoch) (scale_mode Cycle / Iterations) when scale_fn is given.
// Constructing it sets the lr to base_lr, replacing the optimizer's. With cycle_momentum,
// momentum = max_momentum - (max_momentum - base_momentum) * scale * f, on "beta1" for the
// Adam family and "momentum" otherwise, like OneCycleLR.
class CyclicLR : public LRScheduler {
 public:
  enum class Mode { Triangular, Triangular2, ExpRange };
  enum class ScaleMode { Cycle, Iterations };
  struct Options {  // torch's defaults
    int64_t step_size_up = 2000;
    std::optional<int64_t> step_size_down;  // default: step_size_up
    Mode mode = Mode::Triangular;
    double gamma = 1.0;  // ExpRange's
    // Replaces the mode's scaling when set (torch's scale_fn and scale_mode).
    std::function<double(double)> scale_fn;
    ScaleMode scale_mode = ScaleMode::Cycle;
    bool cycle_momentum = true;
    double base_momentum = 0.8;
    double max_momentum = 0.9;
  };
  // base_lr and max_lr: one for every group, or one per group.
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr, Options options);
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr)
      : CyclicLR(optimizer, std::move(base_lr), std::move(max_lr), Options{}) {}
  CyclicLR(Optimizer& optimizer, double base_lr, double max_lr, Options options)
      : CyclicLR(optimizer, std::vector<double>{base_lr}, std::vector<double>{max_lr}, std::move(options)) {}
  CyclicLR(Optimizer& optimizer, double base_lr, double max_lr)
      : CyclicLR(optimizer, std::vector<double>{base_lr}, std::vector<double>{max_lr}, Options{}) {}
  double lr_at(size_t group, int64_t epoch) const override;
  double momentum_at(int64_t epoch) const;
  const std::string& momentum_name() const { return momentum_name_; }

 protected:
  void apply() override;
  void rebase(const std::vector<double>&) override {}  // base_lr is given
  bool absolute() const override { return true; }

 private:
  // scale * f at `epoch`: how far from base_lr towards max_lr, 0..1 for the built-in modes.
  double height(int64_t epoch) const;
  std::vector<double> max_lrs_;
  double total_size_, step_ratio_;
  Options o_;
  std::string momentum_name_;
};

// torch.optim.lr_scheduler.SequentialLR: schedulers[0] until milestones[0], then
// schedulers[1] until milestones[1]... At milestone m the next schedule restarts at its own
// epoch 0 (torch's scheduler.step(0)), so at epoch e >= m it gives its lr for e - m. Every
// schedule starts from the first one's base lrs (torch's shared initial_lr), and constructing
// the sequence resets them all to epoch 0 and applies the first one's epoch-0 lr. The
// schedulers are not owned: they must outlive the sequence, and be stepped only through it.
// Milestones must be positive and increasing (torch does not check), one fewer than the
// schedulers.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones);
  double lr_at(size_t group, int64_t epoch) const override;
  // Adds "scheduler.<i>.<key>" for each schedule's own state.
  TensorMap state_dict() const override;
  void load_state_dict(const TensorMap& state) override;

 protected:
  void apply() override;
  void rebase(const std::vector<double>& base) override;

 private:
  // The schedule in charge at `epoch` and the epoch it is at.
  std::pair<size_t, int64_t> active(int64_t epoch) const;
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
};

// torch.optim.lr_scheduler.ChainedScheduler: every step() steps each schedule in turn, each
// acting on the lr the one before left, as torch's chainable forms do. A factor schedule
// (StepLR, MultiStepLR, ExponentialLR, ConstantLR, LinearLR, PolynomialLR, MultiplicativeLR,
// CosineAnnealingLR) multiplies by f(epoch) / f(epoch - 1), f = its lr over its base lr; an
// absolute one (LambdaLR, CosineAnnealingWarmRestarts, CosineWarmupLR, CyclicLR, OneCycleLR)
// sets its own lr. So with only factor schedules the lr is base * f1(epoch) * f2(epoch) * ...
// Every schedule starts from the first one's base lrs and is reset to epoch 0. The
// optimizer is the schedulers' (all must share one). Not owned, as for SequentialLR.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<LRScheduler*> schedulers);
  double lr_at(size_t group, int64_t epoch) const override;
  // Adds "scheduler.<i>.<key>" for each schedule's own state.
  TensorMap state_dict() const override;
  void load_state_dict(const TensorMap& state) override;

 protected:
  void apply() override;
  void rebase(const std::vector<double>& base) override;

 private:
  std::vector<LRScheduler*> schedulers_;
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
