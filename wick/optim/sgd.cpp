#include <wick/optim/sgd.h>

#include <wick/tensor/optim_step.h>

namespace wick {

SGD::SGD(NamedParameters params, SGDOptions options) : SGD(std::vector<Group>{{std::move(params), options}}) {
  defaults_ = options;
}

SGD::SGD(std::vector<Group> groups) : OptimizerWith(std::move(groups), "SGD") { check_all_options(); }

void SGD::check_options(const SGDOptions& o) const {
  WICK_CHECK(o.lr >= 0 && o.momentum >= 0 && o.weight_decay >= 0, "SGD: lr ", o.lr, ", momentum ", o.momentum,
             " and weight_decay ", o.weight_decay, " must be non-negative");
  WICK_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
             "SGD: nesterov needs momentum > 0 and dampening 0 (got momentum ", o.momentum, ", dampening ",
             o.dampening, ")");
}

void SGD::step_group(size_t group, const std::vector<Slot>& slots) {
  const SGDOptions& o = options_[group];
  SgdHyper h{.lr = o.lr, .momentum = o.momentum, .dampening = o.dampening, .weight_decay = o.weight_decay,
             .nesterov = o.nesterov};
  // A parameter's first momentum step copies the gradient into its new buffer.
  std::vector<optim_detail::Batch<SgdHyper, bool>> batches;
  for (const Slot& s : slots) {
    const bool first = o.momentum != 0 && !s.state->count(SgdHyper::kState[0]);
    optim_detail::add_to_batch(batches, first, h, s.param, s.grad, o.maximize, *s.state);
  }
  for (const auto& b : batches) {
    h.first_step = b.key;
    sgd_step(b.params, b.grads, b.state, h);
  }
}

}  // namespace wick
