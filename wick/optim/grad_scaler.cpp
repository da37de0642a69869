#include <wick/optim/grad_scaler.h>

#include <cfloat>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <wick/autograd/ops.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/optim_step.h>

namespace wick {

namespace {

// Doubles below this round to a finite float32 (FLT_MAX plus half its ulp); converting a
// larger one is undefined behaviour, so every conversion of a scale is checked against it.
constexpr double kFloatOverflow = 0x1.ffffffp127;

// Whether v is a positive number float32 holds (not 0 once converted).
bool positive_float(double v) { return v > 0 && v < kFloatOverflow && static_cast<float>(v) > 0; }

void check_options(const GradScalerOptions& o) {
  WICK_CHECK(positive_float(o.init_scale), "GradScaler: init_scale must be a positive number float32 holds, got ",
             o.init_scale);
  WICK_CHECK(o.growth_factor > 1.0 && std::isfinite(o.growth_factor),
             "GradScaler: growth_factor must be > 1, got ", o.growth_factor);
  WICK_CHECK(o.backoff_factor > 0.0 && o.backoff_factor < 1.0, "GradScaler: backoff_factor must be in (0, 1), got ",
             o.backoff_factor);
  WICK_CHECK(o.growth_interval >= 1, "GradScaler: growth_interval must be >= 1, got ", o.growth_interval);
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : options_(options), scale_(positive_float(options.init_scale) ? static_cast<float>(options.init_scale) : 1.0f) {
  if (options_.enabled) check_options(options_);
}

Variable GradScaler::scale(const Variable& loss) const {
  if (!options_.enabled) return loss;
  return mul(loss, Scalar(static_cast<double>(scale_)));
}

void GradScaler::unscale_(Optimizer& opt) {
  if (!options_.enabled) return;
  PerOptimizer& s = record(&opt);
  WICK_CHECK(s.stage != Stage::Unscaled, "GradScaler::unscale_: already called for this ", opt.name(),
             " optimizer since the last update()");
  WICK_CHECK(s.stage != Stage::Stepped, "GradScaler::unscale_: called after step() for this ", opt.name(),
             " optimizer; unscale before stepping, once per update()");
  NamedParameters all;
  for (size_t g = 0; g < opt.num_groups(); ++g) all.insert(all.end(), opt.params(g).begin(), opt.params(g).end());
  unscale_grads(s, all, opt.name());
}

void GradScaler::unscale_(const std::vector<Variable>& params) {
  if (!options_.enabled) return;
  PerOptimizer& s = record(this);
  WICK_CHECK(s.stage == Stage::Ready, "GradScaler::unscale_: a parameter list was already unscaled since the last ",
             "update()");
  NamedParameters all;
  for (size_t i = 0; i < params.size(); ++i) all.emplace_back("parameter " + std::to_string(i), params[i]);
  unscale_grads(s, all, "parameter list");
}

void GradScaler::unscale_grads(PerOptimizer& s, const NamedParameters& params, const char* what) {
  // torch: the reciprocal in double, rounded to float32 (as its scale tensor holds it).
  const double inverse = 1.0 / static_cast<double>(scale_);
  const double inv_scale = inverse < kFloatOverflow ? static_cast<float>(inverse) : FLT_MAX;
  // One fused pass per device over that device's gradients.
  std::vector<std::pair<Device, std::vector<Tensor>>> by_device;
  for (const auto& [name, p] : params) {
    Variable grad = p.grad();
    if (!grad.defined()) continue;
    WICK_CHECK(grad.data().is_contiguous(), "GradScaler::unscale_: the gradient of ", name, " (",
               shape_str(grad.shape()), ", ", what, ") is not contiguous; it is unscaled in place");
    auto it = by_device.begin();
    while (it != by_device.end() && it->first != grad.device()) ++it;
    if (it == by_device.end()) it = by_device.insert(by_device.end(), {grad.device(), {}});
    it->second.push_back(grad.data());
  }
  Tensor found;
  for (const auto& [device, grads] : by_device) {
    Tensor flag = zeros({1}, Options(DType::Float32, device));
    unscale_grads_(grads, flag, inv_scale);
    found = found.defined() ? found.add_(flag.to(found.device())) : flag;
  }
  if (!found.defined()) found = zeros({1}, Options(DType::Float32));
  if (combine_) combine_(found);
  s.found_inf = found;
  s.found.reset();
  s.stage = Stage::Unscaled;
}

bool GradScaler::found_inf(PerOptimizer& s) const {
  if (!s.found) s.found = s.found_inf.to(Device::cpu()).item<float>() != 0.0f;  // one device read per step
  return *s.found;
}

bool GradScaler::step(Optimizer& opt) {
  if (!options_.enabled) {
    opt.step();
    return true;
  }
  PerOptimizer& s = record(&opt);
  WICK_CHECK(s.stage != Stage::Stepped, "GradScaler::step: already called for this ", opt.name(),
             " optimizer since the last update()");
  if (s.stage == Stage::Ready) unscale_(opt);
  const bool skip = found_inf(s);
  if (!skip) opt.step();
  s.stage = Stage::Stepped;
  return !skip;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  bool any_inf = false, any_recorded = false;
  for (auto& [opt, s] : per_optimizer_) {
    if (s.stage == Stage::Ready) continue;
    any_recorded = true;
    any_inf = found_inf(s) || any_inf;
  }
  WICK_CHECK(any_recorded, "GradScaler::update: no optimizer was unscaled or stepped since the last update()");
  if (any_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * options_.backoff_factor);
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 == options_.growth_interval) {
    const double grown = static_cast<double>(scale_) * options_.growth_factor;
    if (grown < kFloatOverflow) scale_ = static_cast<float>(grown);
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  WICK_CHECK(positive_float(new_scale),
             "GradScaler::update: the new scale must be a positive number float32 holds, got ", new_scale);
  scale_ = static_cast<float>(new_scale);
  growth_tracker_ = 0;
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return options_.enabled ? static_cast<double>(scale_) : 1.0; }

void GradScaler::set_found_inf_combiner(std::function<void(Tensor&)> combine) { combine_ = std::move(combine); }

TensorMap GradScaler::state_dict() const {
  if (!options_.enabled) return {};
  return {{"scale", scalar_tensor(static_cast<double>(scale_), DType::Float64)},
          {"growth_tracker", scalar_tensor(static_cast<double>(growth_tracker_), DType::Float64)},
          {"growth_factor", scalar_tensor(options_.growth_factor, DType::Float64)},
          {"backoff_factor", scalar_tensor(options_.backoff_factor, DType::Float64)},
          {"growth_interval", scalar_tensor(static_cast<double>(options_.growth_interval), DType::Float64)}};
}

void GradScaler::load_state_dict(const TensorMap& state) {
  if (!options_.enabled) return;
  WICK_CHECK(!state.empty(), "GradScaler::load_state_dict: the state is empty (saved from a disabled GradScaler?)");
  auto read = [&](const char* key) {
    auto it = state.find(key);
    WICK_CHECK(it != state.end(), "GradScaler::load_state_dict: no \"", key, "\" entry");
    const Tensor& t = it->second;
    WICK_CHECK(t.defined() && t.numel() == 1 && t.is_floating_point(), "GradScaler::load_state_dict: \"", key,
               "\" must be one floating point number, got ",
               t.defined() ? shape_str(t.shape()) + " " + dtype_name(t.dtype()) : "undefined");
    return t.to(Device::cpu()).to(DType::Float64).item<double>();
  };
  for (const auto& [key, t] : state)
    WICK_CHECK(key == "scale" || key == "growth_tracker" || key == "growth_factor" || key == "backoff_factor" ||
                   key == "growth_interval",
               "GradScaler::load_state_dict: unknown entry \"", key, "\"");
  GradScalerOptions o = options_;
  o.init_scale = read("scale");
  o.growth_factor = read("growth_factor");
  o.backoff_factor = read("backoff_factor");
  const double interval = read("growth_interval"), tracker = read("growth_tracker");
  WICK_CHECK(interval == std::floor(interval) && interval >= 1 && interval < 9.0e15,
             "GradScaler::load_state_dict: growth_interval must be a whole number >= 1, got ", interval);
  o.growth_interval = static_cast<int64_t>(interval);
  check_options(o);
  WICK_CHECK(tracker == std::floor(tracker) && tracker >= 0 && tracker < interval,
             "GradScaler::load_state_dict: growth_tracker must be a whole number in [0, growth_interval), got ",
             tracker);
  options_ = o;
  scale_ = static_cast<float>(o.init_scale);
  growth_tracker_ = static_cast<int64_t>(tracker);
  per_optimizer_.clear();
}

}  // namespace wick
