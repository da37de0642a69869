#include <wick/nn/norm.h>

#include <algorithm>

#include <wick/autograd/nn_ops.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

void check_floating(const Module& m, const Options& o) {
  WICK_CHECK(is_floating(o.dtype), m.type_name(), ": parameters must be floating, not ", dtype_name(o.dtype));
}

}  // namespace

BatchNorm::BatchNorm(int64_t num_features, const BatchNormOptions& bn, const Options& o, std::vector<int64_t> ranks)
    : num_features_(num_features), bn_(bn), ranks_(std::move(ranks)) {
  WICK_CHECK(num_features > 0, "BatchNorm: num_features must be positive, got ", num_features);
  WICK_CHECK(is_floating(o.dtype), "BatchNorm: parameters must be floating, not ", dtype_name(o.dtype));
  if (bn.affine) {
    weight = register_parameter("weight", ones({num_features}, o));
    bias = register_parameter("bias", zeros({num_features}, o));
  }
  if (bn.track_running_stats) {
    register_buffer("running_mean", zeros({num_features}, o));
    register_buffer("running_var", ones({num_features}, o));
    register_buffer("num_batches_tracked", zeros({}, Options(DType::Int64, o.device)));
  }
}

Variable BatchNorm::forward(const Variable& x) {
  WICK_CHECK(std::find(ranks_.begin(), ranks_.end(), x.dim()) != ranks_.end(), type_name(), ": input of shape ",
             shape_str(x.shape()), " has the wrong number of dims");
  WICK_CHECK(x.size(1) == num_features_, type_name(), ": input of shape ", shape_str(x.shape()), " has ", x.size(1),
             " channels, expected num_features=", num_features_);
  const bool use_batch_stats = is_training() || !bn_.track_running_stats;
  Tensor running_mean, running_var;
  if (bn_.track_running_stats) {
    running_mean = buffer("running_mean");
    running_var = buffer("running_var");
    if (is_training()) buffer("num_batches_tracked").add_(Scalar(1));
  }
  return batch_norm(x, weight, bias, running_mean, running_var, use_batch_stats, bn_.momentum, bn_.eps);
}

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine, bool bias, const Options& o)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  check_floating(*this, o);
  WICK_CHECK(!normalized_shape_.empty(), "LayerNorm: normalized_shape must not be empty");
  if (elementwise_affine) {
    weight = register_parameter("weight", ones(normalized_shape_, o));
    if (bias) this->bias = register_parameter("bias", zeros(normalized_shape_, o));
  }
}

Variable LayerNorm::forward(const Variable& x) { return layer_norm(x, normalized_shape_, weight, bias, eps_); }

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine, const Options& o)
    : num_groups_(num_groups), eps_(eps) {
  check_floating(*this, o);
  WICK_CHECK(num_groups > 0 && num_channels > 0 && num_channels % num_groups == 0, "GroupNorm: num_groups=",
             num_groups, " must divide num_channels=", num_channels);
  if (affine) {
    weight = register_parameter("weight", ones({num_channels}, o));
    bias = register_parameter("bias", zeros({num_channels}, o));
  }
}

Variable GroupNorm::forward(const Variable& x) { return group_norm(x, num_groups_, weight, bias, eps_); }

}  // namespace wick
