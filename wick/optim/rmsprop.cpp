#include <wick/optim/rmsprop.h>

#include <wick/tensor/optim_step.h>

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

void RMSprop::step_group(size_t group, const std::vector<Slot>& slots) {
  const RMSpropOptions& o = options_[group];
  const RMSpropHyper h{.lr = o.lr, .alpha = o.alpha, .eps = o.eps, .weight_decay = o.weight_decay,
                       .momentum = o.momentum, .centered = o.centered};
  std::vector<optim_detail::Batch<RMSpropHyper, bool>> batches;
  for (const Slot& s : slots) {
    optim_detail::advance_step(*s.state);  // kept in the state as torch keeps it; the update does not read it
    optim_detail::add_to_batch(batches, false, h, s.param, s.grad, o.maximize, *s.state);
  }
  for (const auto& b : batches) rmsprop_step(b.params, b.grads, b.state, h);
}

}  // namespace wick
