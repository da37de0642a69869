#include <wick/optim/adam.h>

#include <cmath>

#include <wick/tensor/cuda.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/optim_step.h>

namespace wick {

Adam::Adam(NamedParameters params, AdamOptions options) : Adam(std::vector<Group>{{std::move(params), options}}) {
  defaults_ = options;
}
Adam::Adam(std::vector<Group> groups) : Adam(std::move(groups), "Adam", false) {}

Adam::Adam(std::vector<Group> groups, const char* name, bool decoupled)
    : OptimizerWith(std::move(groups), name), decoupled_(decoupled) {
  check_all_options();
}

void Adam::check_options(const AdamOptions& o) const {
  WICK_CHECK(o.lr >= 0 && o.eps >= 0 && o.weight_decay >= 0, name_, ": lr ", o.lr, ", eps ", o.eps,
             " and weight_decay ", o.weight_decay, " must be non-negative");
  WICK_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, name_, ": betas (", o.beta1, ", ", o.beta2,
             ") must lie in [0, 1)");
}

AdamW::AdamW(NamedParameters params, AdamOptions options) : AdamW(std::vector<Group>{{std::move(params), options}}) {
  defaults_ = options;
}
AdamW::AdamW(std::vector<Group> groups) : Adam(std::move(groups), "AdamW", true) {
  defaults_ = AdamOptions{.weight_decay = 1e-2};
}

AdamHyper Adam::hyper(const AdamOptions& o) const {
  return {.lr = o.lr,
          .beta1 = o.beta1,
          .beta2 = o.beta2,
          .eps = o.eps,
          .weight_decay = o.weight_decay,
          .decoupled_weight_decay = decoupled_};
}

// Advances every slot's step count and groups the slots by it (parameters skipped at earlier
// steps, having had no gradient, are behind) and by device.
std::vector<optim_detail::Batch<AdamHyper, int64_t>> Adam::batches_by_step(const AdamOptions& o, const AdamHyper& h,
                                                                           const std::vector<Slot>& slots) {
  std::vector<optim_detail::Batch<AdamHyper, int64_t>> batches;
  for (const Slot& s : slots) {
    const auto t = static_cast<int64_t>(optim_detail::advance_step(*s.state));
    optim_detail::add_to_batch(batches, t, h, s.param, s.grad, o.maximize, *s.state);
  }
  return batches;
}

void Adam::step_group(size_t group, const std::vector<Slot>& slots) {
  const AdamOptions& o = options_[group];
  if (o.capturable && slots[0].param.is_cuda()) return step_capturable(group, slots);
  if (o.amsgrad) {
    for (const Slot& s : slots) update_amsgrad(o, s.param, s.grad, *s.state);
    return;
  }
  AdamHyper h = hyper(o);
  for (const auto& b : batches_by_step(o, h, slots)) {
    h.step = b.key;
    adam_step(b.params, b.grads, b.state, h);
  }
}

void Adam::step_capturable(size_t group, const std::vector<Slot>& slots) {
  const AdamOptions& o = options_[group];
  WICK_CHECK(!o.amsgrad, name_, ": capturable has no amsgrad (group ", group, "; amsgrad is not one fused step)");
  const AdamHyper h = hyper(o);
  const auto batches = batches_by_step(o, h, slots);
  WICK_CHECK(batches.size() == 1, name_, ": capturable steps the parameters of group ", group,
             " together, but they are at different step counts or devices (a parameter without a gradient at an ",
             "earlier step, or parameters on two devices)");
  const auto& b = batches[0];
  WICK_CHECK(b.params.size() == params(group).size(), name_, ": capturable steps every parameter of group ", group,
             ", but only ", b.params.size(), " of ", params(group).size(), " have gradients");
  const bool capturing = cuda::is_capturing(b.device.index);
  DeviceStep& d = device_steps_[group];
  if (!d.scalars.defined()) {
    WICK_CHECK(!capturing, name_, ": a capturable group's first step makes its device step count and must run ",
               "eagerly, before a CUDA graph capture (warm up with one eager step)");
    d.scalars = full({2}, static_cast<double>(b.key - 1), Options(DType::Float64, b.device));
    d.scalars.narrow(0, 1, 1).fill_(o.lr);
    d.lr = o.lr;
  } else if (d.lr != o.lr) {
    WICK_CHECK(!capturing, name_, ": the learning rate of group ", group, " changed from ", d.lr, " to ", o.lr,
               " during a CUDA graph capture; the graph reads it from the device: change it outside");
    d.scalars.narrow(0, 1, 1).fill_(o.lr);
    d.lr = o.lr;
  }
  adam_step_capturable(b.params, b.grads, b.state, h, d.scalars, d.tables);
}

void Adam::write_device_learning_rates() {
  for (auto& [group, d] : device_steps_) {
    const double lr = options_[group].lr;
    if (d.lr == lr) continue;
    WICK_CHECK(!cuda::is_capturing(d.scalars.device().index), name_,
               ": write_device_learning_rates during a CUDA graph capture would be replayed; call it between replays");
    d.scalars.narrow(0, 1, 1).fill_(lr);
    d.lr = lr;
  }
}

void Adam::update_amsgrad(const AdamOptions& o, Tensor p, const Tensor& grad, State& state) {
  double t = optim_detail::advance_step(state);
  Tensor g = optim_detail::signed_grad(grad, o.maximize);
  if (o.weight_decay != 0) {
    if (decoupled_) p.mul_(1 - o.lr * o.weight_decay);
    else g = add(g, mul(p, o.weight_decay));
  }
  Tensor& m = optim_detail::buffer(state, "exp_avg", p);
  Tensor& v = optim_detail::buffer(state, "exp_avg_sq", p);
  // torch's order of operations, as the fused kernel's (kernels/optim_math.h): lerp, addcmul,
  // the bias corrections in double, addcdiv as (value * m) / denom.
  const double w = 1 - o.beta1;
  if (std::abs(w) < 0.5) m.add_(mul(sub(g, m), w));
  else m.copy_(sub(g, mul(sub(g, m), 1 - w)));
  v.mul_(o.beta2).add_(mul(mul(g, 1 - o.beta2), g));
  Tensor& v_max = optim_detail::buffer(state, "max_exp_avg_sq", p);
  v_max.copy_(maximum(v_max, v));
  double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
  Tensor denom = add(div(sqrt(v_max), std::sqrt(bc2)), o.eps);
  p.sub_(div(mul(m, o.lr / bc1), denom));
}

}  // namespace wick
