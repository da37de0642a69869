// Entry points of the normalisation ops: argument checks, the [N, C, S] view the kernels
// see, output and statistics allocation, then one kernel slot (see wick/tensor/dispatch.h).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/norm.h>

#include <cmath>
#include <limits>
#include <string>

namespace wick {

namespace {

DType stats_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

void check_input(const char* op, const Tensor& x, int64_t min_dim) {
  WICK_CHECK(x.defined(), op, ": undefined input");
  WICK_CHECK(x.is_floating_point(), op, ": expects a floating point input, got ", dtype_name(x.dtype()),
             " of shape ", shape_str(x.shape()));
  WICK_CHECK(x.dim() >= min_dim, op, ": expects an input with at least ", min_dim, " dims, got shape ",
             shape_str(x.shape()));
}

// An optional per-channel tensor (weight, bias, running stats): undefined, or `shape` in
// x's dtype on x's device.
void check_param(const char* op, const char* what, const Tensor& p, const Shape& shape, const Tensor& x) {
  if (!p.defined()) return;
  WICK_CHECK(p.shape() == shape, op, ": ", what, " must have shape ", shape_str(shape), ", got ",
             shape_str(p.shape()), " for input of shape ", shape_str(x.shape()));
  WICK_CHECK(p.dtype() == x.dtype(), op, ": ", what, " has dtype ", dtype_name(p.dtype()), " but the input has ",
             dtype_name(x.dtype()));
  WICK_CHECK(p.device() == x.device(), op, ": ", what, " is on ", p.device().str(), " but the input is on ",
             x.device().str());
}

void check_grad(const char* op, const Tensor& g, const Tensor& x) {
  WICK_CHECK(g.defined() && g.shape() == x.shape() && g.dtype() == x.dtype() && g.device() == x.device(), op,
             ": grad_out must match the input (shape ", shape_str(x.shape()), ", ", dtype_name(x.dtype()), "), got ",
             g.defined() ? shape_str(g.shape()) : std::string("undefined"));
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? t.contiguous() : t; }

int64_t trailing_numel(const Tensor& x, int64_t from) {
  int64_t n = 1;
  for (int64_t d = from; d < x.dim(); ++d) n *= x.size(d);
  return n;
}

// The gradients `mask` asks for, uninitialised; for an empty input the parameter
// gradients are already final (zero), and the backward functions return them at once.
NormGrads allocate_grads(const Tensor& x, const Tensor& weight, const Shape& param_shape,
                         std::array<bool, 3> mask) {
  NormGrads g;
  if (mask[0]) g.input = empty(x.shape(), x.options());
  if (mask[1] && weight.defined()) g.weight = empty(param_shape, x.options());
  if (mask[2]) g.bias = empty(param_shape, x.options());
  if (x.numel() == 0)
    for (Tensor* t : {&g.weight, &g.bias})
      if (t->defined()) t->zero_();
  return g;
}

// The 3-d view [N, C, S] of a contiguous tensor (undefined stays undefined).
Tensor as_ncs(const Tensor& t, int64_t n, int64_t c, int64_t s) { return t.defined() ? t.view({n, c, s}) : t; }

}  // namespace

NormResult batch_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                      const Tensor& running_var, bool training, double momentum, double eps) {
  const char* op = "batch_norm";
  check_input(op, x_in, 2);
  const int64_t N = x_in.size(0), C = x_in.size(1), S = trailing_numel(x_in, 2);
  const Shape cs{C};
  check_param(op, "weight", weight, cs, x_in);
  check_param(op, "bias", bias, cs, x_in);
  check_param(op, "running_mean", running_mean, cs, x_in);
  check_param(op, "running_var", running_var, cs, x_in);
  WICK_CHECK(running_mean.defined() == running_var.defined(), op,
             ": running_mean and running_var must be given together");
  WICK_CHECK(training || running_mean.defined(), op, ": eval mode needs running_mean and running_var (input shape ",
             shape_str(x_in.shape()), ")");
  WICK_CHECK(!training || N * S > 1 || x_in.numel() == 0, op,
             ": expected more than 1 value per channel when training, got input of shape ",
             shape_str(x_in.shape()));
  for (const Tensor* r : {&running_mean, &running_var})
    WICK_CHECK(!r->defined() || r->is_contiguous(), op, ": running statistics must be contiguous (updated in place)");
  const Tensor x = x_in.contiguous();
  NormResult r{empty(x.shape(), x.options()), empty(cs, {stats_dtype(x.dtype()), x.device()}),
               empty(cs, {stats_dtype(x.dtype()), x.device()})};
  if (C == 0) return r;
  if (N * S == 0) {
    // No values: PyTorch leaves running stats as they are and reports NaN statistics.
    r.mean.fill_(std::nan(""));
    r.invstd.fill_(std::nan(""));
    return r;
  }
  kernel_for(&KernelTable::batch_norm, op, x.device())(as_ncs(r.out, N, C, S), r.mean, r.invstd, as_ncs(x, N, C, S), contiguous_or_undefined(weight),
               contiguous_or_undefined(bias), running_mean, running_var, training, momentum, eps);
  return r;
}

NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x_in, const Tensor& weight, const Tensor& mean,
                              const Tensor& invstd, bool training, std::array<bool, 3> mask) {
  const char* op = "batch_norm_backward";
  check_input(op, x_in, 2);
  check_grad(op, grad_out, x_in);
  const int64_t N = x_in.size(0), C = x_in.size(1), S = trailing_numel(x_in, 2);
  check_param(op, "weight", weight, {C}, x_in);
  NormGrads g = allocate_grads(x_in, weight, {C}, mask);
  if (x_in.numel() == 0) return g;
  kernel_for(&KernelTable::batch_norm_backward, op, x_in.device())(as_ncs(g.input, N, C, S), g.weight, g.bias, as_ncs(grad_out.contiguous(), N, C, S),
                        as_ncs(x_in.contiguous(), N, C, S), contiguous_or_undefined(weight), mean.contiguous(),
                        invstd.contiguous(), training);
  return g;
}

namespace {

// Layer and RMS norm as the kernels see them: M rows of K normalised elements.
struct LayerNormShape {
  int64_t m, k;
  Shape stats;  // x's leading dims
};

LayerNormShape plan_layer_norm(const char* op, const Tensor& x, const Shape& normalized_shape) {
  check_input(op, x, 1);
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  WICK_CHECK(nd >= 1 && nd <= x.dim(), op, ": normalized_shape ", shape_str(normalized_shape),
             " must be non-empty and no longer than the input shape ", shape_str(x.shape()));
  const Shape tail(x.shape().end() - nd, x.shape().end());
  WICK_CHECK(tail == normalized_shape, op, ": normalized_shape ", shape_str(normalized_shape),
             " does not match the trailing dims of input shape ", shape_str(x.shape()));
  LayerNormShape p{1, trailing_numel(x, x.dim() - nd), Shape(x.shape().begin(), x.shape().end() - nd)};
  for (int64_t s : p.stats) p.m *= s;
  return p;
}

// A [K]-shaped view of a parameter of the normalised shape (undefined stays undefined).
Tensor flat_param(const Tensor& w, int64_t k) { return w.defined() ? w.contiguous().view({k}) : w; }

// The [M, K] view of a contiguous tensor of x's shape (undefined stays undefined).
Tensor as_rows(const Tensor& t, const LayerNormShape& p) { return t.defined() ? t.view({p.m, p.k}) : t; }

}  // namespace

NormResult layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                      double eps) {
  const char* op = "layer_norm";
  const LayerNormShape p = plan_layer_norm(op, x_in, normalized_shape);
  check_param(op, "weight", weight, normalized_shape, x_in);
  check_param(op, "bias", bias, normalized_shape, x_in);
  const Tensor x = x_in.contiguous();
  const Options so{stats_dtype(x.dtype()), x.device()};
  NormResult r{empty(x.shape(), x.options()), empty(p.stats, so), empty(p.stats, so)};
  if (x.numel() == 0) return r;
  kernel_for(&KernelTable::layer_norm, op, x.device())(r.out.view({p.m, p.k}), r.mean, r.invstd, x.view({p.m, p.k}),
                                                       flat_param(weight, p.k), flat_param(bias, p.k), false, eps);
  return r;
}

NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x_in, const Shape& normalized_shape,
                              const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                              std::array<bool, 3> mask) {
  const char* op = "layer_norm_backward";
  const LayerNormShape p = plan_layer_norm(op, x_in, normalized_shape);
  check_grad(op, grad_out, x_in);
  check_param(op, "weight", weight, normalized_shape, x_in);
  NormGrads g = allocate_grads(x_in, weight, normalized_shape, mask);
  if (x_in.numel() == 0) return g;
  kernel_for(&KernelTable::layer_norm_backward, op, x_in.device())(
      as_rows(g.input, p), flat_param(g.weight, p.k), flat_param(g.bias, p.k), as_rows(grad_out.contiguous(), p),
      as_rows(x_in.contiguous(), p), flat_param(weight, p.k), mean.contiguous(), invstd.contiguous(), false);
  return g;
}

