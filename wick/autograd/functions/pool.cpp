// Backward of the pooling ops: max_pool2d routes each output gradient to the input element
// that won its window (by the saved indices); the averages spread it evenly over their windows.
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/node.h>

namespace wick {

namespace {

// These gradients are linear in the output gradient and computed with tensor kernels: a
// create_graph backward that needs them differentiable is refused rather than made wrong.
void check_first_order(const char* node, const Variable& g) {
  WICK_CHECK(!(grad_enabled() && g.requires_grad()), node, ": double backward (create_graph) is not supported");
}

class MaxPoolBackward final : public Node {
 public:
  explicit MaxPoolBackward(Tensor indices) : indices_(std::move(indices)) {}
  const char* name() const override { return "MaxPoolBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    check_first_order(name(), g[0]);
    return {Variable(max_pool2d_backward(g[0].data(), indices_, input_meta()[0].shape))};
  }
  bool release_saved() override { return release(indices_); }

 private:
  Tensor indices_;
};

class AvgPoolBackward final : public Node {
 public:
  AvgPoolBackward(Size2 kernel, std::optional<Size2> stride, Size2 padding, bool ceil_mode, bool count_include_pad)
      : kernel_(kernel),
        stride_(stride),
        padding_(padding),
        ceil_mode_(ceil_mode),
        count_include_pad_(count_include_pad) {}
  const char* name() const override { return "AvgPoolBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    check_first_order(name(), g[0]);
    return {Variable(avg_pool2d_backward(g[0].data(), input_meta()[0].shape, kernel_, stride_, padding_, ceil_mode_,
                                         count_include_pad_))};
  }

 private:
  Size2 kernel_;
  std::optional<Size2> stride_;
  Size2 padding_;
  bool ceil_mode_, count_include_pad_;
};

class AdaptiveAvgPoolBackward final : public Node {
 public:
  const char* name() const override { return "AdaptiveAvgPoolBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    check_first_order(name(), g[0]);
    return {Variable(adaptive_avg_pool2d_backward(g[0].data(), input_meta()[0].shape))};
  }
};

}  // namespace

Variable max_pool2d(const Variable& input, Size2 kernel, std::optional<Size2> stride, Size2 padding, Size2 dilation,
                    bool ceil_mode) {
  auto [values, indices] = max_pool2d(input.data(), kernel, stride, padding, dilation, ceil_mode);
  Variable out(values);
  record<MaxPoolBackward>({&input}, {&out}, indices);
  return out;
}

#include "wick/autograd/generated/pool_ops_defs.inc"

}  // namespace wick
