#pragma once
// Normalisation layers over the ops of wick/autograd/nn_ops.h. Affine weights start at 1 and
// biases at 0, as in PyTorch.
#include <optional>

#include <wick/autograd/nn_ops.h>
#include <wick/nn/module.h>

namespace wick {

// rms_norm (the function behind RMSNorm) is declared with the other normalisation ops in
// wick/autograd/nn_ops.h.

// Instance normalisation (torch.nn.functional.instance_norm): each (sample, channel) of
// input [N, C, *] normalised over its own spatial elements, then weight [C] and bias [C]
// (optional). With use_input_stats (the default) the statistics come from the input, which
// must have more than one spatial element, and running_mean / running_var [C] (optional;
// both or neither) are blended in place with the batch average of the per-instance mean and
// unbiased variance: r = (1 - momentum) r + momentum * stat. Without it, the running
// statistics (then required) normalise every instance. Built, as PyTorch's, as a batch norm
// of the input viewed as [1, N C, *] (an empty batch leaves the running statistics alone).
Variable instance_norm(const Variable& input, const Tensor& running_mean = Tensor(),
                       const Tensor& running_var = Tensor(), const Variable& weight = Variable(),
                       const Variable& bias = Variable(), bool use_input_stats = true, double momentum = 0.1,
                       double eps = 1e-5);

struct BatchNormOptions {
  double eps = 1e-5;
  // running = (1 - momentum) running + momentum * batch stat. std::nullopt (PyTorch's
  // momentum=None): the cumulative moving average, momentum = 1 / num_batches_tracked after
  // this batch is counted (the running statistics are the plain mean of every batch's since
  // the start or the last load; reading the count synchronises with a GPU once per batch).
  std::optional<double> momentum = 0.1;
  bool affine = true;               // learnable weight and bias [C]
  bool track_running_stats = true;  // buffers running_mean, running_var, num_batches_tracked
};

// Normalises each channel (dim 1) over the batch and the remaining dims. Training uses the
// batch statistics and updates the running ones (num_batches_tracked counts the training
// batches); eval uses the running ones (or, without them, the batch statistics).
class BatchNorm : public UnaryModule {
 public:
  Variable forward(const Variable& x) override;
  int64_t num_features() const { return num_features_; }

  // Deferred running statistics (torchgpipe's DeferredBatchNorm), for a batch that goes
  // through as several micro-batches (PipelineModel). While deferring, training forwards
  // still normalise with their own statistics but leave the running statistics and
  // num_batches_tracked alone, accumulating each channel's count, mean and sum of squared
  // deviations (computed in float64 for float64 layers, float32 otherwise); the commit
  // then makes one update with the mean and unbiased variance of everything seen, as one
  // forward of the concatenated micro-batches would, and clears the accumulation.
  // defer_running_stats(true) also clears it. Without running statistics both do nothing.
  void defer_running_stats(bool on);
  void commit_running_stats();

  Variable weight, bias;  // [C], undefined without affine

 protected:
  // `ranks`: the input ranks the concrete layer accepts.
  BatchNorm(int64_t num_features, const BatchNormOptions& bn, const Options& o, std::vector<int64_t> ranks);

 private:
  int64_t num_features_;
  BatchNormOptions bn_;
  std::vector<int64_t> ranks_;
  // The deferred statistics: per channel, over `deferred_count_` values each.
  void accumulate_deferred(const Tensor& x);
  bool deferring_ = false;
  int64_t deferred_forwards_ = 0;
  int64_t deferred_count_ = 0;
  Tensor deferred_mean_, deferred_m2_;
};

// Input [N, C] or [N, C, L].
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, const BatchNormOptions& bn = {}, const Options& o = {})
      : BatchNorm(num_features, bn, o, {2, 3}) {}
  const char* type_name() const override { return "BatchNorm1d"; }
};

// Input [N, C, H, W].
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, const BatchNormOptions& bn = {}, const Options& o = {})
      : BatchNorm(num_features, bn, o, {4}) {}
  const char* type_name() const override { return "BatchNorm2d"; }
};

// Normalises over the trailing dims `normalized_shape`, with weight and bias of that shape.
class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true,
                     const Options& o = {});
  const char* type_name() const override { return "LayerNorm"; }
  Variable forward(const Variable& x) override;

  Variable weight, bias;

 private:
  Shape normalized_shape_;
  double eps_;
};

// Splits the channels (dim 1) into num_groups groups and normalises each group per sample.
class GroupNorm : public UnaryModule {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true, const Options& o = {});
  const char* type_name() const override { return "GroupNorm"; }
  Variable forward(const Variable& x) override;

  Variable weight, bias;  // [C]

 private:
  int64_t num_groups_;
  double eps_;
};

// Normalises over the trailing dims `normalized_shape` by their root mean square, with a
// weight of that shape (elementwise_affine) and no bias; eps as rms_norm's.
class RMSNorm : public UnaryModule {
 public:
  explicit RMSNorm(Shape normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true,
                   const Options& o = {});
  const char* type_name() const override { return "RMSNorm"; }
  Variable forward(const Variable& x) override;

  Variable weight;  // undefined without elementwise_affine

 private:
  Shape normalized_shape_;
  std::optional<double> eps_;
};

// PyTorch's InstanceNorm defaults: no affine parameters, no running statistics.
struct InstanceNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = false;               // learnable weight and bias [C]
  bool track_running_stats = false;  // buffers running_mean, running_var, num_batches_tracked
};

// Normalises each channel of each sample over its spatial dims (instance_norm). Training,
// or any mode without running statistics, uses the input's statistics (and updates the
// running ones when tracked); eval with tracked statistics uses the running ones. As
// PyTorch, num_batches_tracked is registered but not counted, and an input whose channel
// count differs from num_features is refused only when the layer has affine parameters or
// running statistics (it would not be used otherwise). An unbatched input (no N) is
// accepted.
class InstanceNorm : public UnaryModule {
 public:
  Variable forward(const Variable& x) override;
  int64_t num_features() const { return num_features_; }

  Variable weight, bias;  // [C], undefined without affine

 protected:
  // `spatial_dims`: 1 for InstanceNorm1d, 2 for InstanceNorm2d.
  InstanceNorm(int64_t num_features, const InstanceNormOptions& in, const Options& o, int64_t spatial_dims);

 private:
  int64_t num_features_;
  InstanceNormOptions in_;
  int64_t spatial_dims_;
};

// Input [N, C, L] or unbatched [C, L].
class InstanceNorm1d : public InstanceNorm {
 public:
  explicit InstanceNorm1d(int64_t num_features, const InstanceNormOptions& in = {}, const Options& o = {})
      : InstanceNorm(num_features, in, o, 1) {}
  const char* type_name() const override { return "InstanceNorm1d"; }
};

// Input [N, C, H, W] or unbatched [C, H, W].
class InstanceNorm2d : public InstanceNorm {
 public:
  explicit InstanceNorm2d(int64_t num_features, const InstanceNormOptions& in = {}, const Options& o = {})
      : InstanceNorm(num_features, in, o, 2) {}
  const char* type_name() const override { return "InstanceNorm2d"; }
};

}  // namespace wick
