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

std::vector<std::string> GPT::shard_units() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < h->size(); ++i) names.push_back("h." + std::to_string(i));
  return names;
}

Variable GPT::loss(const Tensor& idx, const Tensor& targets) {
  Variable logits = forward(idx);
  return cross_entropy(reshape(logits, {-1, config_.vocab_size}), targets.reshape({-1}));
}

Tensor GPT::generate(Tensor idx, int64_t count, double temperature, int64_t top_k, Generator& g) {
  WICK_CHECK(idx.dim() == 2 && idx.size(1) >= 1, "GPT::generate: idx must be [B, T0] with T0 >= 1, got ",
             shape_str(idx.shape()));
  WICK_CHECK(temperature > 0, "GPT::generate: temperature must be > 0, got ", temperature);
  NoGradGuard no_grad;
  for (int64_t step = 0; step < count; ++step) {
    const int64_t t = idx.size(1), context = std::min(t, config_.block_size);
    Tensor logits = forward(idx.narrow(1, t - context, context)).data().select(1, context - 1);
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
