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

// torch's _format_param: one value for every group, or one per group.
std::vector<double> per_group(std::vector<double> values, const Optimizer& optimizer, const char* who,
                              const char* what) {
  const size_t n = optimizer.num_groups();
  WICK_CHECK(values.size() == 1 || values.size() == n, who, ": expected ", n, " values for ", what,
             " (one per parameter group) or one, got ", values.size());
  for (double v : values) WICK_CHECK(v >= 0, who, ": ", what, " ", v, " must be non-negative");
  if (values.size() == 1) values.assign(n, values[0]);
  return values;
}

// The hyper-parameter a momentum cycle drives: torch cycles betas[0] when the optimizer has
// betas, else momentum.
std::string momentum_to_cycle(const Optimizer& optimizer, const char* who, double base, double max) {
  std::string name;
  for (const char* candidate : {"beta1", "momentum"})
    if (name.empty() && optimizer.has_hyper_parameter(0, candidate)) name = candidate;
  WICK_CHECK(!name.empty(), who, ": cycle_momentum needs an optimizer with a 'beta1' or 'momentum' hyper-parameter, "
             "but ", optimizer.name(), " has neither (set cycle_momentum = false)");
  WICK_CHECK(base >= 0 && base <= max && max < 1, who, ": need 0 <= base_momentum (", base, ") <= max_momentum (",
             max, ") < 1");
  return name;
}

// The schedulers of a SequentialLR / ChainedScheduler: at least one, none null, all on
// `optimizer` (the first one's when null), which is returned.
Optimizer& check_schedulers(const std::vector<LRScheduler*>& schedulers, Optimizer* optimizer, const char* who) {
  WICK_CHECK(!schedulers.empty(), who, ": expects at least one scheduler, got none");
  for (size_t i = 0; i < schedulers.size(); ++i) WICK_CHECK(schedulers[i] != nullptr, who, ": scheduler ", i, " is null");
  Optimizer& o = optimizer ? *optimizer : schedulers[0]->optimizer();
  for (size_t i = 0; i < schedulers.size(); ++i)
    WICK_CHECK(&schedulers[i]->optimizer() == &o, who, ": scheduler ", i, " (", schedulers[i]->name(),
               ") drives another optimizer (", schedulers[i]->optimizer().name(), ") than the sequence's (", o.name(),
               ")");
  return o;
}

// A composite's own state plus "scheduler.<i>.<key>" for each of its schedulers.
TensorMap with_schedulers(TensorMap own, const std::vector<LRScheduler*>& schedulers) {
  for (size_t i = 0; i < schedulers.size(); ++i)
    for (auto& [key, t] : schedulers[i]->state_dict()) own["scheduler." + std::to_string(i) + "." + key] = t;
  return own;
}

