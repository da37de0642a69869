// scaled_dot_product_attention: both backends against torch (sdpa_reference.safetensors,
// written by sdpa_reference.py: masks, causal with L < S and L > S, GQA, scale, 2-d to 4-d
// inputs, broadcast batch dims) in float64 and float32, on the CPU and CUDA; the fused
// kernels against the composition on random shapes, masks, layouts and dtypes, with and
// without dropout (the same generator state drops the same weights on both backends);
// finite differences through the fused backward (dropout included); the dropout mask
// itself; the errors.
#include "tests/support/torch_reference.h"

#include <cmath>
#include <limits>

#include <wick/autograd/gradcheck.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/nn_ops.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/attention.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

namespace wick::test {
namespace {

const TorchReference& sdpa_reference() { return torch_reference("nn/sdpa_reference.safetensors"); }

const char* backend_name(AttentionBackend b) { return b == AttentionBackend::Fused ? "fused" : "math"; }

void expect_case_matches_torch(const std::string& name, DType dtype, Device device, AttentionBackend backend,
                               double rtol, double atol) {
  SCOPED_TRACE(name + " " + dtype_name(dtype) + " on " + device.str() + ", " + backend_name(backend));
  const TensorMap& ref = sdpa_reference().tensors;
  auto get = [&](const std::string& key) { return ref.at(name + "." + key); };
  const auto opt = case_options(sdpa_reference().cases.at(name));
  auto input = [&](const char* key) { return Variable(get(key).to(dtype).to(device), /*requires_grad=*/true); };
  Variable q = input("q"), k = input("k"), v = input("v");
  Tensor mask;
  if (ref.count(name + ".mask")) {
    mask = get("mask").to(device);
    if (mask.dtype() != DType::Bool) mask = mask.to(dtype);
  }
  std::optional<double> scale;
  if (opt.count("scale")) scale = std::stod(opt.at("scale"));
  Variable out = scaled_dot_product_attention(q, k, v, mask, 0.0, opt.count("causal") > 0, scale, opt.count("gqa") > 0,
                                              nullptr, backend);
  EXPECT_TRUE(tensors_close(out.data(), get("out"), rtol, atol)) << "output";
  sum(mul(out, Variable(get("w").to(dtype).to(device)))).backward();
  EXPECT_TRUE(tensors_close(q.grad().data(), get("grad_q"), rtol, atol)) << "grad q";
  EXPECT_TRUE(tensors_close(k.grad().data(), get("grad_k"), rtol, atol)) << "grad k";
  EXPECT_TRUE(tensors_close(v.grad().data(), get("grad_v"), rtol, atol)) << "grad v";
}

TEST(ScaledDotProductAttention, EveryCaseMatchesTorch) {
  ASSERT_GE(sdpa_reference().cases.size(), 10u);
  for (const auto& [name, words] : sdpa_reference().cases)
    for (Device d : cpu_and_cuda())
      for (AttentionBackend b : {AttentionBackend::Fused, AttentionBackend::Math}) {
        expect_case_matches_torch(name, DType::Float64, d, b, 1e-10, 1e-12);
        expect_case_matches_torch(name, DType::Float32, d, b, 1e-5, 1e-6);
      }
}

// The fused kernels against the composition on random cases: head dims that take one lane
// and several (up to 256 on CUDA), odd lengths, GQA, causal, broadcast bool and float masks
// with dead rows, non-contiguous inputs, and every floating dtype; with dropout, both
// backends from one generator state, which must drop the same weights and leave the
// generator at the same offset.
TEST(ScaledDotProductAttention, FusedMatchesTheComposition) {
  struct Case {
    Shape q, k, v;
    int mask;  // 0 none, 1 bool [L, S], 2 float [B, 1, L, S]
    bool causal, gqa, transposed;
    double dropout = 0.0;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5, 3}, {2, 3, 7, 3}, {2, 3, 7, 5}, 0, false, false, false},
      {{1, 4, 33, 16}, {1, 2, 40, 16}, {1, 2, 40, 16}, 1, false, true, true},
      {{2, 2, 17, 64}, {2, 2, 17, 64}, {2, 2, 17, 64}, 0, true, false, false},
      {{1, 2, 9, 70}, {1, 2, 12, 70}, {1, 2, 12, 33}, 2, false, false, true},
      {{1, 1, 5, 256}, {1, 1, 6, 256}, {1, 1, 6, 256}, 1, false, false, false},
      // Head dims of the tensor-core kernels (16-bit inputs on CUDA): more than one 64-row
      // tile of queries and keys.
      {{1, 4, 70, 128}, {1, 2, 70, 128}, {1, 2, 70, 128}, 2, false, true, true},
      {{1, 2, 65, 32}, {1, 2, 90, 32}, {1, 2, 90, 32}, 1, false, false, false},
      {{1, 2, 80, 96}, {1, 2, 80, 96}, {1, 2, 80, 96}, 0, true, false, true},
      {{2, 2, 0, 8}, {2, 2, 4, 8}, {2, 2, 4, 8}, 0, false, false, false},
      {{2, 2, 3, 8}, {2, 2, 0, 8}, {2, 2, 0, 8}, 0, false, false, false},
      // Dropout: one lane and several per row, GQA, masks with dead rows, causal, strided
      // heads, the tensor-core kernels' head dims (several key tiles), p = 1, no queries.
      {{2, 3, 5, 3}, {2, 3, 7, 3}, {2, 3, 7, 5}, 0, false, false, false, 0.3},
      {{1, 4, 33, 16}, {1, 2, 40, 16}, {1, 2, 40, 16}, 1, false, true, true, 0.5},
      {{1, 2, 9, 70}, {1, 2, 12, 70}, {1, 2, 12, 33}, 2, false, false, true, 0.2},
      {{1, 1, 5, 256}, {1, 1, 6, 256}, {1, 1, 6, 256}, 0, true, false, false, 0.4},
      {{1, 4, 70, 64}, {1, 2, 70, 64}, {1, 2, 70, 64}, 2, false, true, true, 0.25},
      {{1, 2, 80, 32}, {1, 2, 130, 32}, {1, 2, 130, 32}, 0, true, false, false, 0.1},
      {{1, 2, 3, 8}, {1, 2, 4, 8}, {1, 2, 4, 8}, 1, false, false, false, 1.0},
      {{2, 2, 0, 8}, {2, 2, 4, 8}, {2, 2, 4, 8}, 0, false, false, false, 0.5},
  };
  // The reference is the composition in float64 on the same (rounded) inputs; the fused
  // kernels accumulate in float32 (float64) and round once.
  for (DType dtype : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    const double tol = dtype == DType::Float64 ? 1e-10 : dtype == DType::Float32 ? 1e-4 : dtype == DType::Float16 ? 1e-2 : 4e-2;
    for (Device device : cpu_and_cuda()) {
      uint64_t seed = 100;
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " on " + device.str() + ", q " + shape_str(c.q) + ", k " +
                     shape_str(c.k) + ", mask " + std::to_string(c.mask) + (c.causal ? ", causal" : "") +
                     (c.transposed ? ", transposed" : "") + ", dropout " + std::to_string(c.dropout));
        const int64_t l = c.q[2], s = c.k[2];
        auto make = [&](const Shape& shape) {
          ++seed;
          Tensor t = c.transposed ? random({shape[0], shape[2], shape[1], shape[3]}, DType::Float64, seed, -1, 1).transpose(1, 2)
                                  : random(shape, DType::Float64, seed, -1, 1);
          return t.to(dtype).to(device);
        };
        const Tensor q = make(c.q), k = make(c.k), v = make(c.v);
        Tensor mask;
        if (c.mask == 1) {
          mask = gt(random({l, s}, DType::Float64, ++seed, 0, 1), 0.3).to(device);
          if (l > 1 && s > 0) mask.select(0, 1).fill_(false);  // a dead row
        } else if (c.mask == 2) {
          mask = random({c.q[0], 1, l, s}, DType::Float64, ++seed).to(dtype).to(device);
          if (l > 0) mask.select(2, 0).fill_(-std::numeric_limits<double>::infinity());
        }
        const Tensor w = random({c.q[0], c.q[1], l, c.v[3]}, DType::Float64, ++seed).to(dtype).to(device);
        uint64_t offset = 0;  // where the run's generator ends
        auto run = [&](AttentionBackend b, DType t) {
          Variable qv(q.to(t), true), kv(k.to(t), true), vv(v.to(t), true);
          const Tensor m = mask.defined() && mask.dtype() != DType::Bool ? mask.to(t) : mask;
          Generator gen(seed);
          gen.set_state(seed, 1000 + seed);
          Variable out =
              scaled_dot_product_attention(qv, kv, vv, m, c.dropout, c.causal, std::nullopt, c.gqa, &gen, b);
          offset = gen.offset() - (1000 + seed);
          sum(mul(out, Variable(w.to(t)))).backward();
          return std::vector<Tensor>{out.data(), qv.grad().data(), kv.grad().data(), vv.grad().data()};
        };
        // The dropout mask depends on the dtype's draws (53-bit uniforms for float64, 24-bit
        // ones for the others), so with dropout the reference of the other dtypes is the
        // composition in float32, whose draws are theirs.
        const DType reference = c.dropout > 0 && dtype != DType::Float64 ? DType::Float32 : DType::Float64;
        std::vector<Tensor> fused = run(AttentionBackend::Fused, dtype);
        const uint64_t fused_offset = offset;
        std::vector<Tensor> exact = run(AttentionBackend::Math, reference);
        EXPECT_EQ(fused_offset, offset) << "the generator advances as the composition's";
        if (c.dropout > 0) {
          EXPECT_EQ(fused_offset, static_cast<uint64_t>(c.q[0] * c.q[1] * l * s));
        }
        const char* names[] = {"output", "grad q", "grad k", "grad v"};
        for (size_t i = 0; i < fused.size(); ++i) {
          EXPECT_EQ(fused[i].dtype(), dtype) << names[i];
          EXPECT_TRUE(tensors_close(fused[i].to(DType::Float64), exact[i].to(DType::Float64), tol, tol)) << names[i];
        }
      }
    }
  }
}

