#pragma once
// SupervisedModel: a module and the loss that trains it (lamp's SupervisedModel). The
// loss maps (the module's output, the batch's targets) to the mean loss over the batch.
//
//   auto model = classifier(std::make_shared<Sequential>(...));   // cross-entropy
//   EpochStats s = trainer.train_epoch(stream, epoch);
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <wick/data/batch_source.h>
#include <wick/nn/module.h>
#include <wick/tensor/loss.h>

namespace wick {

using LossFunction = std::function<Variable(const Variable& output, const Tensor& target)>;

// What your step returns for one batch: its loss (the mean over the batch's examples, which
// backward starts from) and named metrics (0-d tensors, each the mean over the batch's
// examples; the loops average them over every example of every replica).
struct StepOutput {
  Variable loss;
  std::map<std::string, Tensor> metrics;
};
// Your step: the module's forward on a batch (any inputs: Batch::fields holds a
// DataLoader's fields by name) and the loss. Runs in train mode with gradients when
// training, in eval mode under NoGradGuard when validating.
using StepFunction = std::function<StepOutput(Module& module, const Batch& batch)>;

struct SupervisedModel {
  std::shared_ptr<Module> module;
  LossFunction loss;  // the supervised form: loss(module(batch.inputs), batch.targets)
  // Count argmax(output, 1) == target (for class-index targets of a [N, C] output).
  bool count_correct = false;
  StepFunction step;             // when set, used instead of the supervised form (any Module)
  StepFunction validation_step;  // for validation; unset: `step`
  // The metrics `step` returns, by name: the same on every replica and for every batch.
  std::vector<std::string> metrics;
};

// A model trained by your step (see StepOutput). `metrics` names what the step returns.
SupervisedModel custom_model(std::shared_ptr<Module> module, StepFunction step, std::vector<std::string> metrics = {},
                             StepFunction validation_step = {});

// A classifier trained with cross-entropy on class indices; accuracy is counted.
SupervisedModel classifier(std::shared_ptr<UnaryModule> module, CrossEntropyOptions options = {});

}  // namespace wick
