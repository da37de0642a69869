#include <wick/optim/factor_lr.h>

#include <wick/tensor/error.h>

namespace wick {

FactorLR::FactorLR(Optimizer& optimizer, LearningRateFactor factor)
    : LRScheduler(optimizer, "FactorLR"), factor_(std::move(factor)) {
  WICK_CHECK(factor_ != nullptr, "FactorLR: no factor function");
  apply();
}

double FactorLR::lr_at(size_t group, int64_t epoch) const { return base_lrs_[group] * factor_(epoch, loss_); }

void FactorLR::apply() {
  const double factor = factor_(last_epoch_, loss_);
  stops_ = factor <= 0;
  if (stops_) return;
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_lr(g, base_lrs_[g] * factor);
}

}  // namespace wick
