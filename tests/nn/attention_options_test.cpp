// MultiheadAttention's PyTorch options (issue 13, section 3): the returned attention
// weights (averaged over the heads or per head, after dropout), kdim/vdim with separate
// projection weights, is_causal; against a float64 reference written with loops.
#include "tests/autograd/cases.h"

#include <cmath>
#include <functional>

#include <wick/nn/attention.h>
#include <wick/nn/transformer.h>

namespace wick::test {
namespace {

using OptionsMat = std::vector<double>;  // row-major
size_t at(int64_t i) { return static_cast<size_t>(i); }

// y [rows, out] = x [rows, in] w^T + b[b0, b0 + out) (b may be empty).
OptionsMat proj(const OptionsMat& x, int64_t rows, int64_t in, const OptionsMat& w, int64_t out, const OptionsMat& b, int64_t b0) {
  OptionsMat y(at(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[at(b0 + o)];
      for (int64_t i = 0; i < in; ++i) s += x[at(r * in + i)] * w[at(o * in + i)];
      y[at(r * out + o)] = s;
    }
  return y;
}

struct RefAttention {
  OptionsMat out;      // [N, L, E]
  OptionsMat weights;  // [N, H, L, S]
};

// Reference attention: q_in [N, L, E], k_in [N, S, kd], v_in [N, S, vd]; wq [E, E], wk
// [E, kd], wv [E, vd]; `blocked(n, l, s)` masks a score, `added(l, s)` is added to it. A row
// with every score masked gets weights 0. `drop(n, h, l, s)`, when given, replaces the
// weights used for the output (and returned).
RefAttention ref_attention(const MultiheadAttention& m, const OptionsMat& q_in, const OptionsMat& k_in, const OptionsMat& v_in, int64_t n,
                           int64_t l, int64_t s, const OptionsMat& wq, const OptionsMat& wk, const OptionsMat& wv,
                           const std::function<bool(int64_t, int64_t, int64_t)>& blocked,
                           const std::function<double(int64_t, int64_t)>& added = nullptr) {
  const int64_t e = m.embed_dim(), h = m.num_heads(), d = e / h;
  const OptionsMat b = m.in_proj_bias.defined() ? values(m.in_proj_bias.data()) : OptionsMat();
  const OptionsMat q = proj(q_in, n * l, e, wq, e, b, 0), k = proj(k_in, n * s, m.kdim(), wk, e, b, e),
            v = proj(v_in, n * s, m.vdim(), wv, e, b, 2 * e);
  RefAttention r{OptionsMat(at(n * l * e), 0.0), OptionsMat(at(n * h * l * s), 0.0)};
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t li = 0; li < l; ++li) {
        OptionsMat sc(at(s));
        double mx = -INFINITY;
        for (int64_t si = 0; si < s; ++si) {
          double dot = 0;
          for (int64_t di = 0; di < d; ++di) dot += q[at((bi * l + li) * e + hi * d + di)] * k[at((bi * s + si) * e + hi * d + di)];
          double x = dot / std::sqrt(static_cast<double>(d)) + (added ? added(li, si) : 0.0);
          sc[at(si)] = blocked(bi, li, si) ? -INFINITY : x;
          mx = std::max(mx, sc[at(si)]);
        }
        if (mx == -INFINITY) continue;  // attends to nothing: weights and output 0
        double z = 0;
        for (double& x : sc) z += (x = std::exp(x - mx));
        for (int64_t si = 0; si < s; ++si) r.weights[at(((bi * h + hi) * l + li) * s + si)] = sc[at(si)] / z;
      }
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t li = 0; li < l; ++li)
        for (int64_t di = 0; di < d; ++di) {
          double acc = 0;
          for (int64_t si = 0; si < s; ++si)
            acc += r.weights[at(((bi * h + hi) * l + li) * s + si)] * v[at((bi * s + si) * e + hi * d + di)];
          r.out[at((bi * l + li) * e + hi * d + di)] = acc;
        }
  const OptionsMat ob = m.out_proj->bias.defined() ? values(m.out_proj->bias.data()) : OptionsMat();
  r.out = proj(r.out, n * l, e, values(m.out_proj->weight.data()), e, ob, 0);
  return r;
}

// The mean over the heads of weights [N, H, L, S].
OptionsMat head_mean(const OptionsMat& w, int64_t n, int64_t h, int64_t l, int64_t s) {
  OptionsMat out(at(n * l * s), 0.0);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t i = 0; i < l * s; ++i) out[at(bi * l * s + i)] += w[at((bi * h + hi) * l * s + i)] / static_cast<double>(h);
  return out;
}