// Heads split from one projection ([B, L, H, E] memory seen as [B, H, L, E]) are read in
// place: the CPU kernels give the same bits as on contiguous copies, and the output and the
// gradients of such heads are laid out the same way, so merging the heads back
// (transpose(1, 2) then reshape) needs no copy. A last dim of non-unit stride is copied
// first and gives the same bits; on CUDA the launcher stages strided rows.
TEST(ScaledDotProductAttention, HeadsSplitFromAProjectionAreReadInPlace) {
  const int64_t b = 2, l = 70, s = 150, hq = 4, hk = 2;
  for (int64_t e : {8, 64})  // 64: bfloat16 on CUDA takes the tensor-core kernels
  for (Device device : cpu_and_cuda())
    for (DType dtype : {DType::Float32, DType::BFloat16}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " on " + device.str() + ", head dim " + std::to_string(e));
      auto split = [&](int64_t h, int64_t len, uint64_t seed) {
        return random({b, len, h, e}, DType::Float32, seed, -1, 1).to(dtype).to(device).transpose(1, 2);
      };
      const Tensor q = split(hq, l, 1), k = split(hk, s, 2), v = split(hk, s, 3), dout = split(hq, l, 4);
      const AttentionParams p{0.3, /*causal=*/true};
      const AttentionResult r = attention_forward(q, k, v, Tensor(), p);
      const AttentionGrads g = attention_backward(dout, q, k, v, Tensor(), r, p);
      for (const Tensor* t : {&r.out, &g.q, &g.k, &g.v}) EXPECT_TRUE(t->transpose(1, 2).is_contiguous());
      const AttentionResult rc = attention_forward(q.contiguous(), k.contiguous(), v.contiguous(), Tensor(), p);
      const AttentionGrads gc =
          attention_backward(dout.contiguous(), q.contiguous(), k.contiguous(), v.contiguous(), Tensor(), rc, p);
      EXPECT_TRUE(rc.out.is_contiguous() && gc.q.is_contiguous());
      const double tol = 0.0;  // the same arithmetic in the same order (CUDA: on staged copies)
      const std::vector<std::pair<Tensor, Tensor>> pairs = {
          {r.out, rc.out}, {r.lse, rc.lse}, {g.q, gc.q}, {g.k, gc.k}, {g.v, gc.v}};
      for (const auto& [strided, contiguous] : pairs)
        EXPECT_TRUE(tensors_close(strided.to(DType::Float64), contiguous.to(DType::Float64), tol, tol));
      // Rows of non-unit stride (the head dim strided): copied, the same bits.
      const Tensor qt = q.contiguous().transpose(2, 3).contiguous().transpose(2, 3);
      ASSERT_NE(qt.stride(3), 1);
      EXPECT_TRUE(tensors_close(attention_forward(qt, k, v, Tensor(), p).out.to(DType::Float64),
                                rc.out.to(DType::Float64), tol, tol));
    }
}

