#include <wick/optim/lamb.h>

#include <cmath>

#include <wick/tensor/elementwise.h>
#include <wick/tensor/reduce.h>

namespace wick {

Lamb::Lamb(NamedParameters params, LambOptions options) : Lamb(std::vector<Group>{{std::move(params), options}}) {
  defaults_ = options;
}

Lamb::Lamb(std::vector<Group> groups) : OptimizerWith(std::move(groups), "Lamb") { check_all_options(); }

void Lamb::check_options(const LambOptions& o) const {
  WICK_CHECK(o.lr >= 0 && o.eps >= 0 && o.weight_decay >= 0, "Lamb: lr ", o.lr, ", eps ", o.eps, " and weight_decay ",
             o.weight_decay, " must be non-negative");
  WICK_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, "Lamb: betas (", o.beta1, ", ", o.beta2,
             ") must lie in [0, 1)");
}

void Lamb::update(size_t group, Tensor p, const Tensor& raw_grad, State& state) {
  const LambOptions& o = options_[group];
  double t = optim_detail::advance_step(state);
  const Tensor grad = optim_detail::signed_grad(raw_grad, o.maximize);
  Tensor& m = optim_detail::buffer(state, "exp_avg", p);
  Tensor& v = optim_detail::buffer(state, "exp_avg_sq", p);
  m.mul_(o.beta1).add_(mul(grad, 1 - o.beta1));
  v.mul_(o.beta2).add_(mul(mul(grad, grad), 1 - o.beta2));
  double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
  Tensor u = div(div(m, bc1), add(sqrt(div(v, bc2)), o.eps));
  if (o.weight_decay != 0) u = add(u, mul(p, o.weight_decay));
  Tensor w_norm = norm(p), u_norm = norm(u);
  Tensor ratio = where(logical_and(gt(w_norm, 0.0), gt(u_norm, 0.0)), div(w_norm, u_norm), 1.0);
  p.sub_(mul(u, mul(ratio, o.lr)));
}

}  // namespace wick
