#include <wick/optim/adam_variants.h>

#include <cmath>

#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

using State = optim_detail::ParamState;

template <class O>
void check_adam_like(const char* name, const O& o) {
  WICK_CHECK(o.lr >= 0 && o.eps >= 0 && o.weight_decay >= 0, name, ": lr ", o.lr, ", eps ", o.eps, " and weight_decay ",
             o.weight_decay, " must be non-negative");
  WICK_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, name, ": betas (", o.beta1, ", ", o.beta2,
             ") must lie in [0, 1)");
}

// The gradient a step uses: negated for maximize, then the L2 penalty added.
template <class O>
Tensor with_decay(const Tensor& grad, const Tensor& p, const O& o) {
  Tensor g = optim_detail::signed_grad(grad, o.maximize);
  return o.weight_decay != 0 ? add(g, mul(p, o.weight_decay)) : g;
}

// m = beta1 m + (1 - beta1) g
Tensor& first_moment(State& state, const Tensor& p, const Tensor& g, double beta1) {
  Tensor& m = optim_detail::buffer(state, "exp_avg", p);
  m.mul_(beta1).add_(mul(g, 1 - beta1));
  return m;
}

// v = beta2 v + (1 - beta2) g^2
Tensor& second_moment(State& state, const Tensor& p, const Tensor& g, double beta2) {
  Tensor& v = optim_detail::buffer(state, "exp_avg_sq", p);
  v.mul_(beta2).add_(mul(mul(g, g), 1 - beta2));
  return v;
}

}  // namespace

Adamax::Adamax(std::vector<Group> groups) : OptimizerWith(std::move(groups), "Adamax") { check_all_options(); }

void Adamax::check_options(const AdamaxOptions& o) const { check_adam_like(name_, o); }

void Adamax::update(const AdamaxOptions& o, Tensor p, const Tensor& grad, State& state) {
  const double t = optim_detail::advance_step(state);
  Tensor g = with_decay(grad, p, o);
  Tensor& m = first_moment(state, p, g, o.beta1);
  Tensor& u = optim_detail::buffer(state, "exp_inf", p);
  u.copy_(maximum(mul(u, o.beta2), add(abs(g), o.eps)));
  p.sub_(mul(div(m, u), o.lr / (1 - std::pow(o.beta1, t))));
}

NAdam::NAdam(std::vector<Group> groups) : OptimizerWith(std::move(groups), "NAdam") { check_all_options(); }

void NAdam::check_options(const NAdamOptions& o) const {
  check_adam_like(name_, o);
  WICK_CHECK(o.momentum_decay >= 0, name_, ": momentum_decay must be non-negative, got ", o.momentum_decay);
}

void NAdam::update(const NAdamOptions& o, Tensor p, const Tensor& grad, State& state) {
  const double t = optim_detail::advance_step(state);
  Tensor g = with_decay(grad, p, o);
  // The running product of the momentum schedule, kept as a 0-d float64 like "step".
  auto it = state.find("mu_product");
  if (it == state.end()) it = state.emplace("mu_product", scalar_tensor(1.0, DType::Float64)).first;
  const double mu = o.beta1 * (1 - 0.5 * std::pow(0.96, t * o.momentum_decay));
  const double mu_next = o.beta1 * (1 - 0.5 * std::pow(0.96, (t + 1) * o.momentum_decay));
  const double product = it->second.item<double>() * mu;
  it->second.fill_(product);
  Tensor& m = first_moment(state, p, g, o.beta1);
  Tensor& v = second_moment(state, p, g, o.beta2);
  Tensor denom = add(sqrt(div(v, 1 - std::pow(o.beta2, t))), o.eps);
  p.sub_(mul(div(g, denom), o.lr * (1 - mu) / (1 - product)));
  p.sub_(mul(div(m, denom), o.lr * mu_next / (1 - product * mu_next)));
}

RAdam::RAdam(std::vector<Group> groups) : OptimizerWith(std::move(groups), "RAdam") { check_all_options(); }

void RAdam::check_options(const RAdamOptions& o) const { check_adam_like(name_, o); }

void RAdam::update(const RAdamOptions& o, Tensor p, const Tensor& grad, State& state) {
  const double t = optim_detail::advance_step(state);
  Tensor g = with_decay(grad, p, o);
  Tensor& m = first_moment(state, p, g, o.beta1);
  Tensor& v = second_moment(state, p, g, o.beta2);
  const double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
  const double rho_inf = 2 / (1 - o.beta2) - 1;
  const double rho_t = rho_inf - 2 * t * std::pow(o.beta2, t) / bc2;
  if (rho_t > 5) {
    const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
    p.sub_(mul(div(m, add(sqrt(v), o.eps)), o.lr / bc1 * rect * std::sqrt(bc2)));
  } else {
    p.sub_(mul(m, o.lr / bc1));
  }
}

}  // namespace wick
