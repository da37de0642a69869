// Backward of the fused cross-entropy. The forward's kernel writes d loss / d logits while it
// reads the logits (for a loss gradient of 1, Mean's divisor included), so the node keeps
// that gradient instead of the logits and its backward is a scale by the incoming gradient,
// which costs nothing where that is 1 (loss.backward() of a Mean or Sum loss), written over
// the saved gradient unless the graph is retained. The target and class weights are
// constants and get no gradient.
#include <wick/autograd/autocast.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/tensor/error.h>

namespace wick {

namespace {

class CrossEntropyBackward final : public Node {
 public:
  CrossEntropyBackward(CrossEntropyResult saved, CrossEntropyOptions options)
      : saved_(std::move(saved)), options_(std::move(options)) {}
  const char* name() const override { return "CrossEntropyBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    // The fused kernel's result is a constant: under create_graph its second derivative
    // would silently be 0, so refuse, as conv and pool do.
    WICK_CHECK(!grad_enabled(), name(), ": double backward (create_graph) is not supported; for a second "
               "derivative write the loss with differentiable ops: -mean(gather(log_softmax(logits, 1), 1, target))");
    return {Variable(cross_entropy_backward_from_forward(g[0].data(), saved_, options_, !backward_retains_graph()))};
  }
  bool release_saved() override { return release(saved_); }

 private:
  CrossEntropyResult saved_;  // the forward's gradient (dlogits) and Mean's divisor
  CrossEntropyOptions options_;
};

}  // namespace

Variable cross_entropy(const Variable& logits_in, const Tensor& target, const CrossEntropyOptions& options) {
  AutocastArgs autocast(AutocastOp::cross_entropy, logits_in);
  const Variable& logits = autocast[0];
  // The gradient is written with the forward only when one will be wanted.
  CrossEntropyResult r = cross_entropy_forward(logits.data(), target, options, needs_grad({&logits}));
  Variable out(r.loss);
  r.lse = Tensor();  // backward needs only r.dlogits
  r.loss = Tensor();
  record<CrossEntropyBackward>({&logits}, {&out}, std::move(r), options);
  return out;
}

}  // namespace wick
