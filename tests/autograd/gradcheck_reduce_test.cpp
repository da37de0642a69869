// Gradient checks of the reductions beyond the reduction table's rows (several dims, max/min
// with indices, softmax family, cumsum), and the rules for zeros and ties that finite
// differences on random inputs never meet.
#include "tests/autograd/cases.h"
#include "tests/support/reference.h"

WICK_GRADCHECK_CASES(reduce) {
  using namespace wick;
  return {
      {"prod dims", [](auto& v) { return prod(v[0], {0, 2}); }, {{2, 3, 2}}, 0.5, 1.5},
      {"logsumexp keepdim", [](auto& v) { return logsumexp(v[0], {0, 1}, true); }, {{2, 3}}},
      {"max all", [](auto& v) { return max(v[0]); }, {{2, 3}}},
      {"min all", [](auto& v) { return min(v[0]); }, {{2, 3}}},
      {"max dim", [](auto& v) { return max(v[0], 1).first; }, {{3, 4}}},
      {"min dim keepdim", [](auto& v) { return min(v[0], 0, true).first; }, {{3, 4}}},
      {"softmax", [](auto& v) { return softmax(v[0], 1); }, {{2, 4}}},
      {"softmax dim 0", [](auto& v) { return softmax(v[0], 0); }, {{3, 2}}},
      {"log_softmax", [](auto& v) { return log_softmax(v[0], -1); }, {{2, 4}}},
      {"cumsum", [](auto& v) { return cumsum(v[0], 1); }, {{2, 4}}},
      {"cumsum dim 0", [](auto& v) { return cumsum(v[0], 0); }, {{3, 2}}},
      {"cumprod", [](auto& v) { return cumprod(v[0], 1); }, {{2, 4}}},
      {"cumprod dim -3", [](auto& v) { return cumprod(v[0], -3); }, {{3, 2, 2}}},
      {"cummax", [](auto& v) { return cummax(v[0], 1).first; }, {{3, 4}}},
      {"cummin dim 0", [](auto& v) { return cummin(v[0], 0).first; }, {{4, 2}}},
      {"logcumsumexp", [](auto& v) { return logcumsumexp(v[0], -1); }, {{2, 4}}},
      {"logcumsumexp dim 0", [](auto& v) { return logcumsumexp(v[0], 0); }, {{3, 2}}, -8, 8},
  };
}

