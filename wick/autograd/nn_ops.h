#pragma once
// Differentiable neural-network ops on Variables (convolution, pooling, normalisation,
// recurrent steps, cross-entropy), each recording a named backward node. Their backward
// passes compute with fused tensor kernels, so most give first derivatives only (a
// create_graph backward through them throws); recurrent_cell is the exception.
#include <optional>

#include <wick/autograd/variable.h>
#include <wick/tensor/conv.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/loss.h>
#include <wick/tensor/norm.h>
#include <wick/tensor/pool.h>
#include <wick/tensor/recurrent.h>

namespace wick {

// Convolutions: conv2d, conv1d, conv_transpose2d from their rows in wick/tensor/conv.h; an
// undefined bias means none.
#include <wick/autograd/generated/conv_ops.inc>
// Pooling (see wick/tensor/pool.h): avg_pool2d and adaptive_avg_pool2d from their rows
// there; max_pool2d returns the values (the indices stay in its node).
Variable max_pool2d(const Variable& input, Size2 kernel, std::optional<Size2> stride = std::nullopt, Size2 padding = 0,
                    Size2 dilation = 1, bool ceil_mode = false);
#include <wick/autograd/generated/pool_ops.inc>
// Normalisation (see wick/tensor/norm.h); undefined weight / bias mean none. batch_norm updates
// running_mean / running_var in place when training and they are defined.
Variable batch_norm(const Variable& input, const Variable& weight, const Variable& bias, const Tensor& running_mean,
                    const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);
Variable layer_norm(const Variable& input, const Shape& normalized_shape, const Variable& weight = Variable(),
                    const Variable& bias = Variable(), double eps = 1e-5);
Variable group_norm(const Variable& input, int64_t groups, const Variable& weight = Variable(),
                    const Variable& bias = Variable(), double eps = 1e-5);
// RMS normalisation over the trailing dims `normalized_shape` (torch.nn.functional.rms_norm):
//   x / sqrt(mean(x^2) + eps) * weight
// eps defaults to the machine epsilon of the computation dtype (float64's for float64 input,
// float32's otherwise); float16/bfloat16 inputs are computed in float32 and the result cast
// back, as PyTorch. weight has shape normalized_shape or is undefined. One fused kernel each
// way (wick/tensor/norm.h; a weight of another dtype than the input's takes the composite of
// differentiable ops); twice differentiable: under create_graph its backward is composed of
// differentiable ops.
Variable rms_norm(const Variable& input, const Shape& normalized_shape, const Variable& weight = Variable(),
                  std::optional<double> eps = std::nullopt);

// The element-wise part of a recurrent time step, fused (wick/tensor/recurrent.h): gi = x W_ih^T +
// b_ih and gh = h' W_hh^T + b_hh [N, G H]; state the previous c (LSTM) or h (GRU), unused for
// RNN. Returns h and, for LSTM, c. Differentiable twice (under create_graph its backward is
// composed of differentiable ops).
struct RecurrentCellOutput {
  Variable h, c;
};
RecurrentCellOutput recurrent_cell(RecurrentCell cell, const Variable& gi, const Variable& gh,
                                   const Variable& state = Variable());

// Fused log-softmax + cross-entropy (see wick/tensor/loss.h); the target (class indices or
// probabilities) and the class weights are constants.
Variable cross_entropy(const Variable& logits, const Tensor& target, const CrossEntropyOptions& options = {});

// softmax(scale query key^T + mask) [..., L, S], the attention weights, with
// scaled_dot_product_attention's masks, causal option and default scale (and no GQA or
// dropout); leading dims broadcast as matmul's. A row whose every key is masked is 0.
Variable attention_weights(const Variable& query, const Variable& key, const Tensor& attn_mask = Tensor(),
                           bool is_causal = false, std::optional<double> scale = std::nullopt);

// How scaled_dot_product_attention computes.
enum class AttentionBackend {
  Auto,   // Fused, except with head dims above 256 (then Math)
  Fused,  // the fused kernels (wick/tensor/attention.h): memory linear in the sequence lengths,
          // dropout included
  Math,   // the composition softmax(scale q k^T + mask) v (PyTorch's math backend): the
          // score matrix in memory; differentiable twice
};

// torch.nn.functional.scaled_dot_product_attention: query [..., L, E], key [..., S, E] and
// value [..., S, Ev] -> [..., L, Ev]; the leading dims broadcast. With enable_gqa the dim
// before L is the head dim and key/value may have fewer heads than the query (Hk dividing
// Hq: query head h uses key/value head h / (Hq / Hk)). attn_mask broadcasts to the scores
// [..., L, S]: bool (true = may attend, PyTorch's convention for this function, the opposite
// of MultiheadAttention's masks) or floating (added). is_causal masks key s > query l
// (top-left aligned); not together with attn_mask, as PyTorch. scale defaults to
// 1/sqrt(E). dropout_p drops attention weights whenever it is > 0 (pass 0 in evaluation, as
// with PyTorch's function): weight (b, h, i, j) of the [B, Hq, L, S] weights is kept (and
// scaled by 1 / (1 - dropout_p)) as element ((b Hq + h) L + i) S + j of
// bernoulli({B, Hq, L, S}, 1 - dropout_p, <the inputs' dtype>, generator) would be, on either
// backend and device, and the generator advances by B Hq L S either way (B the flattened
// batch dims; dropout_p = 1 gives 0). A query whose every key is masked gives 0, as PyTorch.
// The mask gets no gradient.
Variable scaled_dot_product_attention(const Variable& query, const Variable& key, const Variable& value,
                                      const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                      bool is_causal = false, std::optional<double> scale = std::nullopt,
                                      bool enable_gqa = false, Generator* generator = nullptr,
                                      AttentionBackend backend = AttentionBackend::Auto);

}  // namespace wick
