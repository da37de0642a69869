// Layers against float64 references: Linear, activations, Flatten, Dropout, Embedding.
#include "tests/support/reference.h"

#include <cmath>
#include <numbers>

#include <wick/nn/activation.h>
#include <wick/nn/containers.h>
#include <wick/nn/dropout.h>
#include <wick/nn/embedding.h>
#include <wick/nn/flatten.h>
#include <wick/nn/linear.h>

namespace wick::test {
namespace {

// y[r, o] = sum_i x[r, i] w[o, i] + b[o] over the rows of x's leading dims.
std::vector<double> ref_linear(const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& b, int64_t in, int64_t out) {
  const int64_t rows = static_cast<int64_t>(x.size()) / std::max<int64_t>(in, 1);
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) s += x[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>(o * in + i)];
      y[static_cast<size_t>(r * out + o)] = s;
    }
  return y;
}

TEST(Linear, MatchesReferenceOnLayoutsDtypesAndBatchShapes) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool bias : {true, false}) {
      Linear lin(4, 3, bias, dt);
      std::vector<double> w = values(lin.weight.data());
      std::vector<double> b = bias ? values(lin.bias.data()) : std::vector<double>{};
      for (const Shape& s : {Shape{5, 4}, Shape{2, 3, 4}, Shape{4}, Shape{0, 4}}) {
        Tensor x = random(s, dt, 7);
        Shape out_shape = s;
        out_shape.back() = 3;
        std::vector<double> expected = ref_linear(values(x), w, b, 4, 3);
        for (Layout l : kAllLayouts) {
          if (l == Layout::Transposed && s.size() < 2) continue;
          Variable y = lin(Variable(with_layout(x, l)));
          EXPECT_TRUE(matches(y.data(), out_shape, dt, expected, dt == DType::Float32 ? 1e-5 : 1e-12, 1e-6))
              << dtype_name(dt) << " bias=" << bias << " " << shape_str(s) << " " << layout_name(l);
        }
      }
    }
  }
  Linear lin(4, 3);
  expect_error([&] { lin(Variable(zeros({2, 5}))); }, {"Linear", "[2, 5]", "in_features=4", "[3, 4]"});
  expect_error([&] { lin(Variable(zeros({}))); }, {"Linear", "[]"});
  expect_error([] { Linear(-1, 2); }, {"Linear", "in_features=-1"});
  expect_error([] { Linear(2, 2, true, DType::Int32); }, {"Linear", "floating", "int32"});
}

TEST(Linear, GradientsReachWeightAndBias) {
  Linear lin(3, 2, true, DType::Float64);
  Tensor x = random({4, 3}, DType::Float64, 1);
  lin(Variable(x)).backward(ones({4, 2}, DType::Float64));
  // d sum(y) / dW[o, i] = sum_r x[r, i]; d / db[o] = rows.
  std::vector<double> xv = values(x), gw;
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 3; ++i) gw.push_back(xv[i] + xv[3 + i] + xv[6 + i] + xv[9 + i]);
  EXPECT_TRUE(matches(lin.weight.grad().data(), {2, 3}, DType::Float64, gw));
  EXPECT_TRUE(matches(lin.bias.grad().data(), {2}, DType::Float64, {4, 4}));
}

double ref_gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

