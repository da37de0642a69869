#include "examples/gpt/model.h"

#include <cmath>

namespace wick::examples {

GPT::GPT(const GPTConfig& c, const Options& o, Generator* g) : config_(c), generator_(g) {
  WICK_CHECK(c.vocab_size >= 1 && c.block_size >= 1 && c.n_layer >= 0 && c.n_head >= 1 && c.n_embd % c.n_head == 0,
             "GPT: need vocab_size, block_size, n_head >= 1, n_layer >= 0 and n_embd a multiple of n_head; got vocab ",
             c.vocab_size, ", block ", c.block_size, ", ", c.n_layer, " layers, ", c.n_head, " heads, n_embd ",
             c.n_embd);
  wte = register_module("wte", std::make_shared<Embedding>(c.vocab_size, c.n_embd, std::nullopt, o, g));
  if (c.sinusoidal)
    wpe = register_module("wpe", std::make_shared<SinusoidalPositionalEncoding>(c.n_embd, c.block_size, o));
  else wpe = register_module("wpe", std::make_shared<LearnedPositionalEmbedding>(c.block_size, c.n_embd, o, g));
  drop = register_module("drop", std::make_shared<Dropout>(c.dropout));
  h = register_module("h", std::make_shared<ModuleList>());
  const TransformerLayerOptions block{.dim_feedforward = 4 * c.n_embd,
                                      .dropout = c.dropout,
                                      .activation = TransformerActivation::GELUTanh,
                                      .norm_first = true,
                                      .bias = c.bias};
  for (int64_t i = 0; i < c.n_layer; ++i)
    h->push_back(std::make_shared<TransformerEncoderLayer>(c.n_embd, c.n_head, block, o, g));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(std::vector<int64_t>{c.n_embd}, 1e-5, true, c.bias, o));
  lm_head = register_module("lm_head", std::make_shared<Linear>(c.n_embd, c.vocab_size, false, o, g));
  lm_head->tie_weight(wte->weight);

  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(std::max<int64_t>(c.n_layer, 1)));
  for (auto& [name, p] : named_parameters()) {
    const bool residual = name.ends_with("out_proj.weight") || name.ends_with("linear2.weight");
    if (name.starts_with("ln_f.") || name.find(".norm") != std::string::npos) continue;  // ones and zeros
    if (name.ends_with("bias")) init::zeros_(p.data());
    else init::normal_(p.data(), 0.0, residual ? residual_std : 0.02, g);
  }
}

Variable GPT::forward(const Tensor& idx) {
  WICK_CHECK(idx.dim() == 2 && idx.dtype() == DType::Int64, "GPT: idx must be [B, T] int64, got ",
             shape_str(idx.shape()), " ", dtype_name(idx.dtype()));
  WICK_CHECK(idx.size(1) <= config_.block_size, "GPT: a context of ", idx.size(1),
             " tokens is longer than block_size=", config_.block_size);
  Variable x = drop->forward(wpe->forward(wte->forward(idx)));
  for (size_t i = 0; i < h->size(); ++i) {
    auto block = h->at<TransformerEncoderLayer>(static_cast<int64_t>(i));
    auto run = [block](const Variable& in) { return block->forward(in, Tensor(), Tensor(), /*is_causal=*/true); };
    // The recomputation must replay the dropout masks of the generator the blocks draw from.
    CheckpointOptions replay;
    if (generator_) replay.generators.push_back(generator_);
    // Through call(): fully sharded data parallelism's hooks gather the block around it.
    x = block->call([&] { return config_.checkpoint_activations ? checkpoint(run, x, replay) : run(x); });
  }
  return lm_head->forward(ln_f->forward(x));
}

std::vector<std::string> GPT::shard_units(ShardUnit unit) const {
  std::vector<std::string> names;
  for (size_t i = 0; i < h->size(); ++i) {
    const std::string block = "h." + std::to_string(i);
    if (unit == ShardUnit::Block) names.push_back(block);
    else
      for (const char* part : {".self_attn", ".linear1", ".linear2"}) names.push_back(block + part);
  }
  return names;
}

Variable GPT::loss(const Tensor& idx, const Tensor& targets) {
  Variable logits = forward(idx);
  return cross_entropy(reshape(logits, {-1, config_.vocab_size}), targets.reshape({-1}));
}

