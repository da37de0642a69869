#pragma once
// Loss functions (torch.nn.functional's), built from differentiable ops. Each takes a
// reduction (wick/tensor/loss.h): None (per element), Mean or Sum. Inputs and targets of the
// elementwise losses (mse, l1, smooth_l1, huber, binary_cross_entropy, bce_with_logits,
// kl_div) must have the same shape: PyTorch warns and broadcasts where wick refuses (and
// refuses binary_cross_entropy's too).
#include <vector>

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

// 0.5 (x - y)^2 where |x - y| < delta, else delta (|x - y| - 0.5 delta); delta > 0.
Variable huber_loss(const Variable& input, const Variable& target, Reduction reduction = Reduction::Mean,
                    double delta = 1.0);

// Binary cross-entropy on probabilities x in [0, 1] (inputs outside, or NaN, are refused, as
// PyTorch): -weight (y log(x) + (1 - y) log(1 - x)), each log clamped to >= -100 so that
// x = 0 or 1 gives a finite loss. weight (optional) broadcasts to the input. The gradient is
// that of this formula: where a log is clamped (x within e^-100 of 0 or 1, e.g. exactly 0 or
// 1) its term contributes no gradient, where PyTorch's hand-written backward gives
// weight (x - y) / max(x (1 - x), 1e-12) everywhere. For logits, bce_with_logits is stabler.
// Refused under an AutocastGuard on the inputs' device type, as torch.autocast refuses it
// (bce_with_logits is safe to autocast).
Variable binary_cross_entropy(const Variable& input, const Variable& target, const Tensor& weight = Tensor(),
                              Reduction reduction = Reduction::Mean);

// max(0, -y (x1 - x2) + margin), y in {1, -1} (any value is used as given). The three
// inputs must have the same number of dims and broadcast, as PyTorch.
Variable margin_ranking_loss(const Variable& input1, const Variable& input2, const Variable& target,
                             double margin = 0.0, Reduction reduction = Reduction::Mean);

// With c = x1.x2 / sqrt((||x1||^2 + 1e-12) (||x2||^2 + 1e-12)) along the last dim (PyTorch's
// formula): 1 - c where y = 1, max(0, c - margin) where y = -1, 0 for other y. x1, x2 [N, D]
// with y [N], or [D] with a 0-d y (then None gives a 0-d loss).
Variable cosine_embedding_loss(const Variable& input1, const Variable& input2, const Tensor& target,
                               double margin = 0.0, Reduction reduction = Reduction::Mean);

// max(0, margin + d(a, p) - d(a, n)) with d = pairwise_distance(., ., p, eps); with swap,
// d(a, n) is replaced by min(d(a, n), d(p, n)) (at a tie each gets half the gradient). The
// three inputs must have the same number of dims ([N, D] or [D]).
Variable triplet_margin_loss(const Variable& anchor, const Variable& positive, const Variable& negative,
                             double margin = 1.0, double p = 2.0, double eps = 1e-6, bool swap = false,
                             Reduction reduction = Reduction::Mean);

// Poisson negative log-likelihood of target y given the rate: with log_input the input is
// log(rate) and the loss exp(x) - y x, else the input is the rate and the loss
// x - y log(x + eps). full adds Stirling's approximation of log(y!),
// y log(y) - y + 0.5 log(2 pi y), where y > 1 (0 elsewhere). Input and target broadcast, as
// PyTorch.
Variable poisson_nll_loss(const Variable& input, const Variable& target, bool log_input = true, bool full = false,
                          double eps = 1e-8, Reduction reduction = Reduction::Mean);

// Gaussian negative log-likelihood: 0.5 (log(max(var, eps)) + (x - y)^2 / max(var, eps)),
// plus 0.5 log(2 pi) with full. var has the input's shape, or the input's without its last
// dim, or that with a last dim of 1 (one variance for a whole row); target broadcasts with
// the input. A negative var is refused. As PyTorch, the clamp to eps changes the value only:
// var's gradient is taken as if it were not clamped.
Variable gaussian_nll_loss(const Variable& input, const Variable& target, const Variable& var, bool full = false,
                           double eps = 1e-6, Reduction reduction = Reduction::Mean);

// Connectionist temporal classification: -log of the total probability of every alignment
// of the target to the log-probabilities log_probs [T, N, C] (or [T, C] unbatched), class
// `blank` marking "no label". targets are padded [N, S] (row n's first target_lengths[n]
// entries are used) or all targets concatenated in 1-d (always so for an unbatched input);
// input_lengths[n] <= T steps of sample n are read. An impossible alignment (too few steps)
// gives inf, or 0 with zero_infinity (with zero gradient either way); an empty input gives
// 0 for an empty target and inf otherwise. Mean divides each sample's loss by its target
// length (at least 1) and averages over the batch; Sum adds; None gives [N] (0-d unbatched).
//
// Written for clarity, not speed: the forward (alpha) recursion in log space with
// differentiable ops, one small step per time step (about 15 ops on [N, 2S + 1]
// tensors), and the gradient comes from autograd through it. The gradient with respect to
// log_probs is PyTorch's, not the exact derivative: exp(log_probs) - (posterior of each
// class at each step), times the incoming gradient and the reduction's scale, for the steps
// before each sample's input length (0 at and past it). The exp(log_probs) part comes from a
// term added to each sample's loss whose value is exactly 0 (x - x). When log_probs come from
// log_softmax (the usual case) that part cancels in the logits' gradient, which is then the
// exact derivative softmax - posterior. A sample with an infinite loss (an impossible
// alignment) has no derivative: its gradient is NaN over its input steps, as PyTorch's, or
// 0 with zero_infinity.
Variable ctc_loss(const Variable& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                  const std::vector<int64_t>& target_lengths, int64_t blank = 0,
                  Reduction reduction = Reduction::Mean, bool zero_infinity = false);

// cross_entropy (class indices or probabilities, weights, ignore_index, label smoothing) is
// the fused op of wick/autograd/nn_ops.h, included here.

}  // namespace wick
