// MultiheadAttention against a float64 reference, the encoder layer's wiring, Residual.
#include "tests/support/reference.h"

#include <cmath>

#include <wick/autograd/gradcheck.h>
#include <wick/nn/attention.h>
#include <wick/nn/transformer.h>
#include <wick/nn/residual.h>

namespace wick::test {
namespace {

using Mat = std::vector<double>;  // row-major

// y [rows, out] = x [rows, in] w^T + b, w rows [w0, w0 + out) of a [*, in] matrix.
Mat ref_proj(const Mat& x, int64_t rows, int64_t in, const Mat& w, int64_t w0, int64_t out, const Mat& b, int64_t b0) {
  Mat y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<size_t>(b0 + o)];
      for (int64_t i = 0; i < in; ++i) s += x[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>((w0 + o) * in + i)];
      y[static_cast<size_t>(r * out + o)] = s;
    }
  return y;
}

// Reference multi-head attention for x [N, L, E], keys [N, S, E]; mask(l, s) / pad(n, s) true = blocked.
Mat ref_mha(const MultiheadAttention& m, const Mat& q_in, const Mat& kv_in, int64_t n, int64_t l, int64_t s,
            const std::function<bool(int64_t, int64_t)>& mask, const std::function<bool(int64_t, int64_t)>& pad) {
  const int64_t e = m.embed_dim(), h = m.num_heads(), d = e / h;
  Mat w = values(m.in_proj_weight.data()), b = values(m.in_proj_bias.data());
  Mat q = ref_proj(q_in, n * l, e, w, 0, e, b, 0), k = ref_proj(kv_in, n * s, e, w, e, e, b, e),
      v = ref_proj(kv_in, n * s, e, w, 2 * e, e, b, 2 * e);
  Mat out(static_cast<size_t>(n * l * e));
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t li = 0; li < l; ++li) {
        std::vector<double> sc(static_cast<size_t>(s));
        double mx = -INFINITY;
        for (int64_t si = 0; si < s; ++si) {
          double dot = 0;
          for (int64_t di = 0; di < d; ++di)
            dot += q[static_cast<size_t>((bi * l + li) * e + hi * d + di)] * k[static_cast<size_t>((bi * s + si) * e + hi * d + di)];
          sc[static_cast<size_t>(si)] = mask(li, si) || pad(bi, si) ? -INFINITY : dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, sc[static_cast<size_t>(si)]);
        }
        double z = 0;
        for (double& x : sc) z += (x = std::exp(x - mx));
        for (int64_t di = 0; di < d; ++di) {
          double acc = 0;
          for (int64_t si = 0; si < s; ++si) acc += sc[static_cast<size_t>(si)] / z * v[static_cast<size_t>((bi * s + si) * e + hi * d + di)];
          out[static_cast<size_t>((bi * l + li) * e + hi * d + di)] = acc;
        }
      }
  return ref_proj(out, n * l, e, values(m.out_proj->weight.data()), 0, e, values(m.out_proj->bias.data()), 0);
}

