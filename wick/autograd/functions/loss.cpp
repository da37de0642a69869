// Backward of the fused cross-entropy: d loss / d logits in one kernel pass from the saved
// log-sum-exps (the target and class weights are constants and get no gradient).
#include <wick/autograd/autocast.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/tensor/error.h>

namespace wick {

namespace {

class CrossEntropyBackward final : public Node {
 public:
  CrossEntropyBackward(Tensor logits, Tensor target, CrossEntropyResult saved, CrossEntropyOptions options)
      : logits_(std::move(logits)),
        target_(std::move(target)),
        saved_(std::move(saved)),
        options_(std::move(options)) {}
  const char* name() const override { return "CrossEntropyBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    // The fused kernel's result is a constant: under create_graph its second derivative
    // would silently be 0, so refuse, as conv and pool do.
    WICK_CHECK(!grad_enabled(), name(), ": double backward (create_graph) is not supported; for a second "
               "derivative write the loss with differentiable ops: -mean(gather(log_softmax(logits, 1), 1, target))");
    return {Variable(cross_entropy_backward(g[0].data(), logits_, target_, saved_, options_))};
  }
  bool release_saved() override { return release(logits_, target_, saved_); }

 private:
  Tensor logits_, target_;
  CrossEntropyResult saved_;
  CrossEntropyOptions options_;
};

}  // namespace

Variable cross_entropy(const Variable& logits_in, const Tensor& target, const CrossEntropyOptions& options) {
  AutocastArgs autocast(AutocastOp::cross_entropy, logits_in);
  const Variable& logits = autocast[0];
  CrossEntropyResult r = cross_entropy_forward(logits.data(), target, options);
  Variable out(r.loss);
  record<CrossEntropyBackward>({&logits}, {&out}, logits.data(), target, r, options);
  return out;
}

}  // namespace wick
