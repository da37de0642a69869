// scaled_dot_product_attention: the arguments shaped into [B, H, len, dim] views, then the
// fused kernels of wick/tensor/attention.h (one node whose backward calls the fused backward;
// dropout inside them) or the composition PyTorch's math backend computes (matmul, softmax,
// dropout, matmul; the score matrix in memory, differentiable twice). Both backends drop the
// same weights for the same generator state and advance it by the same B Hq L S counters.
#include <wick/autograd/autocast.h>
#include <wick/autograd/composites.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/attention.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/indexing.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/shape.h>

#include <cmath>
#include <limits>

namespace wick {

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";
constexpr int64_t kFusedMaxHeadDim = 256;  // the CUDA kernel's register budget

class AttentionBackward final : public Node {
 public:
  AttentionBackward(Tensor q, Tensor k, Tensor v, Tensor bias, AttentionResult fwd, AttentionParams p)
      : q_(std::move(q)), k_(std::move(k)), v_(std::move(v)), bias_(std::move(bias)), fwd_(std::move(fwd)), p_(p) {}
  const char* name() const override { return "ScaledDotProductAttentionBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    // The fused kernel's gradients would be constants under create_graph: refuse (the math
    // backend differentiates twice).
    WICK_CHECK(!grad_enabled(), name(),
               ": double backward (create_graph) is not supported; AttentionBackend::Math differentiates twice");
    AttentionGrads r = attention_backward(g[0].data(), q_, k_, v_, bias_, fwd_, p_);
    return {Variable(r.q), Variable(r.k), Variable(r.v)};
  }
  bool release_saved() override { return release(q_, k_, v_, bias_, fwd_.out, fwd_.lse); }

 private:
  Tensor q_, k_, v_, bias_;
  AttentionResult fwd_;
  AttentionParams p_;  // with the dropout's Philox state: the backward draws the same mask
};

// How the arguments map to [B, H, len, dim]: batch = the broadcast leading dims (all of them,
// or those before the head dim with GQA), hq / hk the head counts. Without GQA the last
// batch dim, when there is one, counts as the heads (hq = hk): [B, H, L, E] heads split
// from a projection ([B, L, H, E] memory) then stay a view, where merging B and H into one
// batch dim would copy them.
struct Layout {
  Shape batch;
  int64_t b = 1, hq = 1, hk = 1;
  bool gqa = false;
  // The 4-d view of x (a query-like tensor with `heads` heads).
  Variable as4(const Variable& x, int64_t heads) const {
    Shape full = batch;
    if (gqa) full.push_back(heads);
    full.push_back(x.size(-2));
    full.push_back(x.size(-1));
    Variable e = x.shape() == full ? x : expand(x, full);
    return reshape(e, {b, heads, x.size(-2), x.size(-1)});
  }
  Shape output_shape(int64_t l, int64_t ev) const {
    Shape s = batch;
    if (gqa) s.push_back(hq);
    s.push_back(l);
    s.push_back(ev);
    return s;
  }
};

Shape leading(const Shape& s, size_t trailing) { return Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(trailing)); }

Layout layout_of(const Variable& q, const Variable& k, const Variable& v, bool enable_gqa) {
  Layout lay;
  lay.gqa = enable_gqa;
  const size_t trailing = enable_gqa ? 3 : 2;
  if (enable_gqa) {
    WICK_CHECK(q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3, kOp, ": enable_gqa needs [..., H, len, dim] inputs, got ",
               shape_str(q.shape()), ", ", shape_str(k.shape()), ", ", shape_str(v.shape()));
    lay.hq = q.size(-3);
    lay.hk = k.size(-3);
    WICK_CHECK(v.size(-3) == lay.hk && lay.hk > 0 && lay.hq % lay.hk == 0, kOp,
               ": with enable_gqa key and value need the same number of heads, dividing the query's; got ",
               shape_str(q.shape()), ", ", shape_str(k.shape()), ", ", shape_str(v.shape()));
  }
  lay.batch = broadcast_shapes(kOp, broadcast_shapes(kOp, leading(q.shape(), trailing), leading(k.shape(), trailing)),
                               leading(v.shape(), trailing));
  size_t batch_dims = lay.batch.size();
  if (!enable_gqa && batch_dims > 0 && lay.batch.back() > 0) {
    lay.hq = lay.hk = lay.batch.back();
    --batch_dims;
  }
  for (size_t i = 0; i < batch_dims; ++i) lay.b *= lay.batch[i];
  return lay;
}

