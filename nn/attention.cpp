#include <wick/nn/attention.h>

#include <cmath>
#include <limits>

#include <wick/autograd/ops.h>
#include <wick/nn/init.h>
#include <wick/tensor/factories.h>

namespace wick {

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                       const Options& o, Generator* g)
    : MultiheadAttention(embed_dim, num_heads, MultiheadAttentionOptions{dropout, bias, std::nullopt, std::nullopt},
                         o, g) {}

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, const MultiheadAttentionOptions& mo,
                                       const Options& o, Generator* g)
    : embed_dim_(embed_dim),
      num_heads_(num_heads),
      kdim_(mo.kdim.value_or(embed_dim)),
      vdim_(mo.vdim.value_or(embed_dim)),
      dropout_(mo.dropout),
      generator_(g) {
  WICK_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % num_heads == 0, "MultiheadAttention: num_heads=",
             num_heads, " must divide embed_dim=", embed_dim);
  WICK_CHECK(mo.dropout >= 0 && mo.dropout <= 1, "MultiheadAttention: dropout must be in [0, 1], got ", mo.dropout);
  WICK_CHECK(kdim_ > 0 && vdim_ > 0, "MultiheadAttention: kdim and vdim must be positive, got kdim=", kdim_,
             ", vdim=", vdim_);
  // PyTorch's registration order: the projection weights, in_proj_bias, out_proj.
  if (qkv_same_embed_dim()) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}, o));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({embed_dim, embed_dim}, o));
    k_proj_weight = register_parameter("k_proj_weight", empty({embed_dim, kdim_}, o));
    v_proj_weight = register_parameter("v_proj_weight", empty({embed_dim, vdim_}, o));
  }
  if (mo.bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * embed_dim}, o));
  out_proj = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, mo.bias, o, g));
  reset_parameters(g);
}

void MultiheadAttention::reset_parameters(Generator* g) {
  // PyTorch: xavier on the stacked projection (or on each separate one), zero biases;
  // out_proj keeps Linear's weight.
  if (in_proj_weight.defined()) {
    init::xavier_uniform_(in_proj_weight.data(), 1.0, g);
  } else {
    init::xavier_uniform_(q_proj_weight.data(), 1.0, g);
    init::xavier_uniform_(k_proj_weight.data(), 1.0, g);
    init::xavier_uniform_(v_proj_weight.data(), 1.0, g);
  }
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias.data());
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias.data());
}

std::pair<Variable, Variable> MultiheadAttention::attend(const Variable& query, const Variable& key,
                                                         const Variable& value, const Tensor& attn_mask,
                                                         const Tensor& key_padding_mask, bool is_causal) {
  const int64_t e = embed_dim_, h = num_heads_, d = e / h;
  WICK_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3 && query.size(2) == e && key.size(2) == kdim_ &&
                 value.size(2) == vdim_ && key.size(0) == query.size(0) && value.size(0) == key.size(0) &&
                 value.size(1) == key.size(1),
             "MultiheadAttention: expected query [N, L, ", e, "], key [N, S, ", kdim_, "] and value [N, S, ", vdim_,
             "], got ", shape_str(query.shape()), ", ", shape_str(key.shape()), ", ", shape_str(value.shape()));
  const int64_t n = query.size(0), l = query.size(1), s = key.size(1);
  // Projects x with projection i (q, k, v): rows [i E, (i + 1) E) of the stacked weights, or
  // the separate weight; split into heads [N, H, len, D].
  auto project = [&](const Variable& x, int64_t i) {
    const Variable& separate = i == 0 ? q_proj_weight : i == 1 ? k_proj_weight : v_proj_weight;
    Variable w = in_proj_weight.defined() ? slice(in_proj_weight, 0, i * e, (i + 1) * e) : separate;
    Variable y = matmul(x, transpose(w, 0, 1));
    if (in_proj_bias.defined()) y = add(y, slice(in_proj_bias, 0, i * e, (i + 1) * e));
    return permute(reshape(y, {n, x.size(1), h, d}), {0, 2, 1, 3});
  };
  Variable q = project(query, 0), k = project(key, 1), v = project(value, 2);
  Variable scores = mul(matmul(q, transpose(k, 2, 3)), 1.0 / std::sqrt(static_cast<double>(d)));  // [N, H, L, S]
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (attn_mask.defined()) {
    WICK_CHECK(attn_mask.shape() == (Shape{l, s}), "MultiheadAttention: attn_mask ", shape_str(attn_mask.shape()),
               " must be [L, S] = ", shape_str({l, s}));
    scores = attn_mask.dtype() == DType::Bool ? masked_fill(scores, attn_mask, neg_inf)
                                              : add(scores, Variable(attn_mask.to(scores.dtype())));
  }
  if (is_causal) {
    // Key s is masked for query l when s > l.
    const Options idx(DType::Int64, scores.device());
    Tensor later = gt(arange(0, s, 1, idx).unsqueeze(0), arange(0, l, 1, idx).unsqueeze(1));  // [L, S]
    scores = masked_fill(scores, later, neg_inf);
  }
  if (key_padding_mask.defined()) {
    WICK_CHECK(key_padding_mask.dtype() == DType::Bool && key_padding_mask.shape() == (Shape{n, s}),
               "MultiheadAttention: key_padding_mask must be bool [N, S] = ", shape_str({n, s}), ", got ",
               dtype_name(key_padding_mask.dtype()), " ", shape_str(key_padding_mask.shape()));
    scores = masked_fill(scores, key_padding_mask.reshape({n, 1, 1, s}), neg_inf);
  }
  // A query whose every key is masked attends to nothing (PyTorch's TransformerEncoderLayer
  // gives 0 there): softmax over a row of -inf would be NaN, and the NaN would reach the
  // gradients of the projections through the softmax backward. Such rows get finite scores
  // and then weights of 0, which pass no gradient. (No host check for whether any row is
  // dead: that would synchronise with the device on every masked forward.)
  Variable weights;
  if (attn_mask.defined() || key_padding_mask.defined() || is_causal) {
    Tensor dead = all(eq(scores.data(), neg_inf), {-1}, /*keepdim=*/true);
    weights = masked_fill(softmax(masked_fill(scores, dead, 0.0), -1), dead, 0.0);
  } else {
    weights = softmax(scores, -1);
  }
  weights = wick::dropout(weights, dropout_, is_training(), generator_);
  Variable out = reshape(permute(matmul(weights, v), {0, 2, 1, 3}), {n, l, e});
  return {out_proj->forward(out), weights};
}

