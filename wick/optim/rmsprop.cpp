#include <wick/optim/rmsprop.h>

#include <wick/tensor/elementwise.h>

namespace wick {

RMSprop::RMSprop(NamedParameters params, RMSpropOptions options)
    : RMSprop(std::vector<Group>{{std::move(params), options}}) {
  defaults_ = options;
}

RMSprop::RMSprop(std::vector<Group> groups) : OptimizerWith(std::move(groups), "RMSprop") { check_all_options(); }

void RMSprop::check_options(const RMSpropOptions& o) const {
  WICK_CHECK(o.lr >= 0 && o.alpha >= 0 && o.eps >= 0 && o.weight_decay >= 0 && o.momentum >= 0, "RMSprop: lr ", o.lr,
             ", alpha ", o.alpha, ", eps ", o.eps, ", weight_decay ", o.weight_decay, " and momentum ", o.momentum,
             " must be non-negative");
}

void RMSprop::update(size_t group, Tensor p, const Tensor& grad, State& state) {
  const RMSpropOptions& o = options_[group];
  optim_detail::advance_step(state);
  Tensor g = optim_detail::signed_grad(grad, o.maximize);
  if (o.weight_decay != 0) g = add(g, mul(p, o.weight_decay));
  Tensor& s = optim_detail::buffer(state, "square_avg", p);
  s.mul_(o.alpha).add_(mul(mul(g, g), 1 - o.alpha));
  Tensor d;
  if (o.centered) {
    Tensor& a = optim_detail::buffer(state, "grad_avg", p);
    a.mul_(o.alpha).add_(mul(g, 1 - o.alpha));
    d = add(sqrt(sub(s, mul(a, a))), o.eps);
  } else {
    d = add(sqrt(s), o.eps);
  }
  if (o.momentum > 0) {
    Tensor& b = optim_detail::buffer(state, "momentum_buffer", p);
    b.mul_(o.momentum).add_(div(g, d));
    p.sub_(mul(b, o.lr));
  } else {
    p.sub_(mul(div(g, d), o.lr));
  }
}

}  // namespace wick
