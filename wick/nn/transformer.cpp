#include <wick/nn/transformer.h>

#include <limits>

#include <wick/autograd/ops.h>
#include <wick/nn/init.h>
#include <wick/tensor/attention.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

void check_layer_options(const char* layer, int64_t d_model, int64_t nhead, const TransformerLayerOptions& t) {
  WICK_CHECK(d_model > 0 && nhead > 0 && d_model % nhead == 0 && t.dim_feedforward > 0, layer,
             ": need d_model divisible by nhead and dim_feedforward > 0, got d_model=", d_model, ", nhead=", nhead,
             ", dim_feedforward=", t.dim_feedforward);
}

Variable activate(TransformerActivation a, const Variable& x) {
  switch (a) {
    case TransformerActivation::ReLU: return relu(x);
    case TransformerActivation::GELU: return gelu(x);
    case TransformerActivation::GELUTanh: return gelu(x, GeluApproximation::Tanh);
  }
  throw Error("Transformer: unknown activation");
}

// linear2(dropout(act(linear1(x)))), the feed-forward block both layers share.
Variable feed_forward(const TransformerLayerOptions& t, Linear& linear1, Dropout& dropout, Linear& linear2,
                      const Variable& x) {
  return linear2(dropout.forward(activate(t.activation, linear1(x))));
}

std::shared_ptr<LayerNorm> layer_norm_for(int64_t d_model, const TransformerLayerOptions& t, const Options& o) {
  return std::make_shared<LayerNorm>(Shape{d_model}, t.layer_norm_eps, true, t.bias, o);
}

std::shared_ptr<MultiheadAttention> attention_for(int64_t d_model, int64_t nhead, const TransformerLayerOptions& t,
                                                  const Options& o, Generator* g) {
  return std::make_shared<MultiheadAttention>(d_model, nhead, t.dropout, t.bias, o, g);
}

// num_layers layers of one kind, each initialised on its own (the "layers" of a stack).
template <class Layer>
std::shared_ptr<ModuleList> layer_stack(const char* stack, int64_t d_model, int64_t nhead, int64_t num_layers,
                                        const TransformerLayerOptions& t, const Options& o, Generator* g) {
  WICK_CHECK(num_layers >= 0, stack, ": num_layers must be >= 0, got ", num_layers);
  auto list = std::make_shared<ModuleList>();
  for (int64_t i = 0; i < num_layers; ++i) list->push_back(std::make_shared<Layer>(d_model, nhead, t, o, g));
  return list;
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead, const TransformerLayerOptions& t,
                                                 const Options& o, Generator* g)
    : t_(t) {
  check_layer_options("TransformerEncoderLayer", d_model, nhead, t);
  // torch's registration order (its state dict lists the entries in this order).
  self_attn = register_module("self_attn", attention_for(d_model, nhead, t, o, g));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, t.dim_feedforward, t.bias, o, g));
  dropout = register_module("dropout", std::make_shared<Dropout>(t.dropout, g));
  linear2 = register_module("linear2", std::make_shared<Linear>(t.dim_feedforward, d_model, t.bias, o, g));
  norm1 = register_module("norm1", layer_norm_for(d_model, t, o));
  norm2 = register_module("norm2", layer_norm_for(d_model, t, o));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(t.dropout, g));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(t.dropout, g));
}

Variable TransformerEncoderLayer::forward(const Variable& src, const Tensor& src_mask,
                                          const Tensor& src_key_padding_mask, bool is_causal) {
  auto self_attention = [&](const Variable& x) {
    // Through call(): a unit of fully sharded data parallelism may be this module.
    return dropout1->forward(
        self_attn->call([&] { return self_attn->forward(x, x, x, src_mask, src_key_padding_mask, is_causal); }));
  };
  auto ff = [&](const Variable& x) { return dropout2->forward(feed_forward(t_, *linear1, *dropout, *linear2, x)); };
  Variable x = src;
  if (t_.norm_first) {
    x = add(x, self_attention(norm1->forward(x)));
    return add(x, ff(norm2->forward(x)));
  }
  x = norm1->forward(add(x, self_attention(x)));
  return norm2->forward(add(x, ff(x)));
}

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d_model, int64_t nhead, const TransformerLayerOptions& t,
                                                 const Options& o, Generator* g)
    : t_(t) {
  check_layer_options("TransformerDecoderLayer", d_model, nhead, t);
  self_attn = register_module("self_attn", attention_for(d_model, nhead, t, o, g));
  multihead_attn = register_module("multihead_attn", attention_for(d_model, nhead, t, o, g));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, t.dim_feedforward, t.bias, o, g));
  dropout = register_module("dropout", std::make_shared<Dropout>(t.dropout, g));
  linear2 = register_module("linear2", std::make_shared<Linear>(t.dim_feedforward, d_model, t.bias, o, g));
  norm1 = register_module("norm1", layer_norm_for(d_model, t, o));
  norm2 = register_module("norm2", layer_norm_for(d_model, t, o));
  norm3 = register_module("norm3", layer_norm_for(d_model, t, o));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(t.dropout, g));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(t.dropout, g));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(t.dropout, g));
}

