#include <wick/train/gradient_reducer.h>

#include <wick/autograd/grad_mode.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick {

void divide_gradients(const std::vector<Variable>& params, double count) {
  if (count <= 0) return;
  NoGradGuard no_grad;
  for (const Variable& p : params)
    if (p.grad().defined()) p.grad().data().mul_(1.0 / count);
}

void GradientReducer::arm(double examples, int64_t earlier_backwards) {
  WICK_CHECK(examples >= 0 && earlier_backwards >= 0, "GradientReducer::arm: examples ", examples,
             " and earlier backwards ", earlier_backwards, " must be >= 0");
  armed_ = true;
  decided_ = false;
  count_ = Tensor();
  examples_ = examples;
  earlier_backwards_ = earlier_backwards;
  start(examples, earlier_backwards);
}

Tensor GradientReducer::seed_count() {
  WICK_CHECK(armed_, "GradientReducer: seed_count before arm");
  if (!decided_) {
    // Gradients accumulated before the count was known hold sums: the whole group does.
    if (earlier_backwards_ == 0) count_ = count_before_backward();
    decided_ = true;
  }
  return count_;
}

void GradientReducer::backward(const Variable& loss, int64_t n, double scale, const Tensor& gradient) {
  const Tensor count = armed_ ? seed_count() : Tensor();
  // The batch's share of the mean (n / count), or its sum over examples (n), times the scale.
  const double seed = static_cast<double>(n) * scale;
  if (count.defined() && !count.device().is_cpu()) {
    // On the count's device, so that reading it does not wait for the GPU.
    Tensor factor = div(full({}, seed, count.options()), count).to(loss.dtype()).to(loss.device());
    loss.backward(gradient.defined() ? mul(gradient, factor) : factor);
    return;
  }
  const double factor = count.defined() ? seed / count.item<double>() : seed;
  if (factor == 1.0)
    loss.backward(gradient);
  else if (gradient.defined())
    loss.backward(mul(gradient, factor));
  else
    loss.backward(full({}, factor, Options(loss.dtype(), loss.device())));
}

void GradientReducer::launch() {
  if (armed_) launch_reduction();
}

void GradientReducer::finish() {
  WICK_CHECK(armed_, "GradientReducer: finish without arm");
  const bool divide = !seed_count().defined();
  armed_ = false;
  count_ = Tensor();
  reduce(examples_, divide);
}

}  // namespace wick
