#include <wick/nn/attention.h>

#include <cmath>
#include <limits>

#include <wick/autograd/ops.h>
#include <wick/nn/init.h>
#include <wick/tensor/factories.h>

namespace wick {

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                                       const Options& o, Generator* g)
    : embed_dim_(embed_dim), num_heads_(num_heads), dropout_(dropout), generator_(g) {
  WICK_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % num_heads == 0, "MultiheadAttention: num_heads=",
             num_heads, " must divide embed_dim=", embed_dim);
  WICK_CHECK(dropout >= 0 && dropout <= 1, "MultiheadAttention: dropout must be in [0, 1], got ", dropout);
  in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed_dim, embed_dim}, o));
  if (bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * embed_dim}, o));
  out_proj = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, bias, o, g));
  reset_parameters(g);
}

void MultiheadAttention::reset_parameters(Generator* g) {
  // PyTorch: xavier on the stacked projection, zero biases; out_proj keeps Linear's weight.
  init::xavier_uniform_(in_proj_weight.data(), 1.0, g);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias.data());
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias.data());
}

Variable MultiheadAttention::forward(const Variable& query, const Variable& key, const Variable& value,
                                     const Tensor& attn_mask, const Tensor& key_padding_mask) {
  const int64_t e = embed_dim_, h = num_heads_, d = e / h;
  WICK_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3 && query.size(2) == e && key.size(2) == e &&
                 value.size(2) == e && key.shape() == value.shape() && key.size(0) == query.size(0),
             "MultiheadAttention: expected query [N, L, ", e, "] and key, value [N, S, ", e, "], got ",
             shape_str(query.shape()), ", ", shape_str(key.shape()), ", ", shape_str(value.shape()));
  const int64_t n = query.size(0), l = query.size(1), s = key.size(1);
  // Projects x with rows [i E, (i + 1) E) of the stacked weights, split into heads [N, H, len, D].
  auto project = [&](const Variable& x, int64_t i) {
    Variable y = matmul(x, transpose(slice(in_proj_weight, 0, i * e, (i + 1) * e), 0, 1));
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
  if (attn_mask.defined() || key_padding_mask.defined()) {
    Tensor dead = all(eq(scores.data(), neg_inf), {-1}, /*keepdim=*/true);
    weights = masked_fill(softmax(masked_fill(scores, dead, 0.0), -1), dead, 0.0);
  } else {
    weights = softmax(scores, -1);
  }
  weights = wick::dropout(weights, dropout_, is_training(), generator_);
  Variable out = reshape(permute(matmul(weights, v), {0, 2, 1, 3}), {n, l, e});
  return out_proj->forward(out);
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

Variable TransformerEncoderLayer::self_attention_block(const Variable& x, const Tensor& mask, const Tensor& padding) {
  return dropout1->forward(self_attn->forward(x, x, x, mask, padding));
}

Variable TransformerEncoderLayer::feed_forward_block(const Variable& x) {
  Variable hidden = linear1->forward(x);
  hidden = t_.gelu ? gelu(hidden) : relu(hidden);
  return dropout2->forward(linear2->forward(dropout->forward(hidden)));
}

Variable TransformerEncoderLayer::forward(const Variable& src, const Tensor& src_mask,
                                          const Tensor& src_key_padding_mask) {
  Variable x = src;
  if (t_.norm_first) {
    x = add(x, self_attention_block(norm1->forward(x), src_mask, src_key_padding_mask));
    return add(x, feed_forward_block(norm2->forward(x)));
  }
  x = norm1->forward(add(x, self_attention_block(x, src_mask, src_key_padding_mask)));
  return norm2->forward(add(x, feed_forward_block(x)));
}

}  // namespace wick