// Rows [i E, (i + 1) E) of the stacked in_proj_weight.
OptionsMat stacked_rows(const MultiheadAttention& m, int64_t i) {
  const int64_t e = m.embed_dim();
  OptionsMat w = values(m.in_proj_weight.data());
  return OptionsMat(w.begin() + i * e * e, w.begin() + (i + 1) * e * e);
}

void randomise_biases(MultiheadAttention& m, uint64_t seed) {
  // PyTorch starts them at zero; give them values so that the tests see them.
  m.in_proj_bias.data().copy_(random({3 * m.embed_dim()}, DType::Float64, seed));
  m.out_proj->bias.data().copy_(random({m.embed_dim()}, DType::Float64, seed + 1));
}

TEST(MultiheadAttentionOptions, KdimVdimUseSeparateProjections) {
  Generator g(11);
  MultiheadAttentionOptions mo;
  mo.kdim = 3;
  mo.vdim = 5;
  MultiheadAttention m(4, 2, mo, DType::Float64, &g);
  EXPECT_FALSE(m.qkv_same_embed_dim());
  EXPECT_FALSE(m.in_proj_weight.defined());
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                               "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(m.q_proj_weight.shape(), (Shape{4, 4}));
  EXPECT_EQ(m.k_proj_weight.shape(), (Shape{4, 3}));
  EXPECT_EQ(m.v_proj_weight.shape(), (Shape{4, 5}));
  // xavier_uniform on each: bound sqrt(6 / (fan_in + fan_out)).
  for (double x : values(m.k_proj_weight.data())) EXPECT_LE(std::abs(x), std::sqrt(6.0 / 7.0));
  for (double x : values(m.v_proj_weight.data())) EXPECT_LE(std::abs(x), std::sqrt(6.0 / 9.0));
  for (double x : values(m.in_proj_bias.data())) EXPECT_EQ(x, 0.0);
  randomise_biases(m, 12);
  Tensor q = random({2, 3, 4}, DType::Float64, 13), k = random({2, 5, 3}, DType::Float64, 14),
         v = random({2, 5, 5}, DType::Float64, 15);
  Tensor pad = tensor<bool>({false, false, true, false, false, false, false, false, false, true}, {2, 5});
  RefAttention r = ref_attention(m, values(q), values(k), values(v), 2, 3, 5, values(m.q_proj_weight.data()),
                                 values(m.k_proj_weight.data()), values(m.v_proj_weight.data()),
                                 [&](int64_t bi, int64_t, int64_t si) { return (bi == 0 && si == 2) || (bi == 1 && si == 4); });
  Variable kv(with_layout(k, Layout::Transposed));
  EXPECT_TRUE(matches(m.forward(Variable(q), kv, Variable(v), Tensor(), pad).data(), {2, 3, 4}, DType::Float64, r.out,
                      1e-10, 1e-12));
  // Only one of them set: still separate, the other one is embed_dim.
  MultiheadAttentionOptions only_v;
  only_v.vdim = 2;
  MultiheadAttention mv(4, 1, only_v, DType::Float64);
  EXPECT_EQ(mv.k_proj_weight.shape(), (Shape{4, 4}));
  EXPECT_EQ(mv.v_proj_weight.shape(), (Shape{4, 2}));
  EXPECT_EQ(mv.forward(Variable(q), Variable(q), Variable(random({2, 3, 2}, DType::Float64, 16))).shape(),
            (Shape{2, 3, 4}));
  // Both equal to embed_dim: the stacked in_proj_weight, as without them.
  MultiheadAttentionOptions same;
  same.kdim = 4;
  same.vdim = 4;
  MultiheadAttention ms(4, 2, same, DType::Float64);
  EXPECT_TRUE(ms.qkv_same_embed_dim());
  EXPECT_EQ(ms.state_dict().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  // A state dict from one layout does not load into the other.
  EXPECT_FALSE(ms.load_state_dict(m.state_dict(), false).missing_keys.empty());
  expect_error([&] { m.forward(Variable(q), Variable(v), Variable(v)); },
               {"MultiheadAttention", "key [N, S, 3]", "value [N, S, 5]", "[2, 5, 5]"});
  expect_error([&] { m.forward(Variable(q), kv, Variable(random({2, 4, 5}, DType::Float64, 17))); },
               {"MultiheadAttention", "[2, 5, 3]", "[2, 4, 5]"});
  MultiheadAttentionOptions bad;
  bad.kdim = 0;
  expect_error([&] { MultiheadAttention(4, 2, bad); }, {"MultiheadAttention", "kdim=0"});
  MultiheadAttentionOptions no_bias;
  no_bias.bias = false;
  no_bias.kdim = 3;
  MultiheadAttention nb(4, 2, no_bias, DType::Float64);
  EXPECT_EQ(nb.state_dict().keys(),
            (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "out_proj.weight"}));
}

