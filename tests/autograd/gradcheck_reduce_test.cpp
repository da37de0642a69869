// Gradient checks of the reductions beyond the reduction table's rows (several dims, max/min
// with indices, softmax family, cumsum), and the rules for zeros and ties that finite
// differences on random inputs never meet.
#include "tests/autograd/cases.h"

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
  };
}

namespace wick::test {
namespace {

Variable leaf(std::vector<double> v, Shape s) { return Variable(tensor<double>(v, s), true); }

TEST(ReduceGrad, ProdWithZeros) {
  // One zero: it gets the product of the others, the rest 0; two zeros: all 0.
  Variable x = leaf({2, 0, 3, 0, 0, 5, 1, 2, 4}, {3, 3});
  sum(prod(x, {1})).backward();
  EXPECT_TRUE(matches(x.grad().data(), {3, 3}, DType::Float64, {0, 6, 0, 0, 0, 0, 8, 4, 2}));
  Variable y = leaf({2, 0, 3}, {3});
  prod(y).backward();
  EXPECT_TRUE(matches(y.grad().data(), {3}, DType::Float64, {0, 6, 0}));
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