namespace {

// A block's forward for new positions x [B, L, E] whose attention also sees the earlier
// positions' keys and values (appended to). The composition of TransformerEncoderLayer::forward
// (norm first, GELU(tanh), no dropout) with MultiheadAttention's projections, so that a prompt
// run through it gives the uncached forward's bits.
Variable block_with_cache(TransformerEncoderLayer& block, const Variable& x, Tensor& keys, Tensor& values) {
  const MultiheadAttention& a = *block.self_attn;
  const int64_t n = x.size(0), l = x.size(1), e = a.embed_dim(), h = a.num_heads();
  const Variable y = block.norm1->forward(x);
  auto project = [&](int64_t i) {
    Variable p = matmul(y, transpose(slice(a.in_proj_weight, 0, i * e, (i + 1) * e), 0, 1));
    if (a.in_proj_bias.defined()) p = add(p, slice(a.in_proj_bias, 0, i * e, (i + 1) * e));
    return permute(reshape(p, {n, l, h, e / h}), {0, 2, 1, 3}).data();
  };
  const Tensor q = project(0), k = project(1), v = project(2);
  // Causal among the new positions, which come only into an empty cache (top-left aligned
  // causality would be wrong after cached keys); one new position sees every key.
  const bool causal = l > 1;
  WICK_CHECK(!causal || !keys.defined(), "GPT: more than one new position after cached ones");
  keys = keys.defined() ? cat({keys, k}, 2) : k.contiguous();
  values = values.defined() ? cat({values, v}, 2) : v.contiguous();
  const Variable attended =
      scaled_dot_product_attention(Variable(q), Variable(keys), Variable(values), Tensor(), 0.0, causal);
  const Variable r = add(x, a.out_proj->forward(reshape(permute(attended, {0, 2, 1, 3}), {n, l, e})));
  const Variable hidden = gelu(block.linear1->forward(block.norm2->forward(r)), GeluApproximation::Tanh);
  return add(r, block.linear2->forward(hidden));
}

}  // namespace

Tensor GPT::forward_cached(const Tensor& idx, KVCache& cache) {
  WICK_CHECK(idx.dim() == 2 && idx.dtype() == DType::Int64 && idx.size(1) >= 1,
             "GPT::forward_cached: idx must be [B, L >= 1] int64, got ", shape_str(idx.shape()), " ",
             dtype_name(idx.dtype()));
  const int64_t start = cache.length, l = idx.size(1);
  WICK_CHECK(start + l <= config_.block_size, "GPT::forward_cached: ", start, " cached and ", l,
             " new positions exceed block_size=", config_.block_size);
  WICK_CHECK(!is_training() || config_.dropout == 0, "GPT::forward_cached: no dropout in a cached forward (eval())");
  NoGradGuard no_grad;
  const Tensor table =
      config_.sinusoidal ? wpe->buffer("pe") : std::static_pointer_cast<LearnedPositionalEmbedding>(wpe)->weight.data();
  Variable x = add(wte->forward(idx), Variable(table.narrow(0, start, l)));
  cache.keys.resize(h->size());
  cache.values.resize(h->size());
  for (size_t i = 0; i < h->size(); ++i)
    x = block_with_cache(*h->at<TransformerEncoderLayer>(static_cast<int64_t>(i)), x, cache.keys[i], cache.values[i]);
  cache.length = start + l;
  // Every position through the output layer, as forward does: the same bits for a prompt.
  return lm_head->forward(ln_f->forward(x)).data().select(1, l - 1);
}

Tensor GPT::generate(Tensor idx, int64_t count, double temperature, int64_t top_k, Generator& g, bool kv_cache) {
  WICK_CHECK(idx.dim() == 2 && idx.size(1) >= 1, "GPT::generate: idx must be [B, T0] with T0 >= 1, got ",
             shape_str(idx.shape()));
  WICK_CHECK(temperature > 0, "GPT::generate: temperature must be > 0, got ", temperature);
  NoGradGuard no_grad;
  KVCache cache;
  const int64_t block = config_.block_size;
  for (int64_t step = 0; step < count; ++step) {
    const int64_t t = idx.size(1);
    Tensor logits;
    if (!kv_cache) {
      const int64_t context = std::min(t, block);
      logits = forward(idx.narrow(1, t - context, context)).data().select(1, context - 1);
    } else if (cache.length == 0 || cache.length == block) {
      // The prompt, or a full cache: run the last tokens that fit (half a block when full,
      // so that half a block of tokens is appended before the next restart) into a new cache.
      const int64_t keep = cache.length == 0 ? std::min(t, block) : std::max<int64_t>(block / 2, 1);
      cache = KVCache{};
      logits = forward_cached(idx.narrow(1, t - keep, keep), cache);
    } else {
      logits = forward_cached(idx.narrow(1, t - 1, 1), cache);
    }
    logits = div(logits.to(DType::Float64).to(Device::cpu()), Scalar(temperature));
    if (top_k > 0 && top_k < config_.vocab_size) {
      const Tensor kth = topk(logits, top_k, 1).first.narrow(1, top_k - 1, 1);
      logits = where(lt(logits, kth), Scalar(-INFINITY), logits);
    }
    const Tensor probs = softmax(logits, 1).contiguous();
    const Tensor u = rand({probs.size(0)}, DType::Float64, &g);
    Tensor next = empty({probs.size(0), 1}, DType::Int64);
    for (int64_t b = 0; b < probs.size(0); ++b) {
      const double* p = probs.data<double>() + b * probs.size(1);
      // The first token whose cumulative probability passes u; rounding may leave u past the
      // last sum, when the last token that can be drawn (p > 0) is taken.
      double left = u.data<double>()[b];
      int64_t token = -1;
      for (int64_t v = 0; v < probs.size(1); ++v) {
        if (p[v] > 0) token = v;
        if ((left -= p[v]) < 0) break;
      }
      WICK_CHECK(token >= 0, "GPT::generate: row ", b, "'s next-token probabilities are no distribution (NaN logits?)");
      next.data<int64_t>()[b] = token;
    }
    idx = cat({idx, next.to(idx.device())}, 1);
  }
  return idx;
}

}  // namespace wick::examples
