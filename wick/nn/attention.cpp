#include <wick/nn/attention.h>

#include <cmath>
#include <limits>

#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/nn/dropout.h>
#include <wick/nn/init.h>
#include <wick/tensor/attention.h>
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

std::array<Variable, 3> MultiheadAttention::project_heads(const Variable& query, const Variable& key,
                                                         const Variable& value) const {
  const int64_t e = embed_dim_, h = num_heads_, d = e / h;
  WICK_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3 && query.size(2) == e && key.size(2) == kdim_ &&
                 value.size(2) == vdim_ && key.size(0) == query.size(0) && value.size(0) == key.size(0) &&
                 value.size(1) == key.size(1),
             "MultiheadAttention: expected query [N, L, ", e, "], key [N, S, ", kdim_, "] and value [N, S, ", vdim_,
             "], got ", shape_str(query.shape()), ", ", shape_str(key.shape()), ", ", shape_str(value.shape()));
  const int64_t n = query.size(0);
  // Projects x with projection i (q, k, v): rows [i E, (i + 1) E) of the stacked weights, or
  // the separate weight; split into heads [N, H, len, D].
  auto project = [&](const Variable& x, int64_t i) {
    const Variable& separate = i == 0 ? q_proj_weight : i == 1 ? k_proj_weight : v_proj_weight;
    Variable w = in_proj_weight.defined() ? slice(in_proj_weight, 0, i * e, (i + 1) * e) : separate;
    Variable y = matmul(x, transpose(w, 0, 1));
    if (in_proj_bias.defined()) y = add(y, slice(in_proj_bias, 0, i * e, (i + 1) * e));
    return permute(reshape(y, {n, x.size(1), h, d}), {0, 2, 1, 3});
  };
  return {project(query, 0), project(key, 1), project(value, 2)};
}

namespace {

// MultiheadAttention's masks as one additive bias that broadcasts to [N, H, L, S]: [L, S],
// [N, 1, 1, S] or [N, 1, L, S] (undefined without masks). attn_mask: bool [L, S] (true = may
// not attend) or floating (added); key_padding_mask: bool [N, S] (true = padding); causal:
// key s > query l.
Tensor mask_bias(const Tensor& attn_mask, const Tensor& key_padding_mask, bool is_causal, int64_t n, int64_t l,
                 int64_t s, const Options& o) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  Tensor bias;
  auto add_part = [&](const Tensor& part) { bias = bias.defined() ? add(bias, part) : part; };
  if (attn_mask.defined()) {
    WICK_CHECK(attn_mask.shape() == (Shape{l, s}), "MultiheadAttention: attn_mask ", shape_str(attn_mask.shape()),
               " must be [L, S] = ", shape_str({l, s}));
    add_part(attn_mask.dtype() == DType::Bool ? zeros({l, s}, o).masked_fill_(attn_mask.to(o.device), neg_inf)
                                              : attn_mask.to(o.dtype).to(o.device));
  }
  if (is_causal) add_part(zeros({l, s}, o).masked_fill_(causal_mask(l, s, o.device), neg_inf));
  if (key_padding_mask.defined()) {
    WICK_CHECK(key_padding_mask.dtype() == DType::Bool && key_padding_mask.shape() == (Shape{n, s}),
               "MultiheadAttention: key_padding_mask must be bool [N, S] = ", shape_str({n, s}), ", got ",
               dtype_name(key_padding_mask.dtype()), " ", shape_str(key_padding_mask.shape()));
    add_part(zeros({n, 1, 1, s}, o).masked_fill_(key_padding_mask.to(o.device).reshape({n, 1, 1, s}), neg_inf));
  }
  return bias;
}

}  // namespace

std::pair<Variable, Variable> MultiheadAttention::attend(const Variable& query, const Variable& key,
                                                         const Variable& value, const Tensor& attn_mask,
                                                         const Tensor& key_padding_mask, bool is_causal) {
  auto [q, k, v] = project_heads(query, key, value);
  const int64_t n = query.size(0), l = query.size(1), s = key.size(1);
  const Tensor bias = mask_bias(attn_mask, key_padding_mask, is_causal, n, l, s, q.data().options());
  Variable weights = wick::dropout(attention_weights(q, k, bias), dropout_, is_training(), generator_);  // [N, H, L, S]
  Variable out = reshape(permute(matmul(weights, v), {0, 2, 1, 3}), {n, l, embed_dim_});
  return {out_proj->forward(out), weights};
}

Variable MultiheadAttention::forward(const Variable& query, const Variable& key, const Variable& value,
                                     const Tensor& attn_mask, const Tensor& key_padding_mask, bool is_causal) {
  // Without the weights, the fused attention: the score matrix is never stored (dropout in
  // training included).
  auto [q, k, v] = project_heads(query, key, value);
  const int64_t n = query.size(0), l = query.size(1), s = key.size(1);
  const bool only_causal = is_causal && !attn_mask.defined() && !key_padding_mask.defined();
  const Tensor bias =
      only_causal ? Tensor() : mask_bias(attn_mask, key_padding_mask, is_causal, n, l, s, q.data().options());
  Variable out = scaled_dot_product_attention(q, k, v, bias, is_training() ? dropout_ : 0.0, only_causal,
                                              std::nullopt, false, generator_);
  return out_proj->forward(reshape(permute(out, {0, 2, 1, 3}), {n, l, embed_dim_}));
}

std::pair<Variable, Variable> MultiheadAttention::forward_with_weights(const Variable& query, const Variable& key,
                                                                       const Variable& value, const Tensor& attn_mask,
                                                                       const Tensor& key_padding_mask,
                                                                       bool average_attn_weights, bool is_causal) {
  auto [out, weights] = attend(query, key, value, attn_mask, key_padding_mask, is_causal);
  if (average_attn_weights) weights = mean(weights, {1});
  return {out, weights};
}

}  // namespace wick
