#include <wick/optim/adam.h>

#include <cmath>

#include <wick/tensor/elementwise.h>
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

void Adam::step_group(size_t group, const std::vector<Slot>& slots) {
  const AdamOptions& o = options_[group];
  if (o.amsgrad) {
    for (const Slot& s : slots) update_amsgrad(o, s.param, s.grad, *s.state);
    return;
  }
  // Parameters skipped at earlier steps (no gradient) have smaller step counts.
  std::vector<optim_detail::Batch<int64_t>> batches;
  for (const Slot& s : slots) {
    auto t = static_cast<int64_t>(optim_detail::advance_step(*s.state));
    auto& b = optim_detail::batch_for(batches, t, s.param.device());
    b.params.push_back(s.param);
    b.grads.push_back(optim_detail::signed_grad(s.grad, o.maximize));
    b.buffers_a.push_back(optim_detail::buffer(*s.state, "exp_avg", s.param));
    b.buffers_b.push_back(optim_detail::buffer(*s.state, "exp_avg_sq", s.param));
  }
  for (const auto& b : batches)
    adam_step(b.params, b.grads, b.buffers_a, b.buffers_b,
              AdamHyper{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay,
                        .step = b.key, .decoupled_weight_decay = decoupled_});
}

void Adam::update_amsgrad(const AdamOptions& o, Tensor p, const Tensor& grad, State& state) {
  double t = optim_detail::advance_step(state);
  Tensor g = optim_detail::signed_grad(grad, o.maximize);
  if (o.weight_decay != 0) {
    if (decoupled_)
      p.mul_(1 - o.lr * o.weight_decay);
    else
      g = add(g, mul(p, o.weight_decay));
  }
  Tensor& m = optim_detail::buffer(state, "exp_avg", p);
  Tensor& v = optim_detail::buffer(state, "exp_avg_sq", p);
  m.mul_(o.beta1).add_(mul(g, 1 - o.beta1));
  v.mul_(o.beta2).add_(mul(mul(g, g), 1 - o.beta2));
  Tensor& v_max = optim_detail::buffer(state, "max_exp_avg_sq", p);
  v_max.copy_(maximum(v_max, v));
  double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
  Tensor denom = add(div(sqrt(v_max), std::sqrt(bc2)), o.eps);
  p.sub_(mul(div(m, denom), o.lr / bc1));
}

}  // namespace wick