// The mask as an additive bias [B, Hq, L, S] of `dtype` (a broadcast view where the mask allows).
Tensor bias_of(const Tensor& mask, const Layout& lay, int64_t l, int64_t s, DType dtype, Device device) {
  if (!mask.defined()) return Tensor();
  WICK_CHECK(mask.dtype() == DType::Bool || is_floating(mask.dtype()), kOp,
             ": attn_mask must be bool (true = may attend) or floating (added to the scores), got ",
             dtype_name(mask.dtype()));
  WICK_CHECK(mask.device() == device, kOp, ": attn_mask is on ", mask.device().str(), ", the inputs on ", device.str());
  const Shape full = lay.output_shape(l, s);
  bool broadcasts = mask.dim() <= static_cast<int64_t>(full.size());
  for (int64_t i = 1; broadcasts && i <= mask.dim(); ++i)
    broadcasts = mask.size(-i) == 1 || mask.size(-i) == full[full.size() - static_cast<size_t>(i)];
  WICK_CHECK(broadcasts, kOp, ": attn_mask ", shape_str(mask.shape()), " does not broadcast to the scores ",
             shape_str(full));
  Tensor additive = mask.dtype() == DType::Bool
                        ? zeros(mask.shape(), Options(dtype, device))
                              .masked_fill_(logical_not(mask), -std::numeric_limits<double>::infinity())
                        : mask.to(dtype);
  return additive.expand(full).reshape({lay.b, lay.hq, l, s});
}

// softmax(scale q k^T + bias) v by composition, for q4 [B, Hq, L, E] and k4, v4 [B, Hk, S, *].
Variable math_attention(const Variable& q4, const Variable& k4, const Variable& v4, const Tensor& bias, double p,
                        bool causal, double scale, Generator* g) {
  const int64_t group = q4.size(1) / k4.size(1);
  const Variable k = group == 1 ? k4 : repeat_interleave(k4, group, 1);
  const Variable v = group == 1 ? v4 : repeat_interleave(v4, group, 1);
  Variable weights = attention_weights(q4, k, bias, causal, scale);
  if (p > 0) {
    Tensor keep = bernoulli(weights.shape(), 1.0 - p, weights.data().options(), g);
    if (p < 1) keep.mul_(1.0 / (1.0 - p));
    weights = mul(weights, Variable(keep));
  }
  return matmul(weights, v);
}

}  // namespace

Variable attention_weights(const Variable& query, const Variable& key, const Tensor& attn_mask, bool is_causal,
                           std::optional<double> scale) {
  WICK_CHECK(query.dim() >= 2 && key.dim() >= 2 && key.size(-1) == query.size(-1), "attention_weights",
             ": expected query [..., L, E] and key [..., S, E], got ", shape_str(query.shape()), ", ",
             shape_str(key.shape()));
  WICK_CHECK(!(is_causal && attn_mask.defined()), "attention_weights", ": give attn_mask or is_causal, not both");
  const double sc = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(-1))));
  Variable scores = mul(matmul(query, transpose(key, -2, -1)), sc);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (attn_mask.defined()) {
    WICK_CHECK(attn_mask.dtype() == DType::Bool || is_floating(attn_mask.dtype()), "attention_weights",
               ": attn_mask must be bool (true = may attend) or floating (added to the scores), got ",
               dtype_name(attn_mask.dtype()));
    scores = attn_mask.dtype() == DType::Bool ? masked_fill(scores, logical_not(attn_mask), neg_inf)
                                              : add(scores, Variable(attn_mask.to(scores.dtype())));
  }
  if (is_causal) scores = masked_fill(scores, causal_mask(query.size(-2), key.size(-2), scores.device()), neg_inf);
  if (!attn_mask.defined() && !is_causal) return softmax(scores, -1);
  // A row with every key masked attends to nothing (0), as in PyTorch, instead of NaN (whose
  // NaN would also reach the gradients through the softmax backward). No host check for
  // whether any row is dead: that would synchronise with the device on every masked call.
  Tensor dead = all(eq(scores.data(), neg_inf), {-1}, /*keepdim=*/true);
  return masked_fill(softmax(masked_fill(scores, dead, 0.0), -1), dead, 0.0);
}

