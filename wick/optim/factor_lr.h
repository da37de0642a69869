#pragma once
// FactorLR: lamp's learning-rate schedule as a scheduler (LambdaLR with the validation loss,
// and a stop). Each group's lr for epoch e is its base lr times factor(e, the smoothed
// validation loss seen so far, none before the first validation); a factor <= 0 stops
// training before epoch e, the groups keeping the rates they had. The training loop makes
// one from LoopOptions::lr_factor and steps it after every epoch like any other scheduler,
// so one schedule owns the learning rates and every rank takes them from rank 0's optimizer.
//
//   FactorLR schedule(opt, [](int64_t epoch, std::optional<double> loss) {
//     return epoch < 30 ? 1.0 : 0.0;  // 30 epochs at the base lr, then stop
//   });
#include <functional>
#include <optional>

#include <wick/optim/lr_scheduler.h>

namespace wick {

using LearningRateFactor = std::function<double(int64_t epoch, std::optional<double> last_validation_loss)>;

class FactorLR final : public LRScheduler {
 public:
  // Applies epoch 0's factor, without a validation loss.
  FactorLR(Optimizer& optimizer, LearningRateFactor factor);
  // The smoothed validation loss the next step's factor sees.
  void observe(std::optional<double> validation_loss) { loss_ = validation_loss; }
  // Whether the current epoch's factor is <= 0: training stops before that epoch.
  bool stops() const { return stops_; }
  double lr_at(size_t group, int64_t epoch) const override;

 protected:
  // Evaluates the factor once per epoch; a factor <= 0 leaves the rates as they are.
  void apply() override;
  bool absolute() const override { return true; }

 private:
  LearningRateFactor factor_;
  std::optional<double> loss_;
  bool stops_ = false;
};

}  // namespace wick
