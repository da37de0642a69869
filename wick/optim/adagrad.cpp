#include <wick/optim/adagrad.h>

#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

namespace wick {

Adagrad::Adagrad(NamedParameters params, AdagradOptions options)
    : Adagrad(std::vector<Group>{{std::move(params), options}}) {
  defaults_ = options;
}

Adagrad::Adagrad(std::vector<Group> groups) : OptimizerWith(std::move(groups), "Adagrad") { check_all_options(); }

void Adagrad::check_options(const AdagradOptions& o) const {
  WICK_CHECK(o.lr >= 0 && o.lr_decay >= 0 && o.weight_decay >= 0 && o.initial_accumulator_value >= 0 && o.eps >= 0,
             "Adagrad: lr ", o.lr, ", lr_decay ", o.lr_decay, ", weight_decay ", o.weight_decay,
             ", initial_accumulator_value ", o.initial_accumulator_value, " and eps ", o.eps, " must be non-negative");
}

void Adagrad::update(size_t group, Tensor p, const Tensor& grad, State& state) {
  const AdagradOptions& o = options_[group];
  double t = optim_detail::advance_step(state);
  Tensor g = optim_detail::signed_grad(grad, o.maximize);
  if (o.weight_decay != 0) g = add(g, mul(p, o.weight_decay));
  Tensor& sum = optim_detail::buffer(state, "sum", p, o.initial_accumulator_value);
  sum.add_(mul(g, g));
  double clr = o.lr / (1 + (t - 1) * o.lr_decay);
  p.sub_(mul(div(g, add(sqrt(sum), o.eps)), clr));
}

}  // namespace wick
