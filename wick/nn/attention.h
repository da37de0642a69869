#pragma once
// MultiheadAttention (batch-first: [N, L, E]), with PyTorch's parameter names and
// initialisation, so state dicts line up with torch.nn's. The Transformer layers built on it
// are in wick/nn/transformer.h.
#include <array>
#include <memory>
#include <optional>
#include <utility>

#include <wick/nn/linear.h>

namespace wick {

// Construction options beyond embed_dim and num_heads (torch.nn.MultiheadAttention's).
struct MultiheadAttentionOptions {
  double dropout = 0.0;  // on the attention weights, in training
  bool bias = true;      // in_proj_bias [3E] and out_proj's bias
  // The feature sizes of key and value (unset: embed_dim). When either differs from
  // embed_dim, the projections are separate parameters q_proj_weight [E, E],
  // k_proj_weight [E, kdim] and v_proj_weight [E, vdim] instead of in_proj_weight, as
  // PyTorch (the state dict names follow).
  std::optional<int64_t> kdim, vdim;
};

// softmax(q k^T / sqrt(head_dim) + mask) v per head, between the in- and out-projections.
// Masks (optional): attn_mask [L, S], bool (true = may not attend) or floating (added to the
// scores); key_padding_mask [N, S] bool (true = padding key); is_causal masks every key
// after the query's own position (key s > query l, the upper triangle of [L, S], top-left
// aligned when L != S). PyTorch takes is_causal as a hint that attn_mask is already that
// mask and requires attn_mask with it; wick builds the causal mask itself, and applies
// attn_mask too when it is given. Dropout applies to the attention weights in training.
// A query whose every key is masked attends to nothing: its output is 0 before out_proj
// (out_proj's bias after it) and its attention weights are 0, where PyTorch gives NaN.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     const Options& o = {}, Generator* g = nullptr);
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& mo,
                     const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "MultiheadAttention"; }
  // query [N, L, E], key [N, S, kdim] and value [N, S, vdim] -> [N, L, E]
  // (PyTorch's need_weights=False).
  Variable forward(const Variable& query, const Variable& key, const Variable& value,
                   const Tensor& attn_mask = Tensor(), const Tensor& key_padding_mask = Tensor(),
                   bool is_causal = false);
  // PyTorch's need_weights=True: (output [N, L, E], attention weights). The weights are
  // averaged over the heads, [N, L, S], or per head, [N, num_heads, L, S], with
  // average_attn_weights = false. In training they are the weights after dropout (those
  // that multiplied the values), as PyTorch returns them. Differentiable, like the output.
  //   auto [out, weights] = mha.forward_with_weights(x, x, x);
  std::pair<Variable, Variable> forward_with_weights(const Variable& query, const Variable& key,
                                                     const Variable& value, const Tensor& attn_mask = Tensor(),
                                                     const Tensor& key_padding_mask = Tensor(),
                                                     bool average_attn_weights = true, bool is_causal = false);
  void reset_parameters(Generator* g = nullptr);

  int64_t embed_dim() const { return embed_dim_; }
  int64_t num_heads() const { return num_heads_; }
  int64_t kdim() const { return kdim_; }
  int64_t vdim() const { return vdim_; }
  // Whether key and value have embed_dim features (one stacked in_proj_weight).
  bool qkv_same_embed_dim() const { return kdim_ == embed_dim_ && vdim_ == embed_dim_; }

  Variable in_proj_weight;  // [3E, E]: the q, k and v projections stacked (undefined when separate)
  Variable q_proj_weight;   // [E, E], [E, kdim], [E, vdim] when kdim or vdim differs from E
  Variable k_proj_weight;
  Variable v_proj_weight;
  Variable in_proj_bias;  // [3E] or undefined
  std::shared_ptr<Linear> out_proj;

 private:
  // query, key and value projected and split into heads [N, H, len, D].
  std::array<Variable, 3> project_heads(const Variable& query, const Variable& key, const Variable& value) const;
  // The output and the per-head weights [N, H, L, S] (the composition: forward_with_weights).
  std::pair<Variable, Variable> attend(const Variable& query, const Variable& key, const Variable& value,
                                       const Tensor& attn_mask, const Tensor& key_padding_mask, bool is_causal);
  int64_t embed_dim_, num_heads_, kdim_, vdim_;
  double dropout_;
  Generator* generator_;
};

}  // namespace wick
