#pragma once
// Where each token is: position vectors added to a sequence of embeddings x [N, L, E] or
// [L, E] (position p is row p; L at most max_len).
//
//   LearnedPositionalEmbedding   a parameter "weight" [max_len, E] (GPT-2's wpe; normal(0, 1)
//                                as torch's Embedding, whose state-dict name it shares)
//   SinusoidalPositionalEncoding a buffer "pe" [max_len, E] of "Attention Is All You Need":
//                                pe[p, 2i] = sin(p w_i), pe[p, 2i + 1] = cos(p w_i),
//                                w_i = 10000^(-2i / E) (torch's tutorial PositionalEncoding,
//                                batch-first, without its dropout)
#include <wick/nn/module.h>
#include <wick/tensor/generator.h>

namespace wick {

class LearnedPositionalEmbedding : public UnaryModule {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t embedding_dim, const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "LearnedPositionalEmbedding"; }
  Variable forward(const Variable& x) override;
  Variable weight;  // [max_len, embedding_dim]
};

class SinusoidalPositionalEncoding : public UnaryModule {
 public:
  SinusoidalPositionalEncoding(int64_t d_model, int64_t max_len = 5000, const Options& o = {});
  const char* type_name() const override { return "SinusoidalPositionalEncoding"; }
  Variable forward(const Variable& x) override;
};

}  // namespace wick
