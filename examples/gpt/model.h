#pragma once
// A decoder-only language model with GPT-2's architecture: token embedding (wte) plus
// positions (learned wpe, or a sinusoidal table), n_layer pre-norm Transformer blocks with
// causal self-attention and a GELU(tanh) MLP of 4 x n_embd, a final LayerNorm (ln_f) and
// an output layer (lm_head) tied to wte. The blocks are torch's TransformerEncoderLayer
// (norm_first, batch_first), so the state-dict names are those of a torch model built the
// same way (tests/examples/gpt_reference.py): "wte.weight", "wpe.weight",
// "h.0.self_attn.in_proj_weight", ..., "ln_f.weight", "lm_head.weight" (= wte's).
#include <wick/wick.h>

namespace wick::examples {

struct GPTConfig {
  int64_t vocab_size = 256;  // bytes
  int64_t block_size = 128;  // the longest context
  int64_t n_layer = 4, n_head = 4, n_embd = 128;
  double dropout = 0.0;
  bool bias = true;         // in the linear layers and layer norms
  bool sinusoidal = false;  // positions from the sinusoidal table instead of wpe
  // Recompute each block's forward in backward instead of keeping its activations
  // (wick::checkpoint): one more forward per step for a block's worth of memory per layer.
  bool checkpoint_activations = false;
};

// Each layer's keys and values [B, n_head, length, head_dim] of the positions generated so far:
// with them a new token costs one query's attention over `length` keys, not the whole context
// again.
struct KVCache {
  std::vector<Tensor> keys, values;
  int64_t length = 0;
};

class GPT : public Module {
 public:
  // GPT-2's initialisation: linear and embedding weights from normal(0, 0.02), the two
  // projections back into the residual stream (attention's out_proj, the MLP's linear2)
  // from normal(0, 0.02 / sqrt(2 n_layer)), biases zero.
  GPT(const GPTConfig& config, const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "GPT"; }
  const GPTConfig& config() const { return config_; }

  // idx [B, T] int64 token ids, T <= block_size -> logits [B, T, vocab_size].
  Variable forward(const Tensor& idx);
  // The mean cross-entropy of the next-token predictions: targets [B, T] (idx shifted by one).
  Variable loss(const Tensor& idx, const Tensor& targets);
  // The next-token logits [B, vocab_size] after idx [B, L]: positions cache.length onwards,
  // whose keys and values are appended to the cache (L > 1 only into an empty cache: the
  // prompt). Without gradients, in eval mode or with dropout 0.
  Tensor forward_cached(const Tensor& idx, KVCache& cache);
  // The units of fully sharded data parallelism (DataParallelOptions::shard_units), in
  // forward order: the blocks ("h.0", ...), or each block's attention and its two MLP layers
  // ("h.0.self_attn", "h.0.linear1", "h.0.linear2", ...: a third of a block gathered at a
  // time, so less memory at the peak for three times the collectives); wte, wpe and ln_f
  // (lm_head is tied to wte), and with Sublayer the blocks' norms, stay whole.
  enum class ShardUnit { Block, Sublayer };
  std::vector<std::string> shard_units(ShardUnit unit = ShardUnit::Block) const;
  // Appends `count` tokens to each row of idx [B, T0], each drawn from the softmax of the
  // last position's logits / temperature, restricted to the top_k most likely (0: all).
  // Without gradients; the caller chooses the mode (eval() for no dropout).
  // Without kv_cache, each token runs the model over the last block_size tokens. With it
  // (eval mode or dropout 0), the tokens so far are kept in a KVCache and each new one is
  // one position's forward; the same tokens while the context fits in block_size. When the
  // cache is full it restarts from the last block_size / 2 tokens (positions shift, so the
  // keys cannot be reused), so the context then spans block_size / 2 to block_size tokens.
  Tensor generate(Tensor idx, int64_t count, double temperature, int64_t top_k, Generator& g, bool kv_cache = true);

  std::shared_ptr<Embedding> wte;
  std::shared_ptr<UnaryModule> wpe;  // LearnedPositionalEmbedding or SinusoidalPositionalEncoding
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<ModuleList> h;  // TransformerEncoderLayer
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> lm_head;

 private:
  GPTConfig config_;
  Generator* generator_;  // the blocks' dropouts draw from it (or the default generator when null)
};

}  // namespace wick::examples