TEST(MultiheadAttentionOptions, ReturnsTheWeightsAveragedOrPerHead) {
  Generator g(21);
  MultiheadAttention m(6, 3, 0.0, true, DType::Float64, &g);
  randomise_biases(m, 22);
  const int64_t n = 2, l = 3, s = 4, h = 3;
  Tensor q = random({n, l, 6}, DType::Float64, 23), kv = random({n, s, 6}, DType::Float64, 24);
  Tensor mask = tensor<bool>({false, true, false, false, false, false, false, true, true, true, true, true}, {l, s});
  Tensor pad = tensor<bool>({false, false, false, false, false, true, false, false}, {n, s});
  // Row l = 2 is fully masked by attn_mask: weights 0, output out_proj's bias.
  auto blocked = [&](int64_t bi, int64_t li, int64_t si) {
    return values(mask)[at(li * s + si)] != 0 || values(pad)[at(bi * s + si)] != 0;
  };
  RefAttention r = ref_attention(m, values(q), values(kv), values(kv), n, l, s, stacked_rows(m, 0),
                                 stacked_rows(m, 1), stacked_rows(m, 2), blocked);
  auto [out, avg] = m.forward_with_weights(Variable(q), Variable(kv), Variable(kv), mask, pad);
  EXPECT_TRUE(matches(out.data(), {n, l, 6}, DType::Float64, r.out, 1e-10, 1e-12));
  EXPECT_TRUE(matches(avg.data(), {n, l, s}, DType::Float64, head_mean(r.weights, n, h, l, s), 1e-10, 1e-12));
  auto [out2, per_head] = m.forward_with_weights(Variable(q), Variable(kv), Variable(kv), mask, pad, false);
  EXPECT_TRUE(matches(per_head.data(), {n, h, l, s}, DType::Float64, r.weights, 1e-10, 1e-12));
  EXPECT_TRUE(all_close(values(out2.data()), values(out.data()), 0, 0));
  // forward (the fused attention) gives the same output to rounding; a float mask is added
  // to the scores.
  EXPECT_TRUE(all_close(values(m.forward(Variable(q), Variable(kv), Variable(kv), mask, pad).data()),
                        values(out.data()), 1e-12, 1e-14));
  Tensor additive = random({l, s}, DType::Float64, 25);
  RefAttention ra = ref_attention(m, values(q), values(kv), values(kv), n, l, s, stacked_rows(m, 0),
                                  stacked_rows(m, 1), stacked_rows(m, 2), [](int64_t, int64_t, int64_t) { return false; },
                                  [&](int64_t li, int64_t si) { return values(additive)[at(li * s + si)]; });
  auto [out3, w3] = m.forward_with_weights(Variable(q), Variable(kv), Variable(kv), additive, Tensor(), false);
  EXPECT_TRUE(matches(out3.data(), {n, l, 6}, DType::Float64, ra.out, 1e-10, 1e-12));
  EXPECT_TRUE(matches(w3.data(), {n, h, l, s}, DType::Float64, ra.weights, 1e-10, 1e-12));
  // The weights are differentiable: by finite differences through the averaged weights.
  GradcheckResult gc = gradcheck(
      [&](const std::vector<Variable>& v) { return m.forward_with_weights(v[0], v[1], v[1], mask).second; },
      {random({1, l, 6}, DType::Float64, 26), random({1, s, 6}, DType::Float64, 27)});
  EXPECT_TRUE(gc.ok) << gc.message;
}

