#include <wick/optim/adadelta.h>

#include <wick/tensor/elementwise.h>

namespace wick {

Adadelta::Adadelta(NamedParameters params, AdadeltaOptions options)
    : Adadelta(std::vector<Group>{{std::move(params), options}}) {
  defaults_ = options;
}

Adadelta::Adadelta(std::vector<Group> groups) : OptimizerWith(std::move(groups), "Adadelta") { check_all_options(); }

void Adadelta::check_options(const AdadeltaOptions& o) const {
  WICK_CHECK(o.lr >= 0 && o.eps >= 0 && o.weight_decay >= 0, "Adadelta: lr ", o.lr, ", eps ", o.eps,
             " and weight_decay ", o.weight_decay, " must be non-negative");
  WICK_CHECK(o.rho >= 0 && o.rho <= 1, "Adadelta: rho ", o.rho, " must lie in [0, 1]");
}

void Adadelta::update(size_t group, Tensor p, const Tensor& grad, State& state) {
  const AdadeltaOptions& o = options_[group];
  optim_detail::advance_step(state);
  Tensor g = optim_detail::signed_grad(grad, o.maximize);
  if (o.weight_decay != 0) g = add(g, mul(p, o.weight_decay));
  Tensor& v = optim_detail::buffer(state, "square_avg", p);
  Tensor& u = optim_detail::buffer(state, "acc_delta", p);
  v.mul_(o.rho).add_(mul(mul(g, g), 1 - o.rho));
  Tensor delta = mul(div(sqrt(add(u, o.eps)), sqrt(add(v, o.eps))), g);
  u.mul_(o.rho).add_(mul(mul(delta, delta), 1 - o.rho));
  p.sub_(mul(delta, o.lr));
}

}  // namespace wick
