#include <wick/nn/norm.h>

#include <algorithm>
#include <limits>

#include <wick/autograd/autocast.h>
#include <wick/autograd/composites.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/reduce.h>

namespace wick {

namespace {

void check_floating(const Module& m, const Options& o) {
  WICK_CHECK(is_floating(o.dtype), m.type_name(), ": parameters must be floating, not ", dtype_name(o.dtype));
}

}  // namespace

Variable instance_norm(const Variable& input, const Tensor& running_mean, const Tensor& running_var,
                       const Variable& weight, const Variable& bias, bool use_input_stats, double momentum,
                       double eps) {
  WICK_CHECK(input.defined() && input.dim() >= 2, "instance_norm: expected input [N, C, ...], got ",
             input.defined() ? shape_str(input.shape()) : "undefined");
  const int64_t n = input.size(0), c = input.size(1);
  const Shape spatial(input.shape().begin() + 2, input.shape().end());
  if (use_input_stats)
    WICK_CHECK(numel_of(spatial) != 1, "instance_norm: expected more than 1 spatial element when using the input's "
               "statistics, got input of shape ", shape_str(input.shape()));
  WICK_CHECK(running_mean.defined() == running_var.defined(),
             "instance_norm: running_mean and running_var must be given together");
  WICK_CHECK(use_input_stats || running_mean.defined(),
             "instance_norm: without use_input_stats, running_mean and running_var are needed");
  auto check_per_channel = [&](const char* name, const Shape& s) {
    WICK_CHECK(s == Shape{c}, "instance_norm: ", name, " ", shape_str(s), " must have one entry per channel (", c,
               ") of input ", shape_str(input.shape()));
  };
  if (running_mean.defined()) check_per_channel("running_mean", running_mean.shape());
  if (running_var.defined()) check_per_channel("running_var", running_var.shape());
  if (weight.defined()) check_per_channel("weight", weight.shape());
  if (bias.defined()) check_per_channel("bias", bias.shape());

  // Every (sample, channel) pair becomes a channel of one batch-norm sample.
  Shape folded = input.shape();
  folded[0] = 1;
  folded[1] = n * c;
  Variable w = weight.defined() ? repeat(weight, {n}) : Variable();
  Variable b = bias.defined() ? repeat(bias, {n}) : Variable();
  Tensor rm, rv;
  if (running_mean.defined()) {
    rm = repeat(running_mean, {n}).contiguous();
    rv = repeat(running_var, {n}).contiguous();
  }
  Variable y = batch_norm(reshape(input, folded), w, b, rm, rv, use_input_stats, momentum, eps);
  if (running_mean.defined() && use_input_stats && n > 0) {
    // Each instance updated its own copy; the running statistics become their batch mean.
    Tensor out_mean = running_mean, out_var = running_var;
    out_mean.copy_(mean(rm.reshape({n, c}), {0}));
    out_var.copy_(mean(rv.reshape({n, c}), {0}));
  }
  return reshape(y, input.shape());
}

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
  if (deferring_ && is_training()) {
    accumulate_deferred(x.data());
    return batch_norm(x, weight, bias, Tensor(), Tensor(), true, 0.0, bn_.eps);
  }
  Tensor running_mean, running_var;
  // PyTorch: momentum None is 0 unless the running statistics are updated here.
  double momentum = bn_.momentum.value_or(0.0);
  if (bn_.track_running_stats) {
    running_mean = buffer("running_mean");
    running_var = buffer("running_var");
    if (is_training()) {
      Tensor count = buffer("num_batches_tracked");
      count.add_(Scalar(1));
      if (!bn_.momentum) momentum = 1.0 / static_cast<double>(count.item<int64_t>());  // cumulative average
    }
  }
  return batch_norm(x, weight, bias, running_mean, running_var, use_batch_stats, momentum, bn_.eps);
}

void BatchNorm::defer_running_stats(bool on) {
  deferring_ = on && bn_.track_running_stats;
  deferred_forwards_ = 0;
  deferred_count_ = 0;
  deferred_mean_ = deferred_m2_ = Tensor();
}

