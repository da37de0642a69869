#pragma once
// MultiheadAttention and TransformerEncoderLayer (batch-first: [N, L, E]), with PyTorch's
// parameter names and initialisation, so state dicts line up with torch.nn's.
#include <memory>

#include <wick/nn/activation.h>
#include <wick/nn/dropout.h>
#include <wick/nn/linear.h>
#include <wick/nn/norm.h>

namespace wick {

// softmax(q k^T / sqrt(head_dim) + mask) v per head, between the in- and out-projections.
// Masks (optional): attn_mask [L, S], bool (true = may not attend) or floating (added to the
// scores); key_padding_mask [N, S] bool (true = padding key). Dropout applies to the
// attention weights in training.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "MultiheadAttention"; }
  // query [N, L, E], key and value [N, S, E] -> [N, L, E].
  Variable forward(const Variable& query, const Variable& key, const Variable& value,
                   const Tensor& attn_mask = Tensor(), const Tensor& key_padding_mask = Tensor());
  void reset_parameters(Generator* g = nullptr);

  int64_t embed_dim() const { return embed_dim_; }
  int64_t num_heads() const { return num_heads_; }

  Variable in_proj_weight;  // [3E, E]: the q, k and v projections stacked
  Variable in_proj_bias;    // [3E] or undefined
  std::shared_ptr<Linear> out_proj;

 private:
  int64_t embed_dim_, num_heads_;
  double dropout_;
  Generator* generator_;
};

struct TransformerEncoderLayerOptions {
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  bool gelu = false;  // the feed-forward activation: relu, or gelu when set
  double layer_norm_eps = 1e-5;
  bool norm_first = false;  // pre-norm (x + f(norm(x))) instead of post-norm (norm(x + f(x)))
};

// Self-attention then a two-layer feed-forward block, each with a residual connection and
// layer norm.
class TransformerEncoderLayer : public UnaryModule {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, const TransformerEncoderLayerOptions& t = {},
                          const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "TransformerEncoderLayer"; }
  Variable forward(const Variable& src) override { return forward(src, Tensor(), Tensor()); }
  Variable forward(const Variable& src, const Tensor& src_mask, const Tensor& src_key_padding_mask);

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;

 private:
  Variable self_attention_block(const Variable& x, const Tensor& mask, const Tensor& padding);
  Variable feed_forward_block(const Variable& x);
  TransformerEncoderLayerOptions t_;
};

}  // namespace wick