TEST(MultiheadAttentionOptions, IsCausalMasksLaterKeys) {
  Generator g(31);
  MultiheadAttention m(4, 2, 0.0, true, DType::Float64, &g);
  randomise_biases(m, 32);
  for (auto [l, s] : {std::pair<int64_t, int64_t>{3, 3}, {3, 5}, {4, 2}}) {
    Tensor q = random({2, l, 4}, DType::Float64, 33), kv = random({2, s, 4}, DType::Float64, 34);
    RefAttention r = ref_attention(m, values(q), values(kv), values(kv), 2, l, s, stacked_rows(m, 0),
                                   stacked_rows(m, 1), stacked_rows(m, 2),
                                   [](int64_t, int64_t li, int64_t si) { return si > li; });
    auto [out, w] = m.forward_with_weights(Variable(q), Variable(kv), Variable(kv), Tensor(), Tensor(), false, true);
    const std::string what = "L=" + std::to_string(l) + " S=" + std::to_string(s);
    EXPECT_TRUE(matches(out.data(), {2, l, 4}, DType::Float64, r.out, 1e-10, 1e-12)) << what;
    EXPECT_TRUE(matches(w.data(), {2, 2, l, s}, DType::Float64, r.weights, 1e-10, 1e-12)) << what;
    EXPECT_TRUE(all_close(values(m.forward(Variable(q), Variable(kv), Variable(kv), Tensor(), Tensor(), true).data()),
                          r.out, 1e-10, 1e-12))
        << what;
  }
  // With attn_mask as well, both apply; with key padding on key 0, query 0 sees no key.
  Tensor x = random({2, 3, 4}, DType::Float64, 35);
  Tensor extra = tensor<bool>({false, false, false, true, false, false, false, true, false}, {3, 3});
  Tensor pad = tensor<bool>({true, false, false, false, false, false}, {2, 3});
  RefAttention r = ref_attention(m, values(x), values(x), values(x), 2, 3, 3, stacked_rows(m, 0), stacked_rows(m, 1),
                                 stacked_rows(m, 2), [](int64_t bi, int64_t li, int64_t si) {
                                   return si > li || (li == 1 && si == 0) || (li == 2 && si == 1) || (bi == 0 && si == 0);
                                 });
  Variable xv(x);
  auto [out, w] = m.forward_with_weights(xv, xv, xv, extra, pad, true, true);
  EXPECT_TRUE(matches(out.data(), {2, 3, 4}, DType::Float64, r.out, 1e-10, 1e-12));
  EXPECT_TRUE(matches(w.data(), {2, 3, 3}, DType::Float64, head_mean(r.weights, 2, 2, 3, 3), 1e-10, 1e-12));
  for (double v : values(w.data())) EXPECT_TRUE(std::isfinite(v));
  // The encoder layer passes it on: is_causal is the bool causal mask.
  TransformerEncoderLayerOptions t;
  t.dim_feedforward = 8;
  TransformerEncoderLayer layer(4, 2, t, DType::Float64);
  layer.eval();
  Tensor causal = tensor<bool>({false, true, true, false, false, true, false, false, false}, {3, 3});
  EXPECT_TRUE(all_close(values(layer.forward(xv, Tensor(), Tensor(), true).data()),
                        values(layer.forward(xv, causal, Tensor()).data()), 1e-12, 1e-12));
  EXPECT_FALSE(all_close(values(layer.forward(xv, Tensor(), Tensor(), true).data()), values(layer(xv).data()), 1e-6, 0));
}