// With dropout, every evaluation starts from one generator state, so the mask is the same
// in each and the function is smooth: the backward must drop what the forward dropped.
TEST(ScaledDotProductAttention, FusedGradientsMatchFiniteDifferences) {
  const Tensor mask = tensor<bool>({true, false, true, true, true, true, false, true, false, false, false, false}, {3, 4});
  for (double dropout : {0.0, 0.4})
    for (bool causal : {false, true}) {
      GradcheckResult g = gradcheck(
          [&](const std::vector<Variable>& x) {
            Generator gen(77);
            return scaled_dot_product_attention(x[0], x[1], x[2], causal ? Tensor() : mask, dropout, causal, 0.7, true,
                                                &gen, AttentionBackend::Fused);
          },
          {random({2, 2, 3, 5}, DType::Float64, 1), random({2, 1, 4, 5}, DType::Float64, 2),
           random({2, 1, 4, 3}, DType::Float64, 3)});
      EXPECT_TRUE(g.ok) << g.message << (causal ? " (causal" : " (bool mask") << ", dropout " << dropout << ")";
    }
}

TEST(ScaledDotProductAttention, DropoutDropsWeights) {
  for (Device device : cpu_and_cuda())
    for (AttentionBackend backend : {AttentionBackend::Auto, AttentionBackend::Math}) {
      SCOPED_TRACE(device.str() + ", " + backend_name(backend));
      auto in = [&](const Shape& shape, uint64_t seed) {
        return Variable(random(shape, DType::Float64, seed).to(device), true);
      };
      Variable q = in({1, 2, 4, 8}, 1), k = in({1, 2, 6, 8}, 2), v = in({1, 2, 6, 8}, 3);
      auto attend = [&](double p, Generator* g) {
        return scaled_dot_product_attention(q, k, v, Tensor(), p, false, std::nullopt, false, g, backend);
      };
      // p = 1 drops everything (as PyTorch): zeros and zero gradients, the counters still taken.
      Generator all(3);
      Variable all_dropped = attend(1.0, &all);
      EXPECT_EQ(all.offset(), 2u * 4 * 6);
      EXPECT_TRUE(tensors_close(all_dropped.data(), zeros({1, 2, 4, 8}, Options(DType::Float64, device)), 0, 0));
      sum(all_dropped).backward();
      EXPECT_TRUE(tensors_close(q.grad().data(), zeros({1, 2, 4, 8}, Options(DType::Float64, device)), 0, 0));
      EXPECT_TRUE(tensors_close(v.grad().data(), zeros({1, 2, 6, 8}, Options(DType::Float64, device)), 0, 0));
      Generator g1(5), g2(5);
      Tensor a = attend(0.5, &g1).data(), b = attend(0.5, &g2).data();
      EXPECT_TRUE(tensors_close(a, b, 0, 0)) << "the same generator state drops the same weights";
      EXPECT_FALSE(tensors_close(a, attend(0.5, &g1).data(), 1e-6, 1e-6)) << "the next call drops others";
      EXPECT_FALSE(tensors_close(a, attend(0.0, nullptr).data(), 1e-6, 1e-6));
      // p = 0 takes no counters and computes what it did before dropout was fused; a p so
      // small that nothing is dropped (the factor rounds to 1) gives those bits too.
      Generator none(5);
      const Tensor undropped = attend(0.0, &none).data();
      EXPECT_EQ(none.offset(), 0u);
      EXPECT_TRUE(tensors_close(attend(1e-300, &none).data(), undropped, 0, 0));
      EXPECT_EQ(none.offset(), 2u * 4 * 6);
    }
}