// Splits a composite's state: its schedulers' entries are loaded into them (each checks its
// own), the rest is returned.
TensorMap load_schedulers(const TensorMap& state, const std::vector<LRScheduler*>& schedulers) {
  std::vector<TensorMap> parts(schedulers.size());
  TensorMap own;
  for (const auto& [key, t] : state) {
    size_t i = 0, dot = std::string::npos;
    if (key.rfind("scheduler.", 0) == 0 && (dot = key.find('.', 10)) != std::string::npos && dot > 10) {
      for (size_t c = 10; c < dot && i <= schedulers.size(); ++c)
        i = key[c] >= '0' && key[c] <= '9' ? i * 10 + static_cast<size_t>(key[c] - '0') : schedulers.size() + 1;
    }
    if (dot != std::string::npos && i < schedulers.size())
      parts[i][key.substr(dot + 1)] = t;
    else
      own[key] = t;
  }
  for (size_t i = 0; i < schedulers.size(); ++i) schedulers[i]->load_state_dict(parts[i]);
  return own;
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, const char* name) : optimizer_(optimizer), name_(name) {
  for (size_t g = 0; g < optimizer.num_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
}

void LRScheduler::apply() {
  // Only the groups the schedule was made for: a group added since keeps its lr.
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_lr(g, lr_at(g, last_epoch_));
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

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, int64_t total_steps, Options options)
    : LRScheduler(optimizer, "OneCycleLR"),
      max_lrs_(per_group(std::move(max_lr), optimizer, "OneCycleLR", "max_lr")),
      total_(total_steps),
      o_(options) {
  WICK_CHECK(total_steps > 0, "OneCycleLR: total_steps must be positive, got ", total_steps);
  WICK_CHECK(o_.pct_start >= 0 && o_.pct_start <= 1, "OneCycleLR: pct_start must lie in [0, 1], got ", o_.pct_start);
  WICK_CHECK(o_.div_factor > 0 && o_.final_div_factor > 0, "OneCycleLR: div_factor ", o_.div_factor,
             " and final_div_factor ", o_.final_div_factor, " must be positive");
  const double up_end = o_.pct_start * static_cast<double>(total_steps) - 1, last = static_cast<double>(total_steps - 1);
  const double hi = o_.max_momentum, lo = o_.base_momentum;
  if (o_.three_phase)
    phases_ = {{up_end, Level::Initial, Level::Max, hi, lo},
               {2 * o_.pct_start * static_cast<double>(total_steps) - 2, Level::Max, Level::Initial, lo, hi},
               {last, Level::Initial, Level::Min, hi, hi}};
  else
    phases_ = {{up_end, Level::Initial, Level::Max, hi, lo}, {last, Level::Max, Level::Min, lo, hi}};
  // As torch, phases may end before they start (a small pct_start puts the first phase's
  // end before step 0, which then falls in the next one); only a step that lands in a
  // phase of length 0 is refused, where torch divides by zero (step 0: here).
  if (o_.cycle_momentum) momentum_name_ = momentum_to_cycle(optimizer, "OneCycleLR", lo, hi);
  // torch's base lrs ("initial_lr") are where the cycle starts.
  for (size_t g = 0; g < base_lrs_.size(); ++g) base_lrs_[g] = level(g, Level::Initial);
  apply();
}

double OneCycleLR::level(size_t group, Level l) const {
  const double initial = max_lrs_[group] / o_.div_factor;
  return l == Level::Max ? max_lrs_[group] : l == Level::Initial ? initial : initial / o_.final_div_factor;
}

double OneCycleLR::anneal(double from, double to, double pct) const {
  if (o_.anneal_strategy == Anneal::Linear) return (to - from) * pct + from;
  return to + (from - to) / 2 * (std::cos(std::numbers::pi * pct) + 1);
}

const OneCycleLR::Phase& OneCycleLR::phase_at(int64_t epoch, double& pct) const {
  WICK_CHECK(epoch <= total_, "OneCycleLR: stepped ", epoch, " times, past total_steps ", total_);
  const double e = static_cast<double>(epoch);
  double start = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    if (e <= phases_[i].end || i + 1 == phases_.size()) {
      WICK_CHECK(phases_[i].end != start, "OneCycleLR: step ", epoch, " falls in phase ", i + 1,
                 ", which has no length (it ends at step ", phases_[i].end, " where it starts) with pct_start ",
                 o_.pct_start, " over ", total_, " steps", o_.three_phase ? " (three_phase)" : "");
      pct = (e - start) / (phases_[i].end - start);
      return phases_[i];
    }
    start = phases_[i].end;
  }
  return phases_.back();  // not reached
}

double OneCycleLR::lr_at(size_t group, int64_t epoch) const {
  double pct = 0;
  const Phase& p = phase_at(epoch, pct);
  return anneal(level(group, p.lr_from), level(group, p.lr_to), pct);
}

double OneCycleLR::momentum_at(int64_t epoch) const {
  double pct = 0;
  const Phase& p = phase_at(epoch, pct);
  return anneal(p.momentum_from, p.momentum_to, pct);
}

void OneCycleLR::apply() {
  LRScheduler::apply();
  if (momentum_name_.empty()) return;
  double m = momentum_at(last_epoch_);
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_hyper_parameter(g, momentum_name_, m);
}

CyclicLR::CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr, Options options)
    : LRScheduler(optimizer, "CyclicLR"),
      max_lrs_(per_group(std::move(max_lr), optimizer, "CyclicLR", "max_lr")),
      o_(std::move(options)) {
  base_lrs_ = per_group(std::move(base_lr), optimizer, "CyclicLR", "base_lr");
  const int64_t down = o_.step_size_down.value_or(o_.step_size_up);
  WICK_CHECK(o_.step_size_up > 0 && down >= 0, "CyclicLR: step_size_up ", o_.step_size_up,
             " must be positive and step_size_down ", down, " non-negative");
  total_size_ = static_cast<double>(o_.step_size_up + down);
  step_ratio_ = static_cast<double>(o_.step_size_up) / total_size_;
  if (o_.cycle_momentum) momentum_name_ = momentum_to_cycle(optimizer, "CyclicLR", o_.base_momentum, o_.max_momentum);
  apply();
}

