// The CUDA attention kernels (forward, dq, dk/dv) against the CPU kernels on the same
// inputs: every floating dtype; head dims that take one lane and many (3 to 256); GQA;
// causal with L < S and L > S; a broadcast bias with -inf entries and a fully masked row;
// non-contiguous inputs; empty queries and empty keys; the tensor-core kernels' head dims
// (32, 64, 96, 128), which bfloat16 and float16 take there; dropout, whose mask both devices
// draw from the same Philox counters (so CPU and CUDA drop the same weights, in the forward
// and in both backward kernels). The CPU kernels are checked against torch and the
// composition in tests/nn/sdpa_test.cpp. 16-bit tolerance: 2e-2
// (the tensor-core kernels round the probabilities to the inputs' type before P V, as
// FlashAttention-2 does; the CPU keeps them in float32).
#include <limits>

#include <wick/tensor/attention.h>

#include "tests/support/cuda_compare.h"

namespace wick::test {
namespace {

struct AttentionCase {
  int64_t b, hq, hk, l, s, e, ev;
  bool causal, bias, transposed;
  double dropout = 0.0;
};

double attention_tol(DType t) { return t == DType::Float64 ? 1e-10 : t == DType::Float32 ? 1e-4 : 2e-2; }

TEST(CudaAttention, ForwardAndBackwardMatchTheCpu) {
  WICK_REQUIRE_CUDA();
  const std::vector<AttentionCase> cases = {
      {2, 4, 2, 5, 7, 3, 5, false, true, false},   {1, 2, 2, 33, 20, 64, 64, true, false, true},
      {1, 3, 1, 6, 40, 16, 8, true, true, false},  {1, 1, 1, 9, 9, 130, 256, false, true, false},
      {2, 2, 2, 0, 4, 8, 8, false, false, false},  {2, 2, 2, 3, 0, 8, 8, false, true, false},
      // The tensor-core kernels' head dims (bfloat16, float16; flash_attention.cu): tiles of
      // 64 rows cut mid-tile, GQA, causal with L > S and L < S, a bias with a dead row,
      // heads split from a projection, no queries, no keys.
      {1, 2, 2, 70, 70, 64, 64, true, false, true},    {2, 4, 2, 33, 100, 32, 32, false, true, false},
      {1, 2, 1, 130, 65, 128, 128, true, false, true}, {1, 1, 1, 17, 150, 96, 96, true, true, false},
      {1, 2, 2, 0, 5, 64, 64, false, false, false},    {1, 2, 2, 5, 0, 64, 64, false, true, false},
      // Dropout on the CUDA-core kernels (one lane and several per row: the group's ballot of
      // decisions) and on the tensor-core ones (several tiles, GQA, causal, a bias, strided).
      {2, 4, 2, 5, 7, 3, 5, false, true, false, 0.3},  {1, 3, 1, 37, 40, 16, 8, true, false, true, 0.5},
      {1, 1, 1, 9, 9, 130, 256, false, true, false, 0.2},
      {1, 4, 2, 70, 90, 64, 64, true, false, true, 0.25}, {2, 2, 1, 33, 100, 32, 32, false, true, false, 0.4},
      {1, 1, 1, 17, 150, 128, 128, false, false, false, 1.0},
  };
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    uint64_t seed = 1;
    for (const AttentionCase& c : cases) {
      const std::string what = std::string(dtype_name(dt)) + " B" + std::to_string(c.b) + " H" + std::to_string(c.hq) +
                               "/" + std::to_string(c.hk) + " L" + std::to_string(c.l) + " S" + std::to_string(c.s) +
                               " E" + std::to_string(c.e) + "/" + std::to_string(c.ev) + (c.causal ? " causal" : "") +
                               (c.bias ? " bias" : "") + (c.transposed ? " transposed" : "") +
                               (c.dropout > 0 ? " dropout " + std::to_string(c.dropout) : "");
      auto make = [&](int64_t h, int64_t len, int64_t dim) {
        ++seed;
        return c.transposed ? random({c.b, len, h, dim}, dt, seed, -1, 1).transpose(1, 2)
                            : random({c.b, h, len, dim}, dt, seed, -1, 1);
      };
      Tensor bias;
      if (c.bias) {
        // [L, S] broadcast over batch and heads: -inf at random, and row 1 all -inf.
        Tensor b = random({c.l, c.s}, DType::Float32, ++seed);
        b = b.masked_fill_(gt(random({c.l, c.s}, DType::Float32, ++seed, 0, 1), 0.7),
                           -std::numeric_limits<double>::infinity());
        if (c.l > 1) b.select(0, 1).fill_(-std::numeric_limits<double>::infinity());
        bias = b.to(dt == DType::Float64 ? DType::Float64 : DType::Float32).expand({c.b, c.hq, c.l, c.s});
      }
      const AttentionParams p{0.37, c.causal, c.dropout, PhiloxState{seed, 1000 * seed}};
      std::vector<Tensor> in = {make(c.hq, c.l, c.e), make(c.hk, c.s, c.e), make(c.hk, c.s, c.ev),
                                make(c.hq, c.l, c.ev)};
      if (bias.defined()) in.push_back(bias);
      for (int k = 0; k < 5; ++k) {
        const char* names[] = {"out", "lse", "dq", "dk", "dv"};
        expect_cuda_matches_cpu(what + " " + names[k], in, [&](const std::vector<Tensor>& v) {
          const Tensor b = v.size() > 4 ? v[4] : Tensor();
          AttentionResult r = attention_forward(v[0], v[1], v[2], b, p);
          if (k < 2) return k == 0 ? r.out : r.lse;
          AttentionGrads g = attention_backward(v[3], v[0], v[1], v[2], b, r, p);
          return k == 2 ? g.q : k == 3 ? g.k : g.v;
        }, attention_tol(dt), attention_tol(dt));
      }
    }
  }
}

// Rows that cannot be copied 16 bytes at a time (a view starting one element into a row)
// reach the tensor-core kernels through an aligned copy, with the same result.
TEST(CudaAttention, MisalignedRowsMatchTheCpu) {
  WICK_REQUIRE_CUDA();
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    const Tensor q = random({1, 2, 40, 72}, dt, 1, -1, 1).narrow(3, 1, 64);
    const Tensor k = random({1, 2, 50, 64}, dt, 2, -1, 1), v = random({1, 2, 50, 64}, dt, 3, -1, 1);
    const Tensor dout = random({1, 2, 40, 64}, dt, 4, -1, 1);
    const AttentionParams p{0.125, false};
    for (int which = 0; which < 2; ++which)
      expect_cuda_matches_cpu(std::string(dtype_name(dt)) + (which ? " dq" : " out"), {q, k, v, dout},
                              [&](const std::vector<Tensor>& in) {
                                AttentionResult r = attention_forward(in[0], in[1], in[2], Tensor(), p);
                                return which == 0 ? r.out : attention_backward(in[3], in[0], in[1], in[2], Tensor(), r, p).q;
                              }, 2e-2, 2e-2);
  }
}

}  // namespace
}  // namespace wick::test
