#include <wick/train/supervised_model.h>

#include <wick/autograd/nn_ops.h>

namespace wick {

SupervisedModel custom_model(std::shared_ptr<Module> module, StepFunction step, std::vector<std::string> metrics,
                             StepFunction validation_step) {
  SupervisedModel m;
  m.module = std::move(module);
  m.step = std::move(step);
  m.validation_step = std::move(validation_step);
  m.metrics = std::move(metrics);
  return m;
}

SupervisedModel classifier(std::shared_ptr<UnaryModule> module, CrossEntropyOptions options) {
  LossFunction loss = [options](const Variable& output, const Tensor& target) {
    return cross_entropy(output, target, options);
  };
  SupervisedModel m;
  m.module = std::move(module);
  m.loss = std::move(loss);
  m.count_correct = true;
  return m;
}

}  // namespace wick