TEST(MultiheadAttentionOptions, ReturnedWeightsAreTheDroppedOnesInTraining) {
  Generator g(41);
  MultiheadAttention m(4, 2, 0.5, true, DType::Float64, &g);
  randomise_biases(m, 42);
  Tensor x = random({2, 3, 4}, DType::Float64, 43);
  Variable xv(x);
  m.eval();
  auto [eval_out, eval_w] = m.forward_with_weights(xv, xv, xv, Tensor(), Tensor(), false);
  m.train();
  auto [out, w] = m.forward_with_weights(xv, xv, xv, Tensor(), Tensor(), false);
  // Each returned weight is dropped (0) or scaled by 1 / (1 - p) = 2.
  const OptionsMat ew = values(eval_w.data()), tw = values(w.data());
  int dropped = 0;
  for (size_t i = 0; i < tw.size(); ++i) {
    if (tw[i] == 0.0) {
      ++dropped;
    } else {
      EXPECT_NEAR(tw[i], 2 * ew[i], 1e-12) << i;
    }
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, static_cast<int>(tw.size()));
  // The output is the one those weights give: the reference with the weights replaced.
  OptionsMat b = values(m.in_proj_bias.data());
  OptionsMat v = proj(values(x), 6, 4, stacked_rows(m, 2), 4, b, 8), mixed(24, 0.0);
  for (int64_t bi = 0; bi < 2; ++bi)
    for (int64_t hi = 0; hi < 2; ++hi)
      for (int64_t li = 0; li < 3; ++li)
        for (int64_t di = 0; di < 2; ++di)
          for (int64_t si = 0; si < 3; ++si)
            mixed[at((bi * 3 + li) * 4 + hi * 2 + di)] +=
                tw[at(((bi * 2 + hi) * 3 + li) * 3 + si)] * v[at((bi * 3 + si) * 4 + hi * 2 + di)];
  OptionsMat expected = proj(mixed, 6, 4, values(m.out_proj->weight.data()), 4, values(m.out_proj->bias.data()), 0);
  EXPECT_TRUE(matches(out.data(), {2, 3, 4}, DType::Float64, expected, 1e-10, 1e-12));
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(attention_options) {
  using namespace wick;
  // A module made afresh (same seed) on every call, so that finite differences see one function.
  auto separate = [] {
    Generator g(51);
    MultiheadAttentionOptions mo;
    mo.kdim = 3;
    mo.vdim = 5;
    auto m = std::make_shared<MultiheadAttention>(4, 2, mo, DType::Float64, &g);
    m->in_proj_bias.data().copy_(test::random({12}, DType::Float64, 52));
    return m;
  };
  return {
      {"MultiheadAttention kdim vdim per-head weights",
       [=](auto& v) {
         auto [out, w] = separate()->forward_with_weights(v[0], v[1], v[2], Tensor(), Tensor(), false);
         return add(sum(square(out)), sum(square(w)));
       },
       {{2, 3, 4}, {2, 5, 3}, {2, 5, 5}}},
      {"MultiheadAttention is_causal averaged weights",
       [=](auto& v) {
         Tensor pad = tensor<bool>({true, false, false, false, false, false, false, false, false, true}, {2, 5});
         auto [out, w] = separate()->forward_with_weights(v[0], v[1], v[2], Tensor(), pad, true, true);
         return add(sum(square(out)), sum(square(w)));
       },
       {{2, 3, 4}, {2, 5, 3}, {2, 5, 5}}},
  };
}