TEST(Activations, MatchReferences) {
  struct Case {
    std::shared_ptr<UnaryModule> m;
    std::function<double(double)> f;
    const char* name;
  };
  std::vector<Case> cases = {
      {std::make_shared<ReLU>(), [](double x) { return x > 0 ? x : 0.0; }, "ReLU"},
      {std::make_shared<LeakyReLU>(0.2), [](double x) { return x > 0 ? x : 0.2 * x; }, "LeakyReLU"},
      {std::make_shared<GELU>(), ref_gelu, "GELU"},
      {std::make_shared<GELU>(GeluApproximation::Tanh), ref_gelu_tanh, "GELU tanh"},
      {std::make_shared<SiLU>(), [](double x) { return x / (1 + std::exp(-x)); }, "SiLU"},
      {std::make_shared<Tanh>(), [](double x) { return std::tanh(x); }, "Tanh"},
      {std::make_shared<Sigmoid>(), [](double x) { return 1 / (1 + std::exp(-x)); }, "Sigmoid"},
      {std::make_shared<ELU>(0.5), [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }, "ELU"},
      {std::make_shared<CELU>(2.0), [](double x) { return x > 0 ? x : 2.0 * std::expm1(x / 2); }, "CELU"},
      {std::make_shared<SELU>(),
       [](double x) { return 1.0507009873554804934 * (x > 0 ? x : 1.6732632423543772848 * std::expm1(x)); }, "SELU"},
      {std::make_shared<Hardtanh>(-2, 1), [](double x) { return std::min(std::max(x, -2.0), 1.0); }, "Hardtanh"},
      {std::make_shared<ReLU6>(), [](double x) { return std::min(std::max(x, 0.0), 6.0); }, "ReLU6"},
      {std::make_shared<Hardsigmoid>(), [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; }, "Hardsigmoid"},
      {std::make_shared<Hardswish>(), [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; },
       "Hardswish"},
      {std::make_shared<Mish>(), [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, "Mish"},
      {std::make_shared<LogSigmoid>(), [](double x) { return -std::log1p(std::exp(-x)); }, "LogSigmoid"},
      {std::make_shared<Softsign>(), [](double x) { return x / (1 + std::fabs(x)); }, "Softsign"},
      {std::make_shared<PReLU>(1, 0.25), [](double x) { return x > 0 ? x : 0.25 * x; }, "PReLU"},
  };
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (const Shape& s : {Shape{3, 5}, Shape{}, Shape{0, 2}}) {
      Tensor x = random(s, dt, 3, -4, 4);
      for (const Case& c : cases)
        for (Layout l : kAllLayouts) {
          if (l == Layout::Transposed && s.size() < 2) continue;
          EXPECT_TRUE(matches((*c.m)(Variable(with_layout(x, l))).data(), s, dt, ref_unary(values(x), c.f),
                              dt == DType::Float32 ? 1e-5 : 1e-12, dt == DType::Float32 ? 1e-6 : 1e-12))
              << c.name << " " << dtype_name(dt) << " " << shape_str(s) << " " << layout_name(l);
        }
    }
  }
}

TEST(Activations, SoftmaxAlongADim) {
  Tensor x = random({2, 3, 4}, DType::Float64, 5);
  std::vector<double> v = values(x);
  for (int64_t dim : {0, 1, 2, -1}) {
    const int64_t d = dim < 0 ? dim + 3 : dim;
    const Shape s{2, 3, 4};
    const Shape st = contiguous_strides(s);
    std::vector<double> expected(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const int64_t pos = (static_cast<int64_t>(i) / st[d]) % s[d];
      const int64_t first = static_cast<int64_t>(i) - pos * st[d];
      double denom = 0;
      for (int64_t k = 0; k < s[d]; ++k) denom += std::exp(v[static_cast<size_t>(first + k * st[d])]);
      expected[i] = std::exp(v[i]) / denom;
    }
    Softmax sm(dim);
    EXPECT_TRUE(matches(sm(Variable(with_layout(x, Layout::Transposed))).data(), s, DType::Float64, expected))
        << dim;
  }
}

TEST(Flatten, MergesTheGivenDims) {
  Tensor x = random({2, 3, 4, 5}, DType::Float32, 2);
  Flatten f;
  Variable y = f(Variable(with_layout(x, Layout::Transposed)));
  EXPECT_TRUE(matches(y.data(), {2, 60}, DType::Float32, values(x)));
  Flatten mid(1, 2);
  EXPECT_EQ(mid(Variable(x)).shape(), (Shape{2, 12, 5}));
  Flatten all(0);
  EXPECT_EQ(all(Variable(x)).shape(), (Shape{120}));
}

