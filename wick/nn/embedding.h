#pragma once
// Embedding: a table of num_embeddings vectors of embedding_dim; forward picks the rows named
// by integer indices of any shape ([...] -> [..., embedding_dim]). The weight is drawn from
// N(0, 1) as in PyTorch. With padding_idx (negative counts from the end) that row starts at
// zero and never receives a gradient.
#include <optional>

#include <wick/nn/module.h>
#include <wick/tensor/generator.h>

namespace wick {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            const Options& o = {}, Generator* g = nullptr);
  const char* type_name() const override { return "Embedding"; }
  Variable forward(const Tensor& indices);
  Variable operator()(const Tensor& indices) { return forward(indices); }
  void reset_parameters(Generator* g = nullptr);
  // Shares `w` as this layer's weight (GPT's output layer and token embedding): see
  // Module::tie_parameter. `w` must have this weight's shape, dtype and device.
  void tie_weight(const Variable& w) { weight = tie_parameter("weight", w); }

  std::optional<int64_t> padding_idx() const { return padding_idx_; }

  Variable weight;  // [num_embeddings, embedding_dim]

 private:
  std::optional<int64_t> padding_idx_;
};

}  // namespace wick