Variable MultiheadAttention::forward(const Variable& query, const Variable& key, const Variable& value,
                                     const Tensor& attn_mask, const Tensor& key_padding_mask, bool is_causal) {
  return attend(query, key, value, attn_mask, key_padding_mask, is_causal).first;
}

std::pair<Variable, Variable> MultiheadAttention::forward_with_weights(const Variable& query, const Variable& key,
                                                                       const Variable& value, const Tensor& attn_mask,
                                                                       const Tensor& key_padding_mask,
                                                                       bool average_attn_weights, bool is_causal) {
  auto [out, weights] = attend(query, key, value, attn_mask, key_padding_mask, is_causal);
  if (average_attn_weights) weights = mean(weights, {1});
  return {out, weights};
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, const TransformerEncoderLayerOptions& t,
                                                 const Options& o, Generator* g)
    : t_(t) {
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(d_model, nhead, t.dropout, true, o, g));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, t.dim_feedforward, true, o, g));
  dropout = register_module("dropout", std::make_shared<Dropout>(t.dropout, g));
  linear2 = register_module("linear2", std::make_shared<Linear>(t.dim_feedforward, d_model, true, o, g));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(Shape{d_model}, t.layer_norm_eps, true, true, o));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(Shape{d_model}, t.layer_norm_eps, true, true, o));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(t.dropout, g));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(t.dropout, g));
}

Variable TransformerEncoderLayer::self_attention_block(const Variable& x, const Tensor& mask, const Tensor& padding,
                                                       bool is_causal) {
  return dropout1->forward(self_attn->forward(x, x, x, mask, padding, is_causal));
}

Variable TransformerEncoderLayer::feed_forward_block(const Variable& x) {
  Variable hidden = linear1->forward(x);
  hidden = t_.gelu ? gelu(hidden) : relu(hidden);
  return dropout2->forward(linear2->forward(dropout->forward(hidden)));
}

Variable TransformerEncoderLayer::forward(const Variable& src, const Tensor& src_mask,
                                          const Tensor& src_key_padding_mask, bool is_causal) {
  Variable x = src;
  if (t_.norm_first) {
    x = add(x, self_attention_block(norm1->forward(x), src_mask, src_key_padding_mask, is_causal));
    return add(x, feed_forward_block(norm2->forward(x)));
  }
  x = norm1->forward(add(x, self_attention_block(x, src_mask, src_key_padding_mask, is_causal)));
  return norm2->forward(add(x, feed_forward_block(x)));
}

}  // namespace wick
