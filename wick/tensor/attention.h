#pragma once
// Fused scaled dot-product attention on 4-d tensors, forward (returning what backward needs)
// and backward: softmax(scale q k^T + bias) v without the [L, S] score matrix in memory.
// Autograd's scaled_dot_product_attention (wick/autograd/nn_ops.h) shapes its arguments into
// these; use that one.
#include <wick/tensor/generator.h>
#include <wick/tensor/tensor.h>

namespace wick {

// The parameters of the attention kernels (their slots are after the losses in KernelTable).
struct AttentionParams {
  double scale = 1.0;   // a score is scale * (q . k) + bias
  bool causal = false;  // key s is masked for query l when s > l (top-left aligned, as PyTorch)
  // Dropout of the attention weights (after the softmax): weight (b, h, i, j) is kept with
  // probability 1 - dropout, and then multiplied by 1 / (1 - dropout), by the draw that
  // Philox counter dropout_state.offset + n makes, n = ((b Hq + h) L + i) S + j its index in
  // [B, Hq, L, S]: the draw bernoulli(1 - dropout) makes for element n of a [B, Hq, L, S]
  // tensor (kernels/attention_math.h, Dropout). The backward regenerates the same mask
  // from the same state.
  double dropout = 0.0;
  PhiloxState dropout_state{};
};

struct AttentionResult {
  Tensor out;  // [B, Hq, L, Ev], q's dtype
  Tensor lse;  // [B, Hq, L] log-sum-exp of each row's scores (float64 for float64, else float32)
};

struct AttentionGrads {
  Tensor q, k, v;
};

// q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] of one floating dtype and device, Hq a
// multiple of Hk (query head h uses key/value head h / (Hq / Hk)). bias: undefined or
// [B, Hq, L, S] (broadcast views welcome) of any floating dtype, added to the scores
// (-inf masks). A row whose every key is masked gives 0. p.dropout > 0 drops weights by
// p.dropout_state (see AttentionParams); lse stays that of the undropped scores, and the
// backward must get the same p to draw the same mask.
AttentionResult attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                                  const AttentionParams& p);
// Bool [l, s]: true where causal attention hides key j from query i (j > i, top-left
// aligned), the mask is_causal stands for.
Tensor causal_mask(int64_t l, int64_t s, Device device = Device::cpu());

// The gradients of q, k and v for grad_out [B, Hq, L, Ev], from the forward's out and lse.
AttentionGrads attention_backward(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& bias, const AttentionResult& forward, const AttentionParams& p);

}  // namespace wick
