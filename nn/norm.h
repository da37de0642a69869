#pragma once
// Normalisation layers over the ops of autograd/nn_ops.h. Affine weights start at 1 and
// biases at 0, as in PyTorch.
#include <wick/nn/module.h>

namespace wick {

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;            // running = (1 - momentum) running + momentum * batch stat
  bool affine = true;               // learnable weight and bias [C]
  bool track_running_stats = true;  // buffers running_mean, running_var, num_batches_tracked
};

// Normalises each channel (dim 1) over the batch and the remaining dims. Training uses the
// batch statistics and updates the running ones; eval uses the running ones (or, without
// them, the batch statistics).
class BatchNorm : public UnaryModule {
 public:
  Variable forward(const Variable& x) override;
  int64_t num_features() const { return num_features_; }

  Variable weight, bias;  // [C], undefined without affine

 protected:
  // `ranks`: the input ranks the concrete layer accepts.
  BatchNorm(int64_t num_features, const BatchNormOptions& bn, const Options& o, std::vector<int64_t> ranks);

 private:
  int64_t num_features_;
  BatchNormOptions bn_;
  std::vector<int64_t> ranks_;
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

}  // namespace wick
