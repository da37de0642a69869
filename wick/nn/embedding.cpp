#include <wick/nn/embedding.h>

#include <wick/autograd/ops.h>
#include <wick/nn/init.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

namespace wick {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx,
                     const Options& o, Generator* g) {
  WICK_CHECK(num_embeddings >= 0 && embedding_dim >= 0, "Embedding: sizes must be >= 0, got num_embeddings=",
             num_embeddings, ", embedding_dim=", embedding_dim);
  WICK_CHECK(is_floating(o.dtype), "Embedding: the weight must be floating, not ", dtype_name(o.dtype));
  if (padding_idx) {
    WICK_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings, "Embedding: padding_idx ",
               *padding_idx, " is out of range for num_embeddings=", num_embeddings);
    padding_idx_ = *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
  }
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}, o));
  reset_parameters(g);
}

void Embedding::reset_parameters(Generator* g) {
  init::normal_(weight.data(), 0.0, 1.0, g);
  if (padding_idx_) weight.data().select(0, *padding_idx_).zero_();
}

Variable Embedding::forward(const Tensor& indices) {
  Variable out = embedding(weight, indices);
  if (!padding_idx_) return out;
  // Padding positions take their value from a detached lookup, so their gradient stops
  // there and the padding row never changes; the values are the same either way.
  Tensor is_pad = eq(indices, Scalar(*padding_idx_)).unsqueeze(-1);
  return where(is_pad, out.detach(), out);
}

}  // namespace wick
