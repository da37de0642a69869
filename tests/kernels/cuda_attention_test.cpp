// The CUDA attention kernels (forward, dq, dk/dv) against the CPU kernels on the same
// inputs: every floating dtype; head dims that take one lane and many (3 to 256); GQA;
// causal with L < S and L > S; a broadcast bias with -inf entries and a fully masked row;
// non-contiguous inputs; empty queries and empty keys. The CPU kernels are checked against
// torch and the composition in tests/nn/sdpa_test.cpp.
#include <limits>

#include <wick/tensor/attention.h>

#include "tests/support/cuda_compare.h"

namespace wick::test {
namespace {

struct Case {
  int64_t b, hq, hk, l, s, e, ev;
  bool causal, bias, transposed;
};

double tol_for(DType t) { return t == DType::Float64 ? 1e-10 : t == DType::Float32 ? 1e-4 : 2e-2; }

TEST(CudaAttention, ForwardAndBackwardMatchTheCpu) {
  WICK_REQUIRE_CUDA();
  const std::vector<Case> cases = {
      {2, 4, 2, 5, 7, 3, 5, false, true, false},   {1, 2, 2, 33, 20, 64, 64, true, false, true},
      {1, 3, 1, 6, 40, 16, 8, true, true, false},  {1, 1, 1, 9, 9, 130, 256, false, true, false},
      {2, 2, 2, 0, 4, 8, 8, false, false, false},  {2, 2, 2, 3, 0, 8, 8, false, true, false},
  };
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    uint64_t seed = 1;
    for (const Case& c : cases) {
      const std::string what = std::string(dtype_name(dt)) + " B" + std::to_string(c.b) + " H" + std::to_string(c.hq) +
                               "/" + std::to_string(c.hk) + " L" + std::to_string(c.l) + " S" + std::to_string(c.s) +
                               " E" + std::to_string(c.e) + "/" + std::to_string(c.ev) + (c.causal ? " causal" : "") +
                               (c.bias ? " bias" : "") + (c.transposed ? " transposed" : "");
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
      const AttentionParams p{0.37, c.causal};
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
        }, tol_for(dt), tol_for(dt));
      }
    }
  }
}

}  // namespace
}  // namespace wick::test
