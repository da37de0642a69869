#pragma once
// Batch, layer, RMS and group normalisation: forward (returning what backward needs) and fused
// backward helpers. Statistics (mean, invstd = 1 / sqrt(var + eps)) are kept in the input's
// dtype, or float32 for 16-bit inputs. Autograd wraps these in wick/autograd/nn_ops.h.
#include <array>
#include <optional>

#include <wick/tensor/tensor.h>

namespace wick {

struct NormResult {
  Tensor out;
  Tensor mean;    // batch norm: [C]; layer norm: x's leading dims; group norm: [N, groups]; rms norm: undefined
  Tensor invstd;  // same shape as mean
};

// Gradients of a normalisation; each is undefined when its output_mask entry is false or
// (weight, bias) the forward had none.
struct NormGrads {
  Tensor input, weight, bias;
};

// x: [N, C] or [N, C, *]; weight, bias: [C] or undefined. Training normalises with the batch
// statistics (biased variance) and, when running_mean / running_var ([C], x's dtype,
// contiguous) are defined, blends them in place: r = (1 - momentum) r + momentum * stat with
// the unbiased variance, as PyTorch does. Eval normalises with the running statistics,
// which must then be defined.
NormResult batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                      const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);
NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& mean,
                              const Tensor& invstd, bool training,
                              std::array<bool, 3> output_mask = {true, true, true});

// Normalises over the trailing dims given by normalized_shape; weight, bias have that shape
// or are undefined.
NormResult layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                      double eps = 1e-5);
NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x, const Shape& normalized_shape,
                              const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                              std::array<bool, 3> output_mask = {true, true, true});

// RMS normalisation over the trailing dims normalized_shape (torch.nn.functional.rms_norm):
// out = x * invstd * weight with invstd = 1 / sqrt(mean(x^2) + eps) per row of the normalised
// dims; weight has that shape or is undefined. eps defaults to the machine epsilon of the
// statistics dtype (float64's for float64 x, float32's otherwise). The result's mean is
// undefined; invstd has x's leading dims. The gradients have no bias (undefined).
NormResult rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                    std::optional<double> eps = std::nullopt);
NormGrads rms_norm_backward(const Tensor& grad_out, const Tensor& x, const Shape& normalized_shape,
                            const Tensor& weight, const Tensor& invstd,
                            std::array<bool, 2> output_mask = {true, true});

// x: [N, C, *] with C divisible by groups; weight, bias: [C] or undefined.
NormResult group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t groups, const Tensor& weight,
                              const Tensor& mean, const Tensor& invstd,
                              std::array<bool, 3> output_mask = {true, true, true});

}  // namespace wick
