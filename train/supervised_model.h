#pragma once
// SupervisedModel: a module and the loss that trains it (lamp's SupervisedModel). The
// loss maps (the module's output, the batch's targets) to the mean loss over the batch.
//
//   auto model = classifier(std::make_shared<Sequential>(...));   // cross-entropy
//   EpochStats s = trainer.train_epoch(stream, epoch);
#include <functional>
#include <memory>

#include <wick/nn/module.h>
#include <wick/tensor/loss.h>

namespace wick {

using LossFunction = std::function<Variable(const Variable& output, const Tensor& target)>;

struct SupervisedModel {
  std::shared_ptr<UnaryModule> module;
  LossFunction loss;
  // Count argmax(output, 1) == target (for class-index targets of a [N, C] output).
  bool count_correct = false;
};

// A classifier trained with cross-entropy on class indices; accuracy is counted.
SupervisedModel classifier(std::shared_ptr<UnaryModule> module, CrossEntropyOptions options = {});

}  // namespace wick