namespace wick::test {
namespace {

using V = const Variable&;


// First and second derivatives by finite differences at these exact inputs (the random
// cases of the table never hold a zero).
void expect_gradcheck_at(const std::string& what, const GradFn& f, const Tensor& x) {
  GradcheckResult r = gradcheck(f, {x});
  EXPECT_TRUE(r.ok) << what << ": " << r.message;
  GradcheckResult r2 = gradcheck(first_gradient(f), {x});
  EXPECT_TRUE(r2.ok) << what << " (second derivatives): " << r2.message;
}

TEST(ReduceGrad, VarAndStdPastTheCorrectionFollowPyTorch) {
  // n <= correction: the forward divides by max(0, n - c) = 0 and is inf (NaN for a
  // constant slice), so no derivative exists. PyTorch's values: over all elements var gives
  // g * inf (NaN where x is the mean) and std NaN; over given dims its formula runs with the
  // negative n - c (var finite, infinite at n = c; std 0, NaN at n = c).
  auto grad_of = [](auto f, std::vector<double> xv, double g = 1) {
    Variable x = leaf(xv, {static_cast<int64_t>(xv.size())});
    Variable y = f(x);
    y.backward(full(y.shape(), g, DType::Float64));
    return x.grad().data();
  };
  for (double c : {2.0, 3.5}) {
    EXPECT_TRUE(matches(grad_of([&](V x) { return var(x, {}, c); }, {1, 3}), {2}, DType::Float64, {kInf, kInf})) << c;
    EXPECT_TRUE(matches(grad_of([&](V x) { return var(x, {}, c); }, {1, 3}, -2), {2}, DType::Float64, {-kInf, -kInf}));
    EXPECT_TRUE(matches(grad_of([&](V x) { return var(x, {}, c); }, {1, 2, 3}), {3}, DType::Float64,
                        c < 3 ? std::vector<double>{-2, 0, 2} : std::vector<double>{kInf, kNaN, kInf}))
        << c;
    EXPECT_TRUE(matches(grad_of([&](V x) { return wick::std(x, {}, c); }, {1, 3}), {2}, DType::Float64, {kNaN, kNaN}));
    EXPECT_TRUE(matches(grad_of([&](V x) { return var_mean(x, {}, c).first; }, {1, 3}), {2}, DType::Float64,
                        {kInf, kInf}));
    EXPECT_TRUE(matches(grad_of([&](V x) { auto [s, m] = std_mean(x, {}, c); return add(s, m); }, {1, 3}), {2},
                        DType::Float64, {kNaN, kNaN}));
  }
  // Over a given dim: PyTorch's formula as it is.
  EXPECT_TRUE(matches(grad_of([](V x) { return var(x, {0}, 3.5); }, {1, 3}), {2}, DType::Float64, {4. / 3, -4. / 3},
                      1e-15, 0));
  EXPECT_TRUE(matches(grad_of([](V x) { return var(x, {0}, 2.0); }, {1, 3}), {2}, DType::Float64, {-kInf, kInf}));
  EXPECT_TRUE(matches(grad_of([](V x) { return wick::std(x, {0}, 3.5); }, {1, 3}), {2}, DType::Float64, {0, 0}));
  EXPECT_TRUE(matches(grad_of([](V x) { return wick::std(x, {0}, 2.0); }, {1, 3}), {2}, DType::Float64, {kNaN, kNaN}));
  // A 0-d input counts as all elements (PyTorch: self.dim() == 0): x is its own mean.
  Variable s(scalar_tensor(2.5, DType::Float64), true);
  var(s, {0}, 1.0).backward();
  EXPECT_TRUE(std::isnan(s.grad().item<double>()));
  // Below the correction nothing changes.
  EXPECT_TRUE(matches(grad_of([](V x) { return var(x, {}, 0.5); }, {1, 3}), {2}, DType::Float64, {-4. / 3, 4. / 3},
                      1e-15, 0));
}

TEST(ReduceGrad, ProdWithZeros) {
  // One zero: it gets the product of the others, the rest 0; two zeros: all 0.
  Variable x = leaf({2, 0, 3, 0, 0, 5, 1, 2, 4}, {3, 3});
  sum(prod(x, {1})).backward();
  EXPECT_TRUE(matches(x.grad().data(), {3, 3}, DType::Float64, {0, 6, 0, 0, 0, 0, 8, 4, 2}));
  Variable y = leaf({2, 0, 3}, {3});
  prod(y).backward();
  EXPECT_TRUE(matches(y.grad().data(), {3}, DType::Float64, {0, 6, 0}));
  for (const auto& [name, values] : std::vector<std::pair<std::string, std::vector<double>>>{
           {"one zero", {1.5, 0, -2, 0.5, 1.2, -0.7}}, {"two zeros", {0, 1.5, 0, -2, 0.5, 1.2}},
           {"three zeros", {0, 0, 0, 1.5, -2, 0.5}}}) {
    const Tensor t = tensor<double>(values, {2, 3});
    expect_gradcheck_at("prod all, " + name, [](auto& v) { return prod(v[0]); }, t);
    expect_gradcheck_at("prod dim 1, " + name, [](auto& v) { return prod(v[0], {1}); }, t);
    expect_gradcheck_at("prod dim 0 keepdim, " + name, [](auto& v) { return prod(v[0], {0}, true); }, t);
    expect_gradcheck_at("prod dims, " + name, [](auto& v) { return prod(reshape(v[0], {3, 1, 2}), {0, 2}); }, t);
  }
}

// PyTorch's prod_backward: g * (prod / x) when x has no zero at all, else the product of
// the other factors (from cumprods, no division); a full product with several zeros gives 0.
TEST(ReduceGrad, ProdFollowsPyTorchWithInfinities) {
  auto grad_of = [](std::vector<double> v, Shape s, const std::function<Variable(const Variable&)>& f) {
    Variable x = leaf(std::move(v), std::move(s));
    sum(f(x)).backward();
    return x.grad().data();
  };
  auto all = [](const Variable& x) { return prod(x); };
  auto rows = [](const Variable& x) { return prod(x, {1}); };
  // No zero: prod / x, so inf / inf is nan.
  EXPECT_TRUE(matches(grad_of({2, kInf}, {2}, all), {2}, DType::Float64, {kInf, kNaN}));
  // One zero: products of the others: 2 * inf, 0 * inf, 0 * 2.
  EXPECT_TRUE(matches(grad_of({0, 2, kInf}, {3}, all), {3}, DType::Float64, {kInf, kNaN, 0}));
  // Two zeros in a full product: 0 (not 0 * inf).
  EXPECT_TRUE(matches(grad_of({0, 0, kInf}, {3}, all), {3}, DType::Float64, {0, 0, 0}));
  // Along a dim, a zero anywhere switches every line to the products of the others.
  EXPECT_TRUE(matches(grad_of({2, kInf, 0, 1}, {2, 2}, rows), {2, 2}, DType::Float64, {kInf, 2, 1, 0}));
  EXPECT_TRUE(matches(grad_of({2, kInf, 3, 1}, {2, 2}, rows), {2, 2}, DType::Float64, {kInf, kNaN, 1, 3}));
  EXPECT_TRUE(matches(grad_of({0, 0, kInf, 4}, {1, 4}, rows), {1, 4}, DType::Float64, {kNaN, kNaN, 0, kNaN}));
  // 0-d: the gradient is g, even at 0.
  EXPECT_TRUE(matches(grad_of({0}, {}, all), {}, DType::Float64, {1}));
}

// d x_k = sum_{j >= k} g_j prod_{i <= j, i != k} x_i along each line, in plain loops.
std::vector<double> ref_cumprod_grad(const std::vector<double>& x, const std::vector<double>& g, int64_t rows,
                                     int64_t n) {
  std::vector<double> out(x.size(), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = k; j < n; ++j) {
        double p = g[static_cast<size_t>(r * n + j)];
        for (int64_t i = 0; i <= j; ++i)
          if (i != k) p *= x[static_cast<size_t>(r * n + i)];
        out[static_cast<size_t>(r * n + k)] += p;
      }
  return out;
}

TEST(ReduceGrad, CumprodWithZerosMatchesTheLoopReference) {
  // Lines with no zero, one zero (first, middle, last) and two zeros.
  const std::vector<double> xv = {1.5, -0.5, 2, 0.7, 1.1,  0, 2, -1.5, 3, 0.5,  1.2, 2, 0, -1, 0.8,
                                  0.5, 1.3, 0.9, -2, 0,    2, 0, 1.5, 0, 3};
  const Tensor x = tensor<double>(xv, {5, 5});
  const Tensor g = random({5, 5}, DType::Float64, 31);
  const std::vector<double> expected = ref_cumprod_grad(xv, values(g), 5, 5);
  for (bool create_graph : {false, true}) {
    Variable xl(x, true);
    Variable d = grad({cumprod(xl, 1)}, {xl}, {Variable(g)}, /*retain_graph=*/false, create_graph)[0];
    EXPECT_TRUE(matches(d.data(), {5, 5}, DType::Float64, expected, 1e-12, 1e-12)) << "create_graph " << create_graph;
  }
  // Along dim 0 (the transpose of the same lines).
  Variable xt(x.t().contiguous(), true);
  Variable dt = grad({cumprod(xt, 0)}, {xt}, {Variable(g.t().contiguous())})[0];
  EXPECT_TRUE(matches(dt.data().t(), {5, 5}, DType::Float64, expected, 1e-12, 1e-12));
  expect_gradcheck_at("cumprod with zeros", [](auto& v) { return cumprod(v[0], 1); }, x);
  expect_gradcheck_at("cumprod with zeros, dim 0", [](auto& v) { return cumprod(v[0], 0); }, x);
}

// cumsum's gradient is the reversed cumsum of g, as PyTorch's: sum(g) - cumsum(g) + g gave
// inf - inf = nan behind an infinite g.
TEST(ReduceGrad, CumsumGradientIsAReversedCumsum) {
  Variable x = leaf({1, 2, 3}, {3});
  Variable d = grad({cumsum(x, -1)}, {x}, {Variable(tensor<double>({1, kInf, 1}))})[0];
  EXPECT_TRUE(matches(d.data(), {3}, DType::Float64, {kInf, kInf, 1}));
}

TEST(ReduceGrad, CumExtremumSendsTheGradientToTheRecordedIndex) {
  Variable x = leaf({1, 3, 3, 2, 4, NAN, 5}, {7});
  auto [values, indices] = cummax(x, 0);
  EXPECT_TRUE(matches(indices, {7}, DType::Int64, {0, 1, 2, 2, 4, 5, 5}));
  sum(values).backward();
  EXPECT_TRUE(matches(x.grad().data(), {7}, DType::Float64, {1, 1, 2, 0, 1, 2, 0}));
  Variable y = leaf({2, 1, 1, 3}, {2, 2});
  sum(cummin(y, 0).first).backward();
  EXPECT_TRUE(matches(y.grad().data(), {2, 2}, DType::Float64, {1, 2, 1, 0}));
  Variable s = leaf({4}, {});
  sum(cummax(s, -1).first).backward();
  EXPECT_TRUE(matches(s.grad().data(), {}, DType::Float64, {1}));
}

// d x_k = sum_{j >= k} g_j exp(x_k - r_j), r = logcumsumexp(x), with g of both signs; the
// inputs are large enough that exp(x) overflows, which the log-space form avoids.
TEST(ReduceGrad, LogcumsumexpGradientIsStable) {
  const std::vector<double> xv = {800, 801, 799.5, 802, -kInf};
  const std::vector<double> gv = {0.5, -1, 2, -0.25, 1};
  std::vector<double> r, expected(5, 0.0);
  double m = -kInf, s = 0;
  for (double v : xv) {
    const double nm = std::max(m, v);
    s = s * std::exp(m - nm) + std::exp(v - nm);
    m = nm;
    r.push_back(m + std::log(s));
  }
  for (size_t k = 0; k < 5; ++k)
    for (size_t j = k; j < 5; ++j) expected[k] += gv[j] * std::exp(xv[k] - r[j]);
  Variable x = leaf(xv, {5});
  Variable d = grad({logcumsumexp(x, 0)}, {x}, {Variable(tensor<double>(gv))})[0];
  EXPECT_TRUE(matches(d.data(), {5}, DType::Float64, expected, 1e-12, 1e-12));
  Variable z = leaf({1.5}, {});
  logcumsumexp(z, 0).backward();
  EXPECT_TRUE(matches(z.grad().data(), {}, DType::Float64, {1}));
}

TEST(ReduceGrad, MaxAllSharesTiesMaxDimPicksTheIndex) {
  Variable x = leaf({3, 1, 3, 2}, {2, 2});
  max(x).backward();
  EXPECT_TRUE(matches(x.grad().data(), {2, 2}, DType::Float64, {0.5, 0, 0.5, 0}));
  Variable y = leaf({3, 3, 1, 2, 5, 5}, {2, 3});
  auto [values, indices] = max(y, 1);
  sum(values).backward();
  EXPECT_TRUE(matches(indices, {2}, DType::Int64, {0, 1}));
  EXPECT_TRUE(matches(y.grad().data(), {2, 3}, DType::Float64, {1, 0, 0, 0, 1, 0}));
}

// amax/amin keep infinities (the value once was e + (inf - inf) = NaN); a slice whose result
// is NaN gets a NaN gradient throughout (0/0: no element equals NaN), as PyTorch's.
TEST(ReduceGrad, AmaxKeepsInfinitiesAndSharesTies) {
  const double inf = INFINITY, nan = NAN;
  Variable x = leaf({2, inf, 1, -inf, -inf, 0, nan, 1, 3, 3, 3, -1}, {4, 3});
  Variable hi = amax(x, {1}), lo = amin(x, {1});
  EXPECT_TRUE(matches(hi.data(), {4}, DType::Float64, {inf, 0, nan, 3}));
  EXPECT_TRUE(matches(lo.data(), {4}, DType::Float64, {1, -inf, nan, -1}));
  sum(hi).backward();
  EXPECT_TRUE(matches(x.grad().data(), {4, 3}, DType::Float64, {0, 1, 0, 0, 0, 1, nan, nan, nan, 0.5, 0.5, 0}));
  x.zero_grad();
  sum(lo).backward();
  EXPECT_TRUE(matches(x.grad().data(), {4, 3}, DType::Float64, {0, 0, 1, 0.5, 0.5, 0, nan, nan, nan, 0, 0, 1}));
}

TEST(ReduceGrad, NormAtZeroGivesZeroGradient) {
  Variable x = leaf({0, 0, 0}, {3});
  norm(x).backward();
  EXPECT_TRUE(matches(x.grad().data(), {3}, DType::Float64, {0, 0, 0}));
}

// p < 1: an element at exact zero takes no gradient, also where the norm or the incoming
// gradient is infinite; PyTorch's formula multiplies its 0 by that infinity there and gives
// NaN (decided in issue 48: wick keeps 0, README).
TEST(ReduceGrad, NormBelowOneGivesAZeroNoGradientBesideAnInfinity) {
  for (double p : {0.5, 0.25}) {
    Variable x = leaf({0, kInf, 1}, {3});
    norm(x, p).backward();
    EXPECT_TRUE(matches(x.grad().data(), {3}, DType::Float64, {0, kNaN, kInf})) << p;
    Variable y = leaf({0, 2, 1, 0}, {2, 2});
    norm(y, p, {1}).backward(tensor<double>({kInf, 1}));
    EXPECT_TRUE(matches(y.grad().data(), {2, 2}, DType::Float64, {0, kInf, 1, 0})) << p;
  }
}

TEST(ReduceGrad, SavedInputsAreFreedAfterBackward) {
  Variable x = leaf({1, 2, 3}, {3});
  Variable y = sum(mul(softmax(x, 0), leaf({1, 2, 3}, {3})));
  y.backward();
  expect_error([&] { y.backward(); }, {"second time", "retain_graph"});
}

// float16 mean with requires_grad used to sum in float16 (inf) before dividing (issue 13,
// item 4).
TEST(ReduceGrad, Float16MeanAccumulatesInFloat32) {
  Variable x(ones({100000}, DType::Float16), true);
  Variable m = mean(x);
  EXPECT_EQ(m.data().to(DType::Float64).item<double>(), 1.0);
  m.backward();
  EXPECT_NEAR(x.grad().data().to(DType::Float64).to_vector<double>()[7], 1e-5, 1e-7);
}

// Mean cross-entropy with every target ignored: the loss is NaN (0/0) but the gradient is 0,
// as in PyTorch (issue 13, item 5).
TEST(ReduceGrad, CrossEntropyWithEveryTargetIgnoredHasAZeroGradient) {
  Variable logits(random({3, 4}, DType::Float64, 8), true);
  CrossEntropyOptions o;
  o.ignore_index = 1;
  Variable loss = cross_entropy(logits, tensor<int64_t>({1, 1, 1}), o);
  EXPECT_TRUE(std::isnan(loss.data().item<double>()));
  loss.backward();
  for (double g : logits.grad().data().to_vector<double>()) EXPECT_EQ(g, 0.0);
}

}  // namespace
}  // namespace wick::test