TEST(Dropout, TrainMasksAndScalesEvalIsIdentity) {
  Generator g(42);
  Dropout drop(0.25, &g);
  Tensor x = random({100, 100}, DType::Float32, 9, 0.5, 2.0);  // no zeros of its own
  Variable xv(x, true);
  Variable y = drop(xv);
  std::vector<double> xs = values(x), ys = values(y.data());
  size_t kept = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (ys[i] == 0.0) continue;
    ++kept;
    ASSERT_NEAR(ys[i], xs[i] / 0.75, 1e-5 * std::abs(xs[i])) << i;
  }
  // 10000 draws with keep probability 0.75: within 5 standard deviations (~43).
  EXPECT_NEAR(static_cast<double>(kept), 7500.0, 220.0);
  // The gradient is the same mask: 1/(1-p) where kept, 0 where dropped.
  y.backward(ones({100, 100}));
  std::vector<double> gx = values(xv.grad().data());
  for (size_t i = 0; i < xs.size(); ++i) ASSERT_NEAR(gx[i], ys[i] == 0.0 ? 0.0 : 1 / 0.75, 1e-6) << i;

  // The same generator seed gives the same mask.
  Generator g2(42);
  Dropout again(0.25, &g2);
  EXPECT_TRUE(all_close(values(again(Variable(x)).data()), ys, 0, 0));

  drop.eval();
  EXPECT_TRUE(all_close(values(drop(Variable(x)).data()), xs, 0, 0));
  drop.train();
  Dropout none(0.0);
  EXPECT_TRUE(all_close(values(none(Variable(x)).data()), xs, 0, 0));
  Dropout all(1.0);
  EXPECT_TRUE(all_close(values(all(Variable(x)).data()), std::vector<double>(xs.size(), 0.0), 0, 0));
  EXPECT_EQ(dropout(Variable(zeros({0, 3})), 0.5).shape(), (Shape{0, 3}));
  expect_error([] { Dropout(1.5); }, {"dropout", "[0, 1]", "1.5"});
  expect_error([] { dropout(Variable(zeros({2}, DType::Int64)), 0.5); }, {"dropout", "floating", "int64"});
}

TEST(Embedding, LooksUpRowsAndSkipsPadding) {
  Generator g(1);
  Embedding emb(5, 3, std::nullopt, DType::Float64, &g);
  std::vector<double> w = values(emb.weight.data());
  Tensor idx = tensor<int64_t>({4, 0, 4, 2, 1, 3}, {2, 3});
  Variable y = emb(idx);
  std::vector<double> expected;
  for (int64_t i : idx.to_vector<int64_t>())
    for (int64_t d = 0; d < 3; ++d) expected.push_back(w[static_cast<size_t>(i * 3 + d)]);
  EXPECT_TRUE(matches(y.data(), {2, 3, 3}, DType::Float64, expected));
  // Non-contiguous indices and a 0-d index.
  EXPECT_TRUE(matches(emb(with_layout(idx, Layout::Sliced)).data(), {2, 3, 3}, DType::Float64, expected));
  EXPECT_TRUE(matches(emb(scalar_tensor(2, DType::Int64)).data(), {3}, DType::Float64,
                      {w[6], w[7], w[8]}));
  // Each row's gradient counts its uses.
  y.backward(ones({2, 3, 3}, DType::Float64));
  EXPECT_TRUE(matches(emb.weight.grad().data(), {5, 3}, DType::Float64, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2}));

  Embedding padded(5, 2, -1, DType::Float64, &g);  // padding row 4
  EXPECT_EQ(padded.padding_idx(), 4);
  EXPECT_TRUE(all_close(values(padded.weight.data().select(0, 4)), {0, 0}, 0, 0));
  Variable z = padded(tensor<int64_t>({4, 1, 4}));
  EXPECT_TRUE(all_close(values(z.data().select(0, 0)), {0, 0}, 0, 0));
  z.backward(ones({3, 2}, DType::Float64));
  EXPECT_TRUE(matches(padded.weight.grad().data(), {5, 2}, DType::Float64, {0, 0, 1, 1, 0, 0, 0, 0, 0, 0}));

  expect_error([] { Embedding(5, 2, 5); }, {"Embedding", "padding_idx 5", "num_embeddings=5"});
  expect_error([&] { emb(tensor<int64_t>({5})); }, {"5"});
}

}  // namespace
}  // namespace wick::test