Variable scaled_dot_product_attention(const Variable& query_in, const Variable& key_in, const Variable& value_in,
                                      const Tensor& attn_mask, double dropout_p, bool is_causal,
                                      std::optional<double> scale, bool enable_gqa, Generator* generator,
                                      AttentionBackend backend) {
  AutocastArgs autocast(AutocastOp::scaled_dot_product_attention, query_in, key_in, value_in);
  const Variable& query = autocast[0];
  const Variable& key = autocast[1];
  const Variable& value = autocast[2];
  WICK_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2 && key.size(-1) == query.size(-1) &&
                 value.size(-2) == key.size(-2),
             kOp, ": expected query [..., L, E], key [..., S, E] and value [..., S, Ev], got ", shape_str(query.shape()),
             ", ", shape_str(key.shape()), ", ", shape_str(value.shape()));
  WICK_CHECK(is_floating(query.dtype()) && key.dtype() == query.dtype() && value.dtype() == query.dtype(), kOp,
             ": query, key and value must share a floating dtype, got ", dtype_name(query.dtype()), ", ",
             dtype_name(key.dtype()), ", ", dtype_name(value.dtype()));
  WICK_CHECK(key.device() == query.device() && value.device() == query.device(), kOp,
             ": query, key and value must be on one device");
  WICK_CHECK(dropout_p >= 0 && dropout_p <= 1, kOp, ": dropout_p must be in [0, 1], got ", dropout_p);
  WICK_CHECK(!(is_causal && attn_mask.defined()), kOp,
             ": give attn_mask or is_causal, not both (as PyTorch; fold the causal mask into attn_mask)");
  const int64_t l = query.size(-2), s = key.size(-2), e = query.size(-1), ev = value.size(-1);
  const Layout lay = layout_of(query, key, value, enable_gqa);
  const double sc = scale.value_or(1.0 / std::sqrt(static_cast<double>(e)));
  const bool fusable = std::max(e, ev) <= kFusedMaxHeadDim;
  WICK_CHECK(backend != AttentionBackend::Fused || fusable, kOp, ": the fused kernel takes head dims up to ",
             kFusedMaxHeadDim, " (got E = ", e, ", Ev = ", ev, ")");
  const Variable q4 = lay.as4(query, lay.hq), k4 = lay.as4(key, lay.hk), v4 = lay.as4(value, lay.hk);
  const DType stats = query.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tensor bias = bias_of(attn_mask, lay, l, s, stats, query.device());
  Variable out4;
  if (backend == AttentionBackend::Math || !fusable) {
    out4 = math_attention(q4, k4, v4, bias, dropout_p, is_causal, sc, generator);
  } else {
    AttentionParams p{sc, is_causal};
    if (dropout_p > 0) {
      // The counters the composition's bernoulli over the [B, Hq, L, S] weights would take
      // (none when that is empty), so later draws are the same whichever backend ran.
      p.dropout = dropout_p;
      p.dropout_state =
          (generator ? *generator : default_generator()).advance(static_cast<uint64_t>(lay.b * lay.hq * l * s));
    }
    // The kernels read heads through their strides (rows of unit stride), so q, k and v
    // split from a projection are used, and kept for backward, without a copy.
    const Tensor q = q4.data(), k = k4.data(), v = v4.data();
    AttentionResult r = attention_forward(q, k, v, bias, p);
    out4 = Variable(r.out);
    if (needs_grad({&q4, &k4, &v4})) record<AttentionBackward>({&q4, &k4, &v4}, {&out4}, q, k, v, bias, std::move(r), p);
  }
  return reshape(out4, lay.output_shape(l, ev));
}

}  // namespace wick