TEST(MultiheadAttention, MatchesReferenceWithMasks) {
  Generator g(1);
  MultiheadAttention mha(4, 2, 0.0, true, DType::Float64, &g);
  std::vector<std::string> names;
  for (auto& [name, p] : mha.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  // PyTorch starts the biases at zero; give them values so the test sees them.
  mha.in_proj_bias.data().copy_(random({12}, DType::Float64, 2));
  mha.out_proj->bias.data().copy_(random({4}, DType::Float64, 3));
  Tensor q = random({2, 3, 4}, DType::Float64, 4), kv = random({2, 5, 4}, DType::Float64, 5);
  auto none = [](int64_t, int64_t) { return false; };
  EXPECT_TRUE(matches(mha.forward(Variable(q), Variable(kv), Variable(kv)).data(), {2, 3, 4}, DType::Float64,
                      ref_mha(mha, values(q), values(kv), 2, 3, 5, none, none), 1e-10, 1e-12));
  // Self-attention with a causal-style bool mask and a padding mask.
  Tensor x = random({2, 3, 4}, DType::Float64, 6);
  Tensor causal = tensor<bool>({false, true, true, false, false, true, false, false, false}, {3, 3});
  Tensor padding = tensor<bool>({false, false, false, false, false, true}, {2, 3});
  auto causal_f = [](int64_t a, int64_t b) { return b > a; };
  auto pad_f = [](int64_t n, int64_t s) { return n == 1 && s == 2; };
  Mat expected = ref_mha(mha, values(x), values(x), 2, 3, 3, causal_f, pad_f);
  Variable xv(with_layout(x, Layout::Transposed));
  EXPECT_TRUE(matches(mha.forward(xv, xv, xv, causal, padding).data(), {2, 3, 4}, DType::Float64, expected, 1e-10,
                      1e-12));
  // A float mask is added to the scores: -inf where the bool mask blocks is the same mask.
  Tensor additive = where(causal, Scalar(-INFINITY), zeros({3, 3}, DType::Float64));
  EXPECT_TRUE(matches(mha.forward(xv, xv, xv, additive, padding).data(), {2, 3, 4}, DType::Float64, expected, 1e-10,
                      1e-12));
  expect_error([&] { mha.forward(Variable(zeros({2, 3, 5})), xv, xv); }, {"MultiheadAttention", "[2, 3, 5]"});
  expect_error([&] { mha.forward(xv, xv, xv, zeros({2, 3}, DType::Bool)); }, {"attn_mask", "[2, 3]", "[3, 3]"});
  expect_error([] { MultiheadAttention(6, 4); }, {"num_heads=4", "embed_dim=6"});

  // Gradients w.r.t. the query and the key/value by finite differences.
  GradcheckResult r = gradcheck(
      [&](const std::vector<Variable>& v) { return mha.forward(v[0], v[1], v[1], causal); },
      {random({1, 3, 4}, DType::Float64, 7), random({1, 3, 4}, DType::Float64, 8)});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(TransformerEncoderLayer, PostAndPreNormWiring) {
  for (bool norm_first : {false, true}) {
    TransformerEncoderLayerOptions t;
    t.dim_feedforward = 8;
    t.dropout = 0.1;
    t.norm_first = norm_first;
    t.activation = norm_first ? TransformerActivation::GELU : TransformerActivation::ReLU;
    TransformerEncoderLayer layer(4, 2, t, DType::Float64);
    std::vector<std::string> names;
    for (auto& [name, p] : layer.named_parameters()) names.push_back(name);
    EXPECT_EQ(names, (std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                               "self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear1.weight",
                                               "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
                                               "norm1.bias", "norm2.weight", "norm2.bias"}));
    layer.eval();  // no dropout
    Variable x(random({2, 3, 4}, DType::Float64, 9));
    auto ff = [&](const Variable& v) {
      Variable hdn = layer.linear1->forward(v);
      return layer.linear2->forward(norm_first ? gelu(hdn) : relu(hdn));
    };
    auto sa = [&](const Variable& v) { return layer.self_attn->forward(v, v, v); };
    Variable expected;
    if (norm_first) {
      Variable y = add(x, sa(layer.norm1->forward(x)));
      expected = add(y, ff(layer.norm2->forward(y)));
    } else {
      Variable y = layer.norm1->forward(add(x, sa(x)));
      expected = layer.norm2->forward(add(y, ff(y)));
    }
    EXPECT_TRUE(matches(layer(x).data(), {2, 3, 4}, DType::Float64, values(expected.data()), 1e-12, 1e-12));
    // In training, dropout makes two passes differ; every parameter receives a gradient.
    layer.train();
    Variable a = layer(x);
    EXPECT_FALSE(all_close(values(a.data()), values(layer(x).data()), 0, 0));
    sum(a).backward();
    for (auto& [name, p] : layer.named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
  }
}

// A batch row whose key_padding_mask masks every key (issue 13, item 14): its attention
// output is 0 (out_proj's bias after the projection), and no NaN reaches the outputs or
// the parameters' gradients; the other rows are as without that row.
TEST(MultiheadAttention, AFullyMaskedRowAttendsToNothing) {
  MultiheadAttention m(4, 2, 0.0, true, DType::Float64);
  Variable x(random({2, 3, 4}, DType::Float64, 21));
  Tensor pad = tensor<double>({0, 0, 1, 1, 1, 1}, {2, 3}).to(DType::Bool);
  Variable y = m.forward(x, x, x, Tensor(), pad);
  std::vector<double> out = values(y.data());
  for (double v : out) EXPECT_TRUE(std::isfinite(v));
  std::vector<double> bias = values(m.out_proj->bias.data());
  for (int64_t i = 12; i < 24; ++i) EXPECT_NEAR(out[static_cast<size_t>(i)], bias[static_cast<size_t>(i % 4)], 1e-12);
  Variable first = m.forward(slice(x, 0, 0, 1), slice(x, 0, 0, 1), slice(x, 0, 0, 1), Tensor(), pad.slice(0, 0, 1));
  EXPECT_TRUE(all_close(std::vector<double>(out.begin(), out.begin() + 12), values(first.data()), 1e-12, 1e-12));
  sum(y).backward();
  for (auto& [name, p] : m.named_parameters())
    for (double g : values(p.grad().data())) EXPECT_TRUE(std::isfinite(g)) << name;
}

TEST(Residual, AddsTheShortcut) {
  auto body = std::make_shared<Linear>(3, 3, true, DType::Float64);
  Residual res(body);
  Tensor x = random({2, 3}, DType::Float64, 10);
  std::vector<double> bx = values(body->forward(Variable(x)).data()), xv = values(x), expected;
  for (size_t i = 0; i < xv.size(); ++i) expected.push_back(bx[i] + xv[i]);
  EXPECT_TRUE(matches(res(Variable(x)).data(), {2, 3}, DType::Float64, expected, 1e-12, 1e-12));
  EXPECT_EQ(res.named_parameters()[0].first, "body.weight");

  auto proj = std::make_shared<Linear>(3, 2, false, DType::Float64);
  Residual down(std::make_shared<Linear>(3, 2, true, DType::Float64), proj);
  EXPECT_EQ(down.named_parameters().back().first, "shortcut.weight");
  EXPECT_EQ(down(Variable(x)).shape(), (Shape{2, 2}));
  Residual bad(std::make_shared<Linear>(3, 2, true, DType::Float64));
  expect_error([&] { bad(Variable(x)); }, {"Residual", "[2, 2]", "[2, 3]"});
}

}  // namespace
}  // namespace wick::test
