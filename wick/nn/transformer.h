#pragma once
// Transformer layers and stacks with torch.nn's structure, options and state-dict names
// ("layers.0.self_attn.in_proj_weight", "norm.weight", "encoder.layers.1.linear2.bias", ...),
// so a torch state dict loads. Batch-first, as wick's MultiheadAttention: src [N, S, E],
// tgt [N, T, E] (torch's batch_first=True). Masks as MultiheadAttention takes them: attn
// masks [L, S] (bool: true = may not attend; or floating, added), key padding masks [N, S]
// (true = padding), *_is_causal for the causal mask.
//
//   Transformer model(512, 8, {.num_encoder_layers = 6, .num_decoder_layers = 6});
//   Variable y = model.forward(src, tgt, {}, Transformer::generate_square_subsequent_mask(t));
#include <memory>

#include <wick/nn/activation.h>
#include <wick/nn/attention.h>
#include <wick/nn/containers.h>
#include <wick/nn/dropout.h>
#include <wick/nn/norm.h>

namespace wick {

enum class TransformerActivation { ReLU, GELU, GELUTanh };  // GELUTanh: GELU(approximate="tanh")

// torch's layer options (TransformerEncoderLayer / TransformerDecoderLayer) after d_model and nhead.
struct TransformerLayerOptions {
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  TransformerActivation activation = TransformerActivation::ReLU;
  double layer_norm_eps = 1e-5;
  bool norm_first = false;  // pre-norm (x + f(norm(x))) instead of post-norm (norm(x + f(x)))
  bool bias = true;         // in the attention projections, the feed-forward layers and the layer norms
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

// Self-attention then a two-layer feed-forward block, each with a residual connection and
// layer norm.
class TransformerEncoderLayer : public UnaryModule {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, const TransformerLayerOptions& t = {},
                          const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "TransformerEncoderLayer"; }
  Variable forward(const Variable& src) override { return forward(src, Tensor(), Tensor()); }
  Variable forward(const Variable& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                   bool is_causal = false);

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;

 private:
  TransformerLayerOptions t_;
};

// Self-attention over tgt, attention from tgt to memory (the encoder's output), then the
// feed-forward block; each with a residual connection and layer norm.
class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, const TransformerLayerOptions& t = {},
                          const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "TransformerDecoderLayer"; }
  Variable forward(const Variable& tgt, const Variable& memory, const Tensor& tgt_mask = Tensor(),
                   const Tensor& memory_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                   const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                   bool memory_is_causal = false);

  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;

 private:
  TransformerLayerOptions t_;
};

// num_layers encoder layers ("layers.i"), then an optional final LayerNorm ("norm"). Each
// layer is initialised on its own (torch deep-copies one layer, so its layers start equal).
class TransformerEncoder : public UnaryModule {
 public:
  TransformerEncoder(int64_t d_model, int64_t nhead, int64_t num_layers, const TransformerLayerOptions& t = {},
                     bool final_norm = false, const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "TransformerEncoder"; }
  Variable forward(const Variable& src) override { return forward(src, Tensor(), Tensor()); }
  Variable forward(const Variable& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                   bool is_causal = false);
  std::shared_ptr<TransformerEncoderLayer> layer(int64_t i) const { return layers->at<TransformerEncoderLayer>(i); }

  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> norm;  // null without final_norm
};

class TransformerDecoder : public Module {
 public:
  TransformerDecoder(int64_t d_model, int64_t nhead, int64_t num_layers, const TransformerLayerOptions& t = {},
                     bool final_norm = false, const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "TransformerDecoder"; }
  Variable forward(const Variable& tgt, const Variable& memory, const Tensor& tgt_mask = Tensor(),
                   const Tensor& memory_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                   const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                   bool memory_is_causal = false);
  std::shared_ptr<TransformerDecoderLayer> layer(int64_t i) const { return layers->at<TransformerDecoderLayer>(i); }

  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> norm;
};

struct TransformerOptions {
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
  TransformerLayerOptions layer;
};

// torch.nn.Transformer: an encoder and a decoder, each ending in a LayerNorm; after
// construction every parameter with more than one dim is drawn again from xavier_uniform,
// as torch does.
class Transformer : public Module {
 public:
  Transformer(int64_t d_model = 512, int64_t nhead = 8, const TransformerOptions& t = {}, const Options& o = {},
              Generator* g = nullptr);
  const char* type_name() const override { return "Transformer"; }
  // src [N, S, E], tgt [N, T, E] -> [N, T, E].
  Variable forward(const Variable& src, const Variable& tgt, const Tensor& src_mask = Tensor(),
                   const Tensor& tgt_mask = Tensor(), const Tensor& memory_mask = Tensor(),
                   const Tensor& src_key_padding_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                   const Tensor& memory_key_padding_mask = Tensor(), bool src_is_causal = false,
                   bool tgt_is_causal = false, bool memory_is_causal = false);
  // [size, size] float32: 0 on and below the diagonal, -inf above (torch's helper).
  static Tensor generate_square_subsequent_mask(int64_t size, const Options& o = {});

  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace wick
