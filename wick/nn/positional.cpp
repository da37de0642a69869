#include <wick/nn/positional.h>

#include <cmath>

#include <wick/autograd/ops.h>
#include <wick/nn/init.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

// L, the number of rows of the table [max_len, E] that x [.., L, E] takes, after checking x.
int64_t positions_of(const char* layer, const Shape& table, const Variable& x) {
  WICK_CHECK(x.dim() == 2 || x.dim() == 3, layer, ": input must be [L, E] or [N, L, E], got ", shape_str(x.shape()));
  const int64_t len = x.size(-2);
  WICK_CHECK(x.size(-1) == table[1], layer, ": input ", shape_str(x.shape()), " does not end in the embedding size ",
             table[1]);
  WICK_CHECK(len <= table[0], layer, ": a sequence of ", len, " positions is longer than max_len=", table[0]);
  return len;
}

}  // namespace

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t max_len, int64_t embedding_dim, const Options& o,
                                                       Generator* g) {
  WICK_CHECK(max_len >= 1 && embedding_dim >= 0, "LearnedPositionalEmbedding: need max_len >= 1 and embedding_dim >= 0, got ",
             max_len, " and ", embedding_dim);
  WICK_CHECK(is_floating(o.dtype), "LearnedPositionalEmbedding: the weight must be floating, not ", dtype_name(o.dtype));
  weight = register_parameter("weight", empty({max_len, embedding_dim}, o));
  init::normal_(weight.data(), 0.0, 1.0, g);
}

Variable LearnedPositionalEmbedding::forward(const Variable& x) {
  return add(x, narrow(weight, 0, 0, positions_of(type_name(), weight.shape(), x)));
}

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t d_model, int64_t max_len, const Options& o) {
  WICK_CHECK(max_len >= 1 && d_model >= 0, "SinusoidalPositionalEncoding: need max_len >= 1 and d_model >= 0, got ",
             max_len, " and ", d_model);
  WICK_CHECK(is_floating(o.dtype), "SinusoidalPositionalEncoding: the table must be floating, not ", dtype_name(o.dtype));
  // In float64, cast once: the float32 table then equals torch's to rounding.
  Tensor pe = empty({max_len, d_model}, DType::Float64);
  double* v = pe.data<double>();
  for (int64_t p = 0; p < max_len; ++p)
    for (int64_t j = 0; j < d_model; ++j) {
      const double angle = static_cast<double>(p) * std::exp(-std::log(10000.0) * static_cast<double>(j - j % 2) /
                                                             static_cast<double>(d_model));
      v[p * d_model + j] = j % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  register_buffer("pe", pe.to(o.dtype).to(o.device));
}

Variable SinusoidalPositionalEncoding::forward(const Variable& x) {
  const Tensor& pe = buffer("pe");
  return add(x, Variable(pe.narrow(0, 0, positions_of(type_name(), pe.shape(), x))));
}

}  // namespace wick