// The mask itself, through v = the identity and q = 0 (uniform weights 1 / S): out[b, h, i, j]
// is z_ij / S, nonzero exactly where weight (i, j) is kept. It must be the mask that
// bernoulli(1 - p) draws for the [B, Hq, L, S] weights from the same generator state
// (element ((b Hq + h) L + i) S + j), whatever the kernel (CPU; CUDA cores for float32;
// tensor cores for bfloat16 at head dim 64), which a transposed (i, j), a mixed-up head or
// batch, or another counter fails; and on a large case the fraction dropped is p within
// five standard deviations. GQA maps query heads onto one key/value head: still the query
// head's index.
TEST(ScaledDotProductAttention, DropoutMaskIsTheBernoulliDrawOfTheWeights) {
  const int64_t b = 2, hq = 4, hk = 2, l = 48, s = 64;
  const double p = 0.3;
  for (Device device : cpu_and_cuda())
    for (DType dtype : {DType::Float64, DType::Float32, DType::BFloat16}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " on " + device.str());
      const Options o(dtype, device);
      const Variable q(zeros({b, hq, l, s}, o)), k(random({b, hk, s, s}, dtype, 1).to(device));
      const Variable v(eye(s, s, o).expand({b, hk, s, s}));
      Generator g(123);
      g.set_state(123, 4567);
      Generator expected = g;
      Tensor out = scaled_dot_product_attention(q, k, v, Tensor(), p, false, std::nullopt, true, &g).data();
      EXPECT_EQ(g.offset(), static_cast<uint64_t>(4567 + b * hq * l * s)) << "advanced by the weights' count";
      const Tensor kept = ne(out, 0.0);
      const Tensor drawn = ne(bernoulli({b, hq, l, s}, 1 - p, o, &expected), 0.0);
      EXPECT_EQ(expected.offset(), g.offset());
      EXPECT_TRUE(tensors_close(kept.to(DType::Float64), drawn.to(DType::Float64), 0, 0)) << "the mask";
      const double dropped =
          1.0 - kept.to(DType::Float64).sum().item<double>() / static_cast<double>(b * hq * l * s);
      EXPECT_NEAR(dropped, p, 5 * std::sqrt(p * (1 - p) / static_cast<double>(b * hq * l * s)));
      // The kept weights are scaled by 1 / (1 - p).
      const double scale = 1 / ((1 - p) * static_cast<double>(s));
      const Tensor expected_out = mul(drawn.to(DType::Float64), scale);
      EXPECT_TRUE(tensors_close(out.to(DType::Float64), expected_out, dtype == DType::BFloat16 ? 1e-2 : 1e-6, 0));
    }
}

