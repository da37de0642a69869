// The composites of wick/autograd/composites.h: float64 references on the Tensor path, the
// Variable path equal to it, finite-difference gradients (in the gradcheck table), edge
// shapes and refusals.
#include "tests/autograd/cases.h"

#include <cmath>
#include <limits>

#include <wick/autograd/composites.h>
#include "tests/support/reference.h"

namespace wick::test {
namespace {


TEST(Composites, ElementwiseAgainstFormulas) {
  Tensor a = tensor<double>({1, 2, 3}), b = tensor<double>({5, -2, 7}), w = tensor<double>({0, 0.5, 1});
  EXPECT_TRUE(matches(lerp(a, b, 0.25), {3}, DType::Float64, {2, 1, 4}));
  EXPECT_TRUE(matches(lerp(a, b, w), {3}, DType::Float64, {1, 0, 7}));
  EXPECT_TRUE(matches(addcmul(a, a, b, 2.0), {3}, DType::Float64, {11, -6, 45}));
  EXPECT_TRUE(matches(addcdiv(a, b, a, 0.5), {3}, DType::Float64, {3.5, 1.5, 3 + 7.0 / 6}));
  Tensor f = tensor<double>({kNaN, kInf, -kInf, 2});
  EXPECT_TRUE(matches(nan_to_num(f), {4}, DType::Float64,
                      {0, std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(), 2}));
  EXPECT_TRUE(matches(nan_to_num(f.to(DType::Float16), 1, 7, -7), {4}, DType::Float16, {1, 7, -7, 2}));
  EXPECT_TRUE(matches(nan_to_num(f.to(DType::Float32)), {4}, DType::Float32,
                      {0, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 2}, 1e-6, 0));
  Tensor m = tensor<double>({1, kNaN, 3, kNaN, kNaN, kNaN}, {2, 3});
  EXPECT_TRUE(matches(nansum(m, {1}), {2}, DType::Float64, {4, 0}));
  Tensor nm = nanmean(m, {1});
  EXPECT_EQ(values(nm)[0], 2.0);
  EXPECT_TRUE(std::isnan(values(nm)[1]));  // all NaN: 0 / 0, as PyTorch
  // The gradient skips NaN entries as the value does: 1/count to the others, 0 to each NaN,
  // also in an all-NaN slice. PyTorch's is NaN there (inf * 0 inside its backward), though it
  // gives 0 to the NaN entries of any other slice; wick keeps the one rule (no entry moves a
  // slice that ignores it), as PyTorch's nll_loss does when every target is ignored.
  Variable mv(m, true);
  sum(nanmean(mv, {1})).backward();
  EXPECT_TRUE(matches(mv.grad().data(), {2, 3}, DType::Float64, {0.5, 0, 0.5, 0, 0, 0}));
  EXPECT_TRUE(matches(count_nonzero(tensor<double>({0, 1, -2, 0}, {2, 2}), {0}), {2}, DType::Int64, {1, 1}));
  EXPECT_TRUE(matches(count_nonzero(tensor<double>({0, 1, -2, 0})), {}, DType::Int64, {2}));
  // The Variable path gives the same numbers.
  EXPECT_TRUE(all_close(values(lerp(Variable(a), Variable(b), Variable(w)).data()), values(lerp(a, b, w)), 0, 0));
  EXPECT_TRUE(all_close(values(nansum(Variable(m)).data()), values(nansum(m)), 0, 0));
}

TEST(Composites, LinearAlgebra) {
  Tensor m = tensor<double>({1, 2, 3, 4, 5, 6}, {2, 3}), v = tensor<double>({1, 0, -1});
  EXPECT_TRUE(matches(mv(m, v), {2}, DType::Float64, {-2, -2}));
  EXPECT_TRUE(matches(addmv(tensor<double>({1, 1}), m, v, 2, 3), {2}, DType::Float64, {-4, -4}));
  // beta = 0: NaN in the input does not spread.
  EXPECT_TRUE(matches(addmv(tensor<double>({kNaN, kNaN}), m, v, 0, 1), {2}, DType::Float64, {-2, -2}));
  expect_error([&] { mv(v, m); }, {"mv", "[3]", "[2, 3]"});
  Tensor x = random({2, 2, 4}, DType::Float64, 1), p = random({2, 2, 3}, DType::Float64, 2),
         q = random({2, 3, 4}, DType::Float64, 3);
  EXPECT_TRUE(all_close(values(baddbmm(x, p, q, 0.5, 2)), values(add(mul(x, 0.5), mul(bmm(p, q), 2.0))), 1e-12, 1e-12));
  // Integers stay integers: alpha and beta are converted to their dtype as PyTorch's
  // Scalar::to does (checked, then truncated: 3.9 scales by 3, 0.5 by 0).
  Tensor mi = m.to(DType::Int64), vi = tensor<int64_t>({1, 0, -1});
  EXPECT_TRUE(matches(addmv(tensor<int64_t>({1, 1}), mi, vi, 2, 3.9), {2}, DType::Int64, {-4, -4}));
  EXPECT_TRUE(matches(addmv(tensor<int64_t>({5, 5}), mi, vi, 0.5, -1), {2}, DType::Int64, {2, 2}));
  Tensor xi = mul(x, 10.0).to(DType::Int32), pi = mul(p, 10.0).to(DType::Int32), qi = mul(q, 10.0).to(DType::Int32);
  EXPECT_TRUE(matches(baddbmm(xi, pi, qi, 2.5, 2.0), {2, 2, 4}, DType::Int32,
                      values(add(mul(xi, 2), mul(bmm(pi, qi), 2)))));
  expect_error([&] { addmv(tensor<uint8_t>({1, 1}), m.to(DType::UInt8), abs(vi).to(DType::UInt8), 1, -0.5); },
               {"alpha or beta", "-0.5", "uint8"});
}

TEST(Composites, ShapeOps) {
  Tensor x = arange(0, 6, 1, DType::Float64).reshape({2, 3});
  EXPECT_TRUE(matches(flip(x, {1}), {2, 3}, DType::Float64, {2, 1, 0, 5, 4, 3}));
  EXPECT_TRUE(matches(flip(x, {0, -1}), {2, 3}, DType::Float64, {5, 4, 3, 2, 1, 0}));
  expect_error([&] { flip(x, {1, -1}); }, {"flip", "more than once"});
  EXPECT_TRUE(matches(roll(x, 1, 1), {2, 3}, DType::Float64, {2, 0, 1, 5, 3, 4}));
  EXPECT_TRUE(matches(roll(x, -4, 1), {2, 3}, DType::Float64, {1, 2, 0, 4, 5, 3}));
  EXPECT_TRUE(matches(repeat(tensor<double>({1, 2}), {2, 2}), {2, 4}, DType::Float64, {1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_TRUE(matches(repeat(x, {1, 0}), {2, 0}, DType::Float64, {}));
  expect_error([&] { repeat(x, {2}); }, {"repeat", "at least"});
  EXPECT_TRUE(matches(tile(x, {2}), {2, 6}, DType::Float64, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  std::vector<Tensor> rows = unbind(x, 0);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(matches(rows[1], {3}, DType::Float64, {3, 4, 5}));
  EXPECT_TRUE(unbind(zeros({0, 2})).empty());
  EXPECT_EQ(movedim(zeros({2, 3, 4}), 0, -1).shape(), Shape({3, 4, 2}));
  EXPECT_EQ(movedim(zeros({2, 3, 4}), 2, 0).shape(), Shape({4, 2, 3}));
  EXPECT_EQ(unflatten(zeros({2, 12}), 1, {3, -1}).shape(), Shape({2, 3, 4}));
  expect_error([&] { unflatten(zeros({2, 12}), 1, {5, 2}); }, {"12"});
  EXPECT_TRUE(matches(tril(x), {2, 3}, DType::Float64, {0, 0, 0, 3, 4, 0}));
  EXPECT_TRUE(matches(triu(x, 1), {2, 3}, DType::Float64, {0, 1, 2, 0, 0, 5}));
  EXPECT_TRUE(matches(tril(x, -1), {2, 3}, DType::Float64, {0, 0, 0, 3, 0, 0}));
  expect_error([&] { tril(tensor<double>({1, 2})); }, {"tril", "2 dims"});
  // Views and 0-d inputs.
  EXPECT_TRUE(matches(flip(x.t(), {0}), {3, 2}, DType::Float64, {2, 5, 1, 4, 0, 3}));
  EXPECT_EQ(roll(scalar_tensor(1.0), 3, 0).dim(), 0);
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(composites) {
  using namespace wick;
  return {
      {"lerp", [](auto& v) { return lerp(v[0], v[1], v[2]); }, {{2, 3}, {2, 3}, {3}}},
      {"lerp scalar", [](auto& v) { return lerp(v[0], v[1], 0.3); }, {{4}, {4}}},
      {"addcmul", [](auto& v) { return addcmul(v[0], v[1], v[2], 0.5); }, {{2, 3}, {3}, {2, 3}}},
      {"addcdiv", [](auto& v) { return addcdiv(v[0], v[1], v[2], 2.0); }, {{3}, {3}, {3}}, 0.5, 2},
      {"nan_to_num", [](auto& v) { return nan_to_num(v[0]); }, {{4}}},
      {"nansum", [](auto& v) { return nansum(v[0], {0}); }, {{3, 2}}},
      {"nanmean", [](auto& v) { return nanmean(v[0], {1}, true); }, {{3, 2}}},
      {"mv", [](auto& v) { return mv(v[0], v[1]); }, {{2, 3}, {3}}},
      {"addmv", [](auto& v) { return addmv(v[0], v[1], v[2], 0.5, 2.0); }, {{2}, {2, 3}, {3}}},
      {"baddbmm", [](auto& v) { return baddbmm(v[0], v[1], v[2], 0.5, 2.0); }, {{2, 2, 4}, {2, 2, 3}, {2, 3, 4}}},
      {"flip", [](auto& v) { return flip(v[0], {0, 1}); }, {{2, 3}}},
      {"roll", [](auto& v) { return roll(v[0], 2, 1); }, {{2, 3}}},
      {"repeat", [](auto& v) { return repeat(v[0], {2, 1, 3}); }, {{2, 2}}},
      {"tile", [](auto& v) { return tile(v[0], {2}); }, {{2, 2}}},
      {"unbind", [](auto& v) { return mul(unbind(v[0], 1)[1], unbind(v[0], 1)[0]); }, {{2, 3}}},
      {"movedim", [](auto& v) { return movedim(v[0], 0, 2); }, {{2, 3, 2}}},
      {"unflatten", [](auto& v) { return unflatten(v[0], 0, {2, 3}); }, {{6, 2}}},
      {"tril", [](auto& v) { return tril(v[0], 1); }, {{3, 4}}},
      {"triu", [](auto& v) { return triu(v[0]); }, {{2, 3, 3}}},
  };
}
