#include <wick/train/supervised_model.h>

#include <wick/autograd/nn_ops.h>

namespace wick {

SupervisedModel classifier(std::shared_ptr<UnaryModule> module, CrossEntropyOptions options) {
  LossFunction loss = [options](const Variable& output, const Tensor& target) {
    return cross_entropy(output, target, options);
  };
  return SupervisedModel{std::move(module), std::move(loss), true};
}

}  // namespace wick
