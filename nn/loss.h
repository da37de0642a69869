#pragma once
// Loss functions (torch.nn.functional's), built from differentiable ops. Each takes a
// reduction (tensor/loss.h): None (per element), Mean or Sum. Inputs and targets of the
// elementwise losses must have the same shape.
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/variable.h>
#include <wick/tensor/loss.h>

namespace wick {

// (x - y)^2
Variable mse_loss(const Variable& input, const Variable& target, Reduction reduction = Reduction::Mean);
// |x - y|
Variable l1_loss(const Variable& input, const Variable& target, Reduction reduction = Reduction::Mean);
// 0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - 0.5 beta (beta = 0: l1).
Variable smooth_l1_loss(const Variable& input, const Variable& target, Reduction reduction = Reduction::Mean,
                        double beta = 1.0);

// Binary cross-entropy on logits x with targets y in [0, 1], in the stable form
//   (1 - y) x + (1 + (pos_weight - 1) y) (log(1 + exp(-|x|)) + max(-x, 0))
// times `weight`. pos_weight (one per class, broadcast along the last dim) and weight
// (broadcast to the input) are optional (undefined tensors).
Variable bce_with_logits(const Variable& input, const Variable& target, Reduction reduction = Reduction::Mean,
                         const Tensor& pos_weight = Tensor(), const Tensor& weight = Tensor());

// KL divergence with `input` given as log-probabilities: target (log(target) - input), 0
// where target is 0; with log_target the target is given as log-probabilities too.
// Mean averages over every element; BatchMean divides the sum by input.size(0) (the true KL
// per sample, as PyTorch recommends).
enum class KLDivReduction { None, Mean, Sum, BatchMean };
Variable kl_div(const Variable& input, const Variable& target, KLDivReduction reduction = KLDivReduction::Mean,
                bool log_target = false);

// Negative log-likelihood of log-probabilities `input` [N, C] or [N, C, d...] (or [C]) at
// integer class `target` [N] or [N, d...] (or 0-d): -weight[t] * input[n, t]. Targets equal
// to ignore_index count nowhere; Mean divides by the summed weights of the rest.
Variable nll_loss(const Variable& input, const Tensor& target, const Tensor& weight = Tensor(),
                  int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);

// cross_entropy (class indices or probabilities, weights, ignore_index, label smoothing) is
// the fused op of autograd/nn_ops.h, included here.

}  // namespace wick