TEST(ScaledDotProductAttention, DoubleBackwardNeedsTheMathBackend) {
  Variable q(random({1, 1, 3, 4}, DType::Float64, 1), true), k(random({1, 1, 3, 4}, DType::Float64, 2), true),
      v(random({1, 1, 3, 4}, DType::Float64, 3), true);
  Variable fused = sum(scaled_dot_product_attention(q, k, v));
  expect_error([&] { grad({fused}, {q}, {}, /*retain_graph=*/true, /*create_graph=*/true); },
               {"ScaledDotProductAttentionBackward", "is not supported", "AttentionBackend::Math"});
  auto math = [&] {
    return scaled_dot_product_attention(q, k, v, Tensor(), 0.0, false, std::nullopt, false, nullptr,
                                        AttentionBackend::Math);
  };
  // (grad() rather than backward(create_graph): a leaf's .grad holding its own graph is a cycle.)
  std::vector<Variable> g = grad({sum(mul(math(), math()))}, {q}, {}, /*retain_graph=*/false, /*create_graph=*/true);
  EXPECT_TRUE(g[0].requires_grad());
}

TEST(ScaledDotProductAttention, BadArgumentsAreRefused) {
  Variable q(zeros({2, 3, 5, 4})), k(zeros({2, 3, 7, 4})), v(zeros({2, 3, 7, 6}));
  const char* op = "scaled_dot_product_attention";
  expect_error([&] { scaled_dot_product_attention(q, Variable(zeros({2, 3, 7, 5})), v); }, {op, "key [..., S, E]"});
  expect_error([&] { scaled_dot_product_attention(q, k, Variable(zeros({2, 3, 6, 6}))); }, {op, "[2, 3, 6, 6]"});
  expect_error([&] { scaled_dot_product_attention(q, k, v, ones({5, 7}, Options(DType::Bool)), 0.0, true); },
               {op, "not both"});
  expect_error([&] { scaled_dot_product_attention(q, k, v, ones({4, 7}, Options(DType::Bool))); },
               {op, "attn_mask [4, 7] does not broadcast"});
  expect_error([&] { scaled_dot_product_attention(q, k, v, ones({5, 7}, Options(DType::Int64))); },
               {op, "attn_mask must be bool"});
  expect_error([&] { scaled_dot_product_attention(q, Variable(zeros({2, 2, 7, 4})), Variable(zeros({2, 2, 7, 6})),
                                                  Tensor(), 0.0, false, std::nullopt, true); },
               {op, "dividing the query's"});
  expect_error([&] { scaled_dot_product_attention(q, k, v, Tensor(), 1.5); }, {op, "dropout_p"});
  expect_error([&] { attention_forward(q.data(), k.data(), v.data(), Tensor(), AttentionParams{0.5, false, -0.1}); },
               {"attention_forward", "dropout must be in [0, 1], got -0.1"});
  expect_error([&] { scaled_dot_product_attention(q, Variable(zeros({2, 3, 7, 4}, Options(DType::Float64))), v); },
               {op, "share a floating dtype"});
  expect_error([&] { scaled_dot_product_attention(Variable(zeros({2, 3, 5, 300})), Variable(zeros({2, 3, 7, 300})),
                                                  v, Tensor(), 0.0, false, std::nullopt, false, nullptr,
                                                  AttentionBackend::Fused); },
               {op, "head dims up to 256"});
}

}  // namespace
}  // namespace wick::test