double CyclicLR::height(int64_t epoch) const {
  const double e = static_cast<double>(epoch);
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1 + e / total_size_ - cycle;
  const double scale = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  double f = 1;
  if (o_.scale_fn)
    f = o_.scale_fn(o_.scale_mode == ScaleMode::Cycle ? cycle : e);
  else if (o_.mode == Mode::Triangular2)
    f = 1 / std::pow(2.0, cycle - 1);
  else if (o_.mode == Mode::ExpRange)
    f = std::pow(o_.gamma, e);
  return scale * f;
}

double CyclicLR::lr_at(size_t group, int64_t epoch) const {
  return base_lrs_[group] + (max_lrs_[group] - base_lrs_[group]) * height(epoch);
}

double CyclicLR::momentum_at(int64_t epoch) const {
  return o_.max_momentum - (o_.max_momentum - o_.base_momentum) * height(epoch);
}

void CyclicLR::apply() {
  LRScheduler::apply();
  if (momentum_name_.empty()) return;
  double m = momentum_at(last_epoch_);
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_hyper_parameter(g, momentum_name_, m);
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones)
    : LRScheduler(check_schedulers(schedulers, &optimizer, "SequentialLR"), "SequentialLR"),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  WICK_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: expects one milestone fewer than schedulers, got ",
             schedulers_.size(), " schedulers and ", milestones_.size(), " milestones");
  for (size_t i = 0; i < milestones_.size(); ++i)
    WICK_CHECK(milestones_[i] > (i == 0 ? 0 : milestones_[i - 1]),
               "SequentialLR: milestones must be positive and increasing, got milestone ", i, " = ", milestones_[i]);
  // torch resets every group to its initial_lr, which every schedule starts from.
  rebase(schedulers_[0]->base_lrs_);
  for (LRScheduler* s : schedulers_) s->last_epoch_ = 0;
  apply();
}

std::pair<size_t, int64_t> SequentialLR::active(int64_t epoch) const {
  auto i = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin());
  return {i, i == 0 ? epoch : epoch - milestones_[i - 1]};
}

double SequentialLR::lr_at(size_t group, int64_t epoch) const {
  auto [i, local] = active(epoch);
  return schedulers_[i]->lr_at(group, local);
}

void SequentialLR::apply() {
  auto [i, local] = active(last_epoch_);
  schedulers_[i]->last_epoch_ = local;
  schedulers_[i]->apply();
}

void SequentialLR::rebase(const std::vector<double>& base) {
  base_lrs_ = base;
  for (LRScheduler* s : schedulers_) s->rebase(base);
}

TensorMap SequentialLR::state_dict() const { return with_schedulers(LRScheduler::state_dict(), schedulers_); }

void SequentialLR::load_state_dict(const TensorMap& state) {
  LRScheduler::load_state_dict(load_schedulers(state, schedulers_));
}

ChainedScheduler::ChainedScheduler(std::vector<LRScheduler*> schedulers)
    : LRScheduler(check_schedulers(schedulers, nullptr, "ChainedScheduler"), "ChainedScheduler"),
      schedulers_(std::move(schedulers)) {
  rebase(schedulers_[0]->base_lrs_);
  apply();
}

double ChainedScheduler::lr_at(size_t group, int64_t epoch) const {
  // After the last absolute schedule only the per-step ratios of the ones behind it count;
  // without one, the ratios telescope to base * f1(epoch) * f2(epoch) * ...
  size_t first = 0;
  double lr = base_lrs_[group];
  for (size_t i = 0; i < schedulers_.size(); ++i)
    if (schedulers_[i]->absolute()) {
      first = i + 1;
      lr = schedulers_[i]->lr_at(group, epoch);
    }
  for (size_t i = first; i < schedulers_.size(); ++i) {
    const LRScheduler& s = *schedulers_[i];
    const double now = s.lr_at(group, epoch);
    const double before = first == 0 || epoch == 0 ? s.base_lrs_[group] : s.lr_at(group, epoch - 1);
    if (before != 0) lr *= now / before;
  }
  return lr;
}

void ChainedScheduler::apply() {
  // Each schedule sets what it drives (momentum too), then the lr is the chain's.
  for (LRScheduler* s : schedulers_) {
    s->last_epoch_ = last_epoch_;
    s->apply();
  }
  LRScheduler::apply();
}

void ChainedScheduler::rebase(const std::vector<double>& base) {
  base_lrs_ = base;
  for (LRScheduler* s : schedulers_) s->rebase(base);
}

TensorMap ChainedScheduler::state_dict() const { return with_schedulers(LRScheduler::state_dict(), schedulers_); }

void ChainedScheduler::load_state_dict(const TensorMap& state) {
  LRScheduler::load_state_dict(load_schedulers(state, schedulers_));
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
