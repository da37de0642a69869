#pragma once
// GradientReducer: makes the gradients of an optimizer step the mean over the step's
// examples on every replica: one replica, data parallelism, DASO's node groups, a
// pipeline's replicas alike (PyTorch's c10d Reducer, which takes the mean in its
// communication hook, is the model). The Trainer arms it before the backward that ends a
// step's group of batches, back-propagates every batch through it and finishes it before
// the step; the seed of each backward and who divides by the example count are decided here,
// once for every scheme:
//   - the first backward of a group, when the reducer knows the group's example count over
//     replicas before that backward (one replica knows its own; data parallelism reduces
//     it from arm() on, while the forward runs), is seeded with n / count: its gradients
//     are the mean's share and nothing divides them afterwards;
//   - otherwise each backward is seeded with n (sums over examples), and finish() divides
//     the sums over replicas by the count over replicas, in the pass that reduces them where
//     there is one.
// The choice depends only on the group and the reducer, not on this replica's batches, so
// every replica makes the same one and the sums over replicas add like terms.
#include <cstdint>
#include <vector>

#include <wick/autograd/variable.h>

namespace wick {

// Divides the defined gradients of `params` by `count` (sums over examples to means). A
// count of 0 (no replica had an example) leaves them as they are: zeros, not 0 / 0.
void divide_gradients(const std::vector<Variable>& params, double count);

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;

  // The next backward ends a step's group with `examples` examples on this replica (0 for a
  // replica out of batches); the gradients already hold `earlier_backwards` backwards of the
  // group (accumulation: the same number on every replica).
  void arm(double examples, int64_t earlier_backwards);
  // Back-propagates the mean loss of a batch of `n` examples, times `scale` (the loss scale,
  // 1 without one), from `gradient` when given (loss.backward(gradient)'s).
  void backward(const Variable& loss, int64_t n, double scale = 1.0, const Tensor& gradient = {});
  // Starts the reduction and returns at once (Heat's non-blocking steps); finish() waits.
  void launch();
  // Every gradient the mean over the group's examples on all replicas, waited for.
  void finish();
  // After arm(): the count the first backward is seeded with (a 0-d float64 tensor), or an
  // undefined tensor when the backwards are seeded with sums. Waits for the count.
  Tensor seed_count();

 protected:
  // arm()'s part of each scheme: starting the count's reduction, arming its hooks.
  virtual void start(double examples, int64_t earlier_backwards) = 0;
  // The group's example count summed over replicas, known before the backward: a 0-d
  // float64 tensor (on the gradients' device, ready for the current stream, or on the CPU),
  // or undefined when this reducer does not know it then.
  virtual Tensor count_before_backward() = 0;
  virtual void launch_reduction() {}
  // Sums the gradients over the replicas and, when `divide` (the backwards were seeded with
  // sums), divides them by the group's count over replicas, `examples` being this replica's.
  virtual void reduce(double examples, bool divide) = 0;

 private:
  bool armed_ = false;
  bool decided_ = false;
  int64_t earlier_backwards_ = 0;
  double examples_ = 0;
  Tensor count_;  // the seed's count, when decided_ and the backwards seed means
};

}  // namespace wick
