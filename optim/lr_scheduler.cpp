#include <wick/optim/lr_scheduler.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <wick/tensor/factories.h>

namespace wick {
namespace {

Tensor scalar64(double v) { return scalar_tensor(v, DType::Float64); }

double read(const TensorMap& state, const char* who, const std::string& key) {
  auto it = state.find(key);
  WICK_CHECK(it != state.end(), who, ".load_state_dict: missing '", key, "'");
  WICK_CHECK(it->second.defined() && it->second.numel() == 1, who, ".load_state_dict: '", key, "' has shape ",
             shape_str(it->second.shape()), ", expected one element");
  return it->second.item<double>();
}

void expect_keys(const TensorMap& state, const char* who, size_t count) {
  WICK_CHECK(state.size() == count, who, ".load_state_dict: expected ", count, " entries, got ", state.size());
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, const char* name) : optimizer_(optimizer), name_(name) {
  for (size_t g = 0; g < optimizer.num_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
}

void LRScheduler::apply() {
  for (size_t g = 0; g < optimizer_.num_groups(); ++g) optimizer_.set_lr(g, lr_at(g, last_epoch_));
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

TensorMap LRScheduler::state_dict() const {
  TensorMap out{{"last_epoch", scalar64(static_cast<double>(last_epoch_))}};
  for (size_t g = 0; g < base_lrs_.size(); ++g) out["base_lr." + std::to_string(g)] = scalar64(base_lrs_[g]);
  return out;
}

void LRScheduler::load_state_dict(const TensorMap& state) {
  expect_keys(state, name_, base_lrs_.size() + 1);
  std::vector<double> base;
  for (size_t g = 0; g < base_lrs_.size(); ++g) base.push_back(read(state, name_, "base_lr." + std::to_string(g)));
  last_epoch_ = static_cast<int64_t>(read(state, name_, "last_epoch"));
  base_lrs_ = std::move(base);
  apply();
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(gamma) {
  WICK_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  apply();
}

double StepLR::lr_at(size_t group, int64_t epoch) const {
  return base_lrs_[group] * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer, "MultiStepLR"), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());  // torch accepts any order
  apply();
}

double MultiStepLR::lr_at(size_t group, int64_t epoch) const {
  auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return base_lrs_[group] * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer, "ExponentialLR"), gamma_(gamma) {
  apply();
}

double ExponentialLR::lr_at(size_t group, int64_t epoch) const {
  return base_lrs_[group] * std::pow(gamma_, static_cast<double>(epoch));
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer, "LinearLR"), start_(start_factor), end_(end_factor), total_(total_iters) {
  WICK_CHECK(start_factor > 0 && start_factor <= 1 && end_factor >= 0 && end_factor <= 1,
             "LinearLR: start_factor ", start_factor, " must lie in (0, 1] and end_factor ", end_factor,
             " in [0, 1]");
  WICK_CHECK(total_iters > 0, "LinearLR: total_iters must be positive, got ", total_iters);
  apply();
}

double LinearLR::lr_at(size_t group, int64_t epoch) const {
  double frac = static_cast<double>(std::min(epoch, total_)) / static_cast<double>(total_);
  return base_lrs_[group] * (start_ + (end_ - start_) * frac);
}

CosineWarmupLR::CosineWarmupLR(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps, double min_lr)
    : LRScheduler(optimizer, "CosineWarmupLR"), warmup_(warmup_steps), total_(total_steps), min_lr_(min_lr) {
  WICK_CHECK(warmup_steps >= 0 && total_steps > warmup_steps, "CosineWarmupLR: need 0 <= warmup_steps (",
             warmup_steps, ") < total_steps (", total_steps, ")");
  apply();
}

double CosineWarmupLR::lr_at(size_t group, int64_t epoch) const {
  double base = base_lrs_[group];
  if (epoch < warmup_) return base * static_cast<double>(epoch) / static_cast<double>(warmup_);
  double progress = std::min(1.0, static_cast<double>(epoch - warmup_) / static_cast<double>(total_ - warmup_));
  return min_lr_ + (base - min_lr_) * 0.5 * (1 + std::cos(std::numbers::pi * progress));
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, Options options)
    : LRScheduler(optimizer, "OneCycleLR"),
      max_lr_(max_lr),
      initial_lr_(max_lr / options.div_factor),
      min_lr_(max_lr / options.div_factor / options.final_div_factor),
      warmup_end_(options.pct_start * static_cast<double>(total_steps) - 1),
      total_(total_steps),
      o_(options) {
  WICK_CHECK(total_steps > 0, "OneCycleLR: total_steps must be positive, got ", total_steps);
  WICK_CHECK(o_.pct_start > 0 && o_.pct_start < 1, "OneCycleLR: pct_start must lie in (0, 1), got ", o_.pct_start);
  // The two phases must have positive length or the annealing fraction divides by zero.
  WICK_CHECK(warmup_end_ > 0 && warmup_end_ < static_cast<double>(total_steps - 1), "OneCycleLR: pct_start ",
             o_.pct_start, " leaves an empty phase over ", total_steps, " steps");
  if (o_.cycle_momentum) {
    // torch cycles betas[0] when the optimizer has betas, else momentum.
    for (const char* candidate : {"beta1", "momentum"})
      if (momentum_name_.empty() && optimizer.has_hyper_parameter(0, candidate)) momentum_name_ = candidate;
    WICK_CHECK(!momentum_name_.empty(), "OneCycleLR: cycle_momentum needs an optimizer with a 'beta1' or "
               "'momentum' hyper-parameter, but ", optimizer.name(), " has neither (set cycle_momentum = false)");
    WICK_CHECK(o_.base_momentum >= 0 && o_.base_momentum <= o_.max_momentum && o_.max_momentum < 1,
               "OneCycleLR: need 0 <= base_momentum (", o_.base_momentum, ") <= max_momentum (", o_.max_momentum,
               ") < 1");
  }
  apply();
}

double OneCycleLR::at(int64_t epoch, double phase1_start, double peak, double phase2_end) const {
  WICK_CHECK(epoch <= total_, "OneCycleLR: stepped ", epoch, " times, past total_steps ", total_);
  auto anneal = [](double from, double to, double pct) {
    return to + (from - to) / 2 * (std::cos(std::numbers::pi * pct) + 1);
  };
  double e = static_cast<double>(epoch);
  if (e <= warmup_end_) return anneal(phase1_start, peak, e / warmup_end_);
  return anneal(peak, phase2_end, (e - warmup_end_) / (static_cast<double>(total_ - 1) - warmup_end_));
}

double OneCycleLR::lr_at(size_t, int64_t epoch) const { return at(epoch, initial_lr_, max_lr_, min_lr_); }

double OneCycleLR::momentum_at(int64_t epoch) const {
  return at(epoch, o_.max_momentum, o_.base_momentum, o_.max_momentum);
}

void OneCycleLR::apply() {
  LRScheduler::apply();
  if (momentum_name_.empty()) return;
  double m = momentum_at(last_epoch_);
  for (size_t g = 0; g < optimizer_.num_groups(); ++g) optimizer_.set_hyper_parameter(g, momentum_name_, m);
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, Options options)
    : optimizer_(optimizer),
      o_(options),
      best_(options.mode == Mode::Min ? std::numeric_limits<double>::infinity()
                                      : -std::numeric_limits<double>::infinity()) {
  WICK_CHECK(o_.factor > 0 && o_.factor < 1, "ReduceLROnPlateau: factor must lie in (0, 1), got ", o_.factor);
  WICK_CHECK(o_.patience >= 0 && o_.cooldown >= 0, "ReduceLROnPlateau: patience ", o_.patience, " and cooldown ",
             o_.cooldown, " must be non-negative");
  WICK_CHECK(o_.threshold >= 0, "ReduceLROnPlateau: threshold must be non-negative, got ", o_.threshold);
}

bool ReduceLROnPlateau::improves(double metric) const {
  const bool rel = o_.threshold_mode == ThresholdMode::Rel;
  if (o_.mode == Mode::Min) return metric < (rel ? best_ * (1 - o_.threshold) : best_ - o_.threshold);
  return metric > (rel ? best_ * (1 + o_.threshold) : best_ + o_.threshold);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (improves(metric)) {
    best_ = metric;
    num_bad_ = 0;
  } else {
    ++num_bad_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_ = 0;
  }
  if (num_bad_ > o_.patience) {
    for (size_t g = 0; g < optimizer_.num_groups(); ++g) {
      double old_lr = optimizer_.lr(g), new_lr = std::max(old_lr * o_.factor, o_.min_lr);
      if (old_lr - new_lr > o_.eps) optimizer_.set_lr(g, new_lr);
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_ = 0;
  }
}

TensorMap ReduceLROnPlateau::state_dict() const {
  return {{"best", scalar64(best_)},
          {"num_bad_epochs", scalar64(static_cast<double>(num_bad_))},
          {"cooldown_counter", scalar64(static_cast<double>(cooldown_counter_))},
          {"last_epoch", scalar64(static_cast<double>(last_epoch_))}};
}

void ReduceLROnPlateau::load_state_dict(const TensorMap& state) {
  const char* who = "ReduceLROnPlateau";
  expect_keys(state, who, 4);
  double best = read(state, who, "best");
  auto bad = static_cast<int64_t>(read(state, who, "num_bad_epochs"));
  auto cool = static_cast<int64_t>(read(state, who, "cooldown_counter"));
  last_epoch_ = static_cast<int64_t>(read(state, who, "last_epoch"));
  best_ = best;
  num_bad_ = bad;
  cooldown_counter_ = cool;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingLR"), t_max_(t_max), eta_min_(eta_min) {
  WICK_CHECK(t_max > 0, "CosineAnnealingLR: T_max must be positive, got ", t_max);
  apply();
}

double CosineAnnealingLR::lr_at(size_t group, int64_t epoch) const {
  const double pi = 3.14159265358979323846;
  return eta_min_ + (base_lrs_[group] - eta_min_) * (1 + std::cos(pi * static_cast<double>(epoch) / t_max_)) / 2;
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t t_0, int64_t t_mult,
                                                         double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingWarmRestarts"), t_0_(t_0), t_mult_(t_mult), eta_min_(eta_min) {
  WICK_CHECK(t_0 > 0, "CosineAnnealingWarmRestarts: T_0 must be positive, got ", t_0);
  WICK_CHECK(t_mult >= 1, "CosineAnnealingWarmRestarts: T_mult must be at least 1, got ", t_mult);
  apply();
}

double CosineAnnealingWarmRestarts::lr_at(size_t group, int64_t epoch) const {
  // The period epoch falls in: T_0, T_0 T_mult, T_0 T_mult^2... long.
  int64_t start = 0, length = t_0_;
  while (epoch >= start + length) {
    start += length;
    length *= t_mult_;
  }
  const double pi = 3.14159265358979323846;
  const double t = static_cast<double>(epoch - start) / static_cast<double>(length);
  return eta_min_ + (base_lrs_[group] - eta_min_) * (1 + std::cos(pi * t)) / 2;
}

LambdaLR::LambdaLR(Optimizer& optimizer, Factor factor)
    : LambdaLR(optimizer, std::vector<Factor>(optimizer.num_groups(), factor), "LambdaLR") {
  apply();
}
LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Factor> per_group)
    : LambdaLR(optimizer, std::move(per_group), "LambdaLR") {
  apply();
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Factor> per_group, const char* name)
    : LRScheduler(optimizer, name), factors_(std::move(per_group)) {
  WICK_CHECK(factors_.size() == optimizer.num_groups(), name, ": ", factors_.size(), " functions for ",
             optimizer.num_groups(), " parameter groups");
  for (const Factor& f : factors_) WICK_CHECK(static_cast<bool>(f), name, ": a factor function is empty");
}

double LambdaLR::lr_at(size_t group, int64_t epoch) const { return base_lrs_[group] * factors_[group](epoch); }

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Factor factor)
    : LambdaLR(optimizer, std::vector<Factor>(optimizer.num_groups(), factor), "MultiplicativeLR") {
  apply();
}

double MultiplicativeLR::lr_at(size_t group, int64_t epoch) const {
  double lr = base_lrs_[group];
  for (int64_t e = 1; e <= epoch; ++e) lr *= factors_[group](e);
  return lr;
}

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer, "PolynomialLR"), total_(total_iters), power_(power) {
  WICK_CHECK(total_iters > 0, "PolynomialLR: total_iters must be positive, got ", total_iters);
  apply();
}

double PolynomialLR::lr_at(size_t group, int64_t epoch) const {
  const double done = static_cast<double>(std::min(epoch, total_)) / static_cast<double>(total_);
  return base_lrs_[group] * std::pow(1.0 - done, power_);
}

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer, "ConstantLR"), factor_(factor), total_(total_iters) {
  WICK_CHECK(factor >= 0 && factor <= 1, "ConstantLR: factor must be in [0, 1], got ", factor);
  apply();
}

double ConstantLR::lr_at(size_t group, int64_t epoch) const { return base_lrs_[group] * (epoch < total_ ? factor_ : 1.0); }

}  // namespace wick