void BatchNorm::accumulate_deferred(const Tensor& x) {
  ++deferred_forwards_;
  const int64_t n = x.numel() / num_features_;
  if (n == 0) return;  // no values: the running statistics stay as they are, as PyTorch's
  const DType acc = x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Dims dims = {0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor v = x.to(acc);
  Tensor m = mean(v, dims);
  Tensor m2 = var(v, dims, /*correction=*/0.0).mul_(static_cast<double>(n));
  if (deferred_count_ == 0) {
    deferred_mean_ = m;
    deferred_m2_ = m2;
    deferred_count_ = n;
    return;
  }
  // Chan et al.'s pairwise combination: no sum of squares minus squared sum, whose
  // cancellation would cost digits.
  const double a = static_cast<double>(deferred_count_), b = static_cast<double>(n), total = a + b;
  Tensor delta = wick::sub(m, deferred_mean_);
  deferred_mean_ = wick::add(deferred_mean_, wick::mul(delta, b / total));
  deferred_m2_ = wick::add(wick::add(deferred_m2_, m2), wick::mul(wick::mul(delta, delta), a * b / total));
  deferred_count_ += n;
}

void BatchNorm::commit_running_stats() {
  if (!deferring_ || deferred_forwards_ == 0) return;
  Tensor& count = buffer("num_batches_tracked");
  count.add_(Scalar(1));
  if (deferred_count_ > 0) {
    const double momentum = bn_.momentum ? *bn_.momentum : 1.0 / static_cast<double>(count.item<int64_t>());
    // As the batch_norm kernel: the unbiased variance (infinite for a single value).
    const double n = static_cast<double>(deferred_count_);
    Tensor unbiased = wick::div(deferred_m2_, n > 1 ? n - 1 : 0.0);
    for (auto [name, stat] : {std::pair{"running_mean", &deferred_mean_}, std::pair{"running_var", &unbiased}}) {
      Tensor& running = buffer(name);
      running.copy_(wick::add(wick::mul(running.to(stat->dtype()), 1 - momentum), wick::mul(*stat, momentum)));
    }
  }
  deferred_forwards_ = 0;
  deferred_count_ = 0;
  deferred_mean_ = deferred_m2_ = Tensor();
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

RMSNorm::RMSNorm(Shape normalized_shape, std::optional<double> eps, bool elementwise_affine, const Options& o)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  check_floating(*this, o);
  WICK_CHECK(!normalized_shape_.empty(), "RMSNorm: normalized_shape must not be empty");
  if (elementwise_affine) weight = register_parameter("weight", ones(normalized_shape_, o));
}

Variable RMSNorm::forward(const Variable& x) { return rms_norm(x, normalized_shape_, weight, eps_); }

InstanceNorm::InstanceNorm(int64_t num_features, const InstanceNormOptions& in, const Options& o,
                           int64_t spatial_dims)
    : num_features_(num_features), in_(in), spatial_dims_(spatial_dims) {
  WICK_CHECK(num_features > 0, "InstanceNorm: num_features must be positive, got ", num_features);
  WICK_CHECK(is_floating(o.dtype), "InstanceNorm: parameters must be floating, not ", dtype_name(o.dtype));
  if (in.affine) {
    weight = register_parameter("weight", ones({num_features}, o));
    bias = register_parameter("bias", zeros({num_features}, o));
  }
  if (in.track_running_stats) {
    register_buffer("running_mean", zeros({num_features}, o));
    register_buffer("running_var", ones({num_features}, o));
    register_buffer("num_batches_tracked", zeros({}, Options(DType::Int64, o.device)));
  }
}

Variable InstanceNorm::forward(const Variable& x) {
  const int64_t unbatched = spatial_dims_ + 1;
  WICK_CHECK(x.dim() == unbatched || x.dim() == unbatched + 1, type_name(), ": expected a ", unbatched, "-d or ",
             unbatched + 1, "-d input, got shape ", shape_str(x.shape()));
  const bool batched = x.dim() == unbatched + 1;
  const int64_t channels = x.size(batched ? 1 : 0);
  if (in_.affine || in_.track_running_stats)
    WICK_CHECK(channels == num_features_, type_name(), ": input of shape ", shape_str(x.shape()), " has ", channels,
               " channels, expected num_features=", num_features_);
  Tensor running_mean, running_var;
  if (in_.track_running_stats) {
    running_mean = buffer("running_mean");
    running_var = buffer("running_var");
  }
  const bool use_input_stats = is_training() || !in_.track_running_stats;
  Variable y = instance_norm(batched ? x : unsqueeze(x, 0), running_mean, running_var, weight, bias, use_input_stats,
                             in_.momentum, in_.eps);
  return batched ? y : squeeze(y, 0);
}

}  // namespace wick
