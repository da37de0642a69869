#pragma once
// What one replica's training needs from the others, in three parts: its GradientReducer
// (gradients as means over every replica's examples), its StepPolicy (who steps, clipping,
// what follows a step) and its ReplicaMetrics (sums and maxima over the ranks). A scheme
// usually implements all three in one object (SingleReplica here; DataParallelSync, DasoSync
// and PipelineSync in wick/distributed/), which converts to Replicas as it is.
#include <concepts>

#include <wick/nn/module.h>
#include <wick/train/gradient_reducer.h>
#include <wick/train/replica_metrics.h>
#include <wick/train/step_policy.h>

namespace wick {

struct Replicas {
  GradientReducer& gradients;
  StepPolicy& steps;
  ReplicaMetrics& metrics;

  Replicas(GradientReducer& g, StepPolicy& s, ReplicaMetrics& m) : gradients(g), steps(s), metrics(m) {}
  // One object that is all three.
  template <class All>
    requires std::derived_from<All, GradientReducer> && std::derived_from<All, StepPolicy> &&
             std::derived_from<All, ReplicaMetrics>
  Replicas(All& all) : gradients(all), steps(all), metrics(all) {}  // NOLINT: implicit by design
};

// Training on one device: the gradients of `module` are its own; the batch's mean loss is
// the mean when a step is one batch, and the sums of an accumulated step are divided by
// its example count.
class SingleReplica final : public GradientReducer, public StepPolicy, public ReplicaMetrics {
 public:
  explicit SingleReplica(Module& module) : module_(module) {}
  int64_t ranks() const override { return 1; }
  std::vector<double> sum(std::vector<double> values) override { return values; }
  int64_t max(int64_t value) override { return value; }

 protected:
  void start(double examples, int64_t) override { examples_ = examples; }
  // Its own: known before any backward.
  Tensor count_before_backward() override;
  void reduce(double examples, bool divide) override {
    if (divide) divide_gradients(module_.parameters(), examples);
  }

 private:
  Module& module_;
  double examples_ = 0;
};

}  // namespace wick