NormResult rms_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  const char* op = "rms_norm";
  const LayerNormShape p = plan_layer_norm(op, x_in, normalized_shape);
  check_param(op, "weight", weight, normalized_shape, x_in);
  const Tensor x = x_in.contiguous();
  const DType st = stats_dtype(x.dtype());
  const double e = eps.value_or(st == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                     : static_cast<double>(std::numeric_limits<float>::epsilon()));
  NormResult r{empty(x.shape(), x.options()), Tensor(), empty(p.stats, {st, x.device()})};
  if (x.numel() == 0) return r;
  kernel_for(&KernelTable::layer_norm, op, x.device())(r.out.view({p.m, p.k}), Tensor(), r.invstd, x.view({p.m, p.k}),
                                                       flat_param(weight, p.k), Tensor(), true, e);
  return r;
}

NormGrads rms_norm_backward(const Tensor& grad_out, const Tensor& x_in, const Shape& normalized_shape,
                            const Tensor& weight, const Tensor& invstd, std::array<bool, 2> mask) {
  const char* op = "rms_norm_backward";
  const LayerNormShape p = plan_layer_norm(op, x_in, normalized_shape);
  check_grad(op, grad_out, x_in);
  check_param(op, "weight", weight, normalized_shape, x_in);
  NormGrads g = allocate_grads(x_in, weight, normalized_shape, {mask[0], mask[1], false});
  if (x_in.numel() == 0) return g;
  kernel_for(&KernelTable::layer_norm_backward, op, x_in.device())(
      as_rows(g.input, p), flat_param(g.weight, p.k), Tensor(), as_rows(grad_out.contiguous(), p),
      as_rows(x_in.contiguous(), p), flat_param(weight, p.k), Tensor(), invstd.contiguous(), true);
  return g;
}

namespace {

void check_groups(const char* op, const Tensor& x, int64_t groups) {
  check_input(op, x, 2);
  WICK_CHECK(groups > 0 && x.size(1) % groups == 0, op, ": ", x.size(1), " channels (input shape ",
             shape_str(x.shape()), ") are not divisible into ", groups, " groups");
}

}  // namespace

NormResult group_norm(const Tensor& x_in, int64_t groups, const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "group_norm";
  check_groups(op, x_in, groups);
  const int64_t N = x_in.size(0), C = x_in.size(1), S = trailing_numel(x_in, 2);
  // PyTorch's F.group_norm refuses a single value to normalise over all of the batch's
  // groups together (its _verify_batch_size on [N * C / G, G, spatial...]).
  WICK_CHECK(N * (C / groups) * S != 1, op, ": expected more than 1 value per channel, got input of shape ",
             shape_str(x_in.shape()), " with ", groups, " groups");
  check_param(op, "weight", weight, {C}, x_in);
  check_param(op, "bias", bias, {C}, x_in);
  const Tensor x = x_in.contiguous();
  const Options so{stats_dtype(x.dtype()), x.device()};
  NormResult r{empty(x.shape(), x.options()), empty({N, groups}, so), empty({N, groups}, so)};
  if (x.numel() == 0) {
    r.mean.fill_(std::nan(""));
    r.invstd.fill_(std::nan(""));
    return r;
  }
  kernel_for(&KernelTable::group_norm, op, x.device())(as_ncs(r.out, N, C, S), r.mean, r.invstd, as_ncs(x, N, C, S), contiguous_or_undefined(weight),
               contiguous_or_undefined(bias), groups, eps);
  return r;
}

NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& x_in, int64_t groups, const Tensor& weight,
                              const Tensor& mean, const Tensor& invstd, std::array<bool, 3> mask) {
  const char* op = "group_norm_backward";
  check_groups(op, x_in, groups);
  check_grad(op, grad_out, x_in);
  const int64_t N = x_in.size(0), C = x_in.size(1), S = trailing_numel(x_in, 2);
  check_param(op, "weight", weight, {C}, x_in);
  NormGrads g = allocate_grads(x_in, weight, {C}, mask);
  if (x_in.numel() == 0) return g;
  kernel_for(&KernelTable::group_norm_backward, op, x_in.device())(as_ncs(g.input, N, C, S), g.weight, g.bias, as_ncs(grad_out.contiguous(), N, C, S),
                        as_ncs(x_in.contiguous(), N, C, S), contiguous_or_undefined(weight), mean.contiguous(),
                        invstd.contiguous(), groups);
  return g;
}

}  // namespace wick