Variable TransformerDecoderLayer::forward(const Variable& tgt, const Variable& memory, const Tensor& tgt_mask,
                                          const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                          const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                          bool memory_is_causal) {
  auto self_attention = [&](const Variable& x) {
    return dropout1->forward(
        self_attn->call([&] { return self_attn->forward(x, x, x, tgt_mask, tgt_key_padding_mask, tgt_is_causal); }));
  };
  auto cross_attention = [&](const Variable& x) {
    return dropout2->forward(multihead_attn->call([&] {
      return multihead_attn->forward(x, memory, memory, memory_mask, memory_key_padding_mask, memory_is_causal);
    }));
  };
  auto ff = [&](const Variable& x) { return dropout3->forward(feed_forward(t_, *linear1, *dropout, *linear2, x)); };
  Variable x = tgt;
  if (t_.norm_first) {
    x = add(x, self_attention(norm1->forward(x)));
    x = add(x, cross_attention(norm2->forward(x)));
    return add(x, ff(norm3->forward(x)));
  }
  x = norm1->forward(add(x, self_attention(x)));
  x = norm2->forward(add(x, cross_attention(x)));
  return norm3->forward(add(x, ff(x)));
}

TransformerEncoder::TransformerEncoder(int64_t d_model, int64_t nhead, int64_t num_layers,
                                       const TransformerLayerOptions& t, bool final_norm, const Options& o,
                                       Generator* g) {
  layers = register_module(
      "layers", layer_stack<TransformerEncoderLayer>("TransformerEncoder", d_model, nhead, num_layers, t, o, g));
  if (final_norm) norm = register_module("norm", layer_norm_for(d_model, t, o));
}

Variable TransformerEncoder::forward(const Variable& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                     bool is_causal) {
  Variable x = src;
  for (const auto& m : *layers)
    x = static_cast<TransformerEncoderLayer&>(*m).forward(x, mask, src_key_padding_mask, is_causal);
  return norm ? norm->forward(x) : x;
}

TransformerDecoder::TransformerDecoder(int64_t d_model, int64_t nhead, int64_t num_layers,
                                       const TransformerLayerOptions& t, bool final_norm, const Options& o,
                                       Generator* g) {
  layers = register_module(
      "layers", layer_stack<TransformerDecoderLayer>("TransformerDecoder", d_model, nhead, num_layers, t, o, g));
  if (final_norm) norm = register_module("norm", layer_norm_for(d_model, t, o));
}

Variable TransformerDecoder::forward(const Variable& tgt, const Variable& memory, const Tensor& tgt_mask,
                                     const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                     const Tensor& memory_key_padding_mask, bool tgt_is_causal, bool memory_is_causal) {
  Variable x = tgt;
  for (const auto& m : *layers)
    x = static_cast<TransformerDecoderLayer&>(*m).forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                          memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  return norm ? norm->forward(x) : x;
}

Transformer::Transformer(int64_t d_model, int64_t nhead, const TransformerOptions& t, const Options& o, Generator* g) {
  encoder = register_module(
      "encoder", std::make_shared<TransformerEncoder>(d_model, nhead, t.num_encoder_layers, t.layer, true, o, g));
  decoder = register_module(
      "decoder", std::make_shared<TransformerDecoder>(d_model, nhead, t.num_decoder_layers, t.layer, true, o, g));
  for (Variable& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p.data(), 1.0, g);
}

Variable Transformer::forward(const Variable& src, const Variable& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                              const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                              const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask,
                              bool src_is_causal, bool tgt_is_causal, bool memory_is_causal) {
  WICK_CHECK(src.dim() == 3 && tgt.dim() == 3 && src.size(0) == tgt.size(0) && src.size(2) == tgt.size(2),
             "Transformer", ": src [N, S, E] and tgt [N, T, E] must share N and E, got ", shape_str(src.shape()),
             " and ", shape_str(tgt.shape()));
  Variable memory = encoder->forward(src, src_mask, src_key_padding_mask, src_is_causal);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                          tgt_is_causal, memory_is_causal);
}

Tensor Transformer::generate_square_subsequent_mask(int64_t size, const Options& o) {
  WICK_CHECK(size >= 0, "Transformer::generate_square_subsequent_mask: size must be >= 0, got ", size);
  return zeros({size, size}, o)
      .masked_fill_(causal_mask(size, size, o.device), -std::numeric_limits<double>::infinity());
}

}  // namespace wick
