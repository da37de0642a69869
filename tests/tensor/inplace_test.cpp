// Type promotion (torch.result_type), in-place elementwise ops on views, and the *Grad
// unary ops against finite differences.
#include <cmath>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(Promotion, FollowsTorchResultType) {
  const Tensor i32 = tensor<int32_t>({1, 2, 3});
  const Tensor u8 = tensor<uint8_t>({1, 2, 3});
  const Tensor i64 = tensor<int64_t>({1, 2, 3});
  const Tensor f16 = tensor<float>({1, 2, 3}).to(DType::Float16);
  const Tensor b = tensor<bool>({true, false, true});
  // A number never widens a tensor of its own category.
  EXPECT_EQ((i32 + 2).dtype(), DType::Int32);
  EXPECT_EQ((i32 + 2.5).dtype(), DType::Float32);
  EXPECT_EQ((f16 + 2.5).dtype(), DType::Float16);
  EXPECT_EQ((u8 + 300).dtype(), DType::UInt8);
  EXPECT_EQ((b + 1).dtype(), DType::Int64);
  EXPECT_EQ((b + true).dtype(), DType::Bool);
  // 0-d tensors count less than dimensioned ones, but more than numbers.
  EXPECT_EQ((i64 + scalar_tensor(1.5, DType::Float64)).dtype(), DType::Float64);
  EXPECT_EQ((f16 + scalar_tensor(1.5, DType::Float64)).dtype(), DType::Float16);
  EXPECT_EQ((i32 + scalar_tensor(7, DType::Int64)).dtype(), DType::Int32);
  EXPECT_EQ((scalar_tensor(7, DType::Int32) + 2.5).dtype(), DType::Float32);
  EXPECT_EQ((scalar_tensor(7, DType::Int32) + scalar_tensor(1.5, DType::Float64)).dtype(), DType::Float64);
  // Dimensioned tensors promote normally.
  EXPECT_EQ((u8 + i32).dtype(), DType::Int32);
  EXPECT_EQ((i64 + f16).dtype(), DType::Float16);
  EXPECT_EQ((f16 + tensor<float>({1, 2, 3}).to(DType::BFloat16)).dtype(), DType::Float32);
  EXPECT_TRUE(matches(b + b, {3}, DType::Bool, {1, 0, 1}));  // logical or, like PyTorch
  // True division of integers, comparisons, logical ops, integer pow.
  EXPECT_TRUE(matches(i32 / i32, {3}, DType::Float32, {1, 1, 1}));
  EXPECT_EQ((i32 < 2.5).dtype(), DType::Bool);
  EXPECT_TRUE(matches(i32 < 2.5, {3}, DType::Bool, {1, 1, 0}));
  EXPECT_EQ(logical_and(i32, f16).dtype(), DType::Bool);
  EXPECT_TRUE(matches(pow(i32, i32), {3}, DType::Int32, {1, 4, 27}));
  EXPECT_EQ(result_type(i32, Scalar(2.5)), DType::Float32);
  EXPECT_EQ(result_type(u8, i32), DType::Int32);
  // Unary float ops turn integers into float32; the others keep the dtype.
  EXPECT_EQ(exp(i64).dtype(), DType::Float32);
  EXPECT_EQ(sigmoid(b).dtype(), DType::Float32);
  EXPECT_EQ(abs(i64).dtype(), DType::Int64);
  EXPECT_EQ(relu(u8).dtype(), DType::UInt8);
  EXPECT_EQ(clamp(i32, 0, 1).dtype(), DType::Int32);
  EXPECT_EQ(gelu(f16).dtype(), DType::Float16);
}

TEST(Outputs, FollowTheLayoutOfADenseInput) {
  Tensor a = random({3, 4}, DType::Float32, 1);
  Tensor t = a.t();
  Tensor r = exp(t);
  EXPECT_EQ(r.strides(), t.strides());  // walked in memory order like PyTorch
  EXPECT_TRUE(matches(r, {4, 3}, DType::Float32, ref_unary(values(t), [](double v) { return std::exp(v); })));
  EXPECT_EQ((t + 1).strides(), t.strides());
  EXPECT_TRUE((a.slice(1, 0, 4, 2) + 1).is_contiguous());  // not dense: row-major output
}

TEST(InPlace, OnViewsWritesOnlyTheView) {
  // add_ on a transposed view.
  Tensor a = tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  a.t().add_(tensor<float>({10, 20}, {1, 2}));
  EXPECT_TRUE(matches(a, {2, 3}, DType::Float32, {11, 12, 13, 24, 25, 26}));
  // mul_ on a slice with a step: the skipped elements stay.
  Tensor b = arange(0, 8, 1, DType::Float32);
  b.slice(0, 1, 8, 3).mul_(10);
  EXPECT_TRUE(matches(b, {8}, DType::Float32, {0, 10, 2, 3, 40, 5, 6, 70}));
  // sub_ / div_ on a column, with a broadcast other.
  Tensor c = ones({3, 3}, DType::Float64);
  c.select(1, 1).sub_(tensor<double>({1, 2, 3}));
  c.select(1, 2).div_(scalar_tensor(4.0, DType::Float64));
  EXPECT_TRUE(matches(c, {3, 3}, DType::Float64, {1, 0, 0.25, 1, -1, 0.25, 1, -2, 0.25}));
  // Overlapping input: a += a.t() reads the original values.
  Tensor d = tensor<float>({1, 2, 3, 4}, {2, 2});
  d.add_(d.t());
  EXPECT_TRUE(matches(d, {2, 2}, DType::Float32, {2, 5, 5, 8}));
  // Partially overlapping shifted view.
  Tensor e = arange(0, 6, 1, DType::Int64);
  e.narrow(0, 1, 5).add_(e.narrow(0, 0, 5));
  EXPECT_TRUE(matches(e, {6}, DType::Int64, {0, 1, 3, 5, 7, 9}));
  // clamp_ on a non-contiguous view; the same tensor as both operands.
  Tensor f = tensor<float>({-3, 5, -1, 2}, {2, 2});
  f.t().clamp_(-2, 3);
  EXPECT_TRUE(matches(f, {2, 2}, DType::Float32, {-2, 3, -1, 2}));
  f.mul_(f);
  EXPECT_TRUE(matches(f, {2, 2}, DType::Float32, {4, 9, 1, 4}));
  Tensor g = tensor<int32_t>({1, 2, 3});
  g.clamp_(std::nullopt, 2);
  EXPECT_TRUE(matches(g, {3}, DType::Int32, {1, 2, 2}));
  // Operators.
  Tensor h = ones({2});
  h += 1;
  h *= tensor<float>({2, 3});
  h -= 0.5;
  h /= 2;
  EXPECT_TRUE(matches(h, {2}, DType::Float32, {1.75, 2.75}));
}

TEST(InPlace, CastsTheResultToSelf) {
  Tensor f = tensor<float>({1.5, 2.5});
  f.add_(tensor<int64_t>({1, 2}));  // int64 other into float32 self
  EXPECT_TRUE(matches(f, {2}, DType::Float32, {2.5, 4.5}));
  Tensor i = tensor<int32_t>({5, 7});
  i.add_(tensor<int64_t>({1, 2}));  // computed in int64, written as int32
  EXPECT_TRUE(matches(i, {2}, DType::Int32, {6, 9}));
  i.mul_(3);
  EXPECT_TRUE(matches(i, {2}, DType::Int32, {18, 27}));
  Tensor h = tensor<float>({1, 2}).to(DType::Float16);
  h.mul_(tensor<double>({0.5, 0.25}));  // float64 other into float16 self
  EXPECT_TRUE(matches(h, {2}, DType::Float16, {0.5, 0.5}));
  Tensor empty_self = zeros({0, 2});
  empty_self.add_(ones({2}));
  EXPECT_EQ(empty_self.shape(), (Shape{0, 2}));
}

TEST(InPlace, Errors) {
  expect_error([] { tensor<int32_t>({1}).add_(tensor<float>({1.5})); },
               {"add_", "result type float32 can't be cast to the desired output type int32"});
  expect_error([] { tensor<int32_t>({1}).mul_(2.5); }, {"mul_", "float32", "int32"});
  expect_error([] { tensor<int32_t>({4}).div_(2); }, {"div_", "can't be cast"});
  expect_error([] { tensor<bool>({true}).add_(1); }, {"add_", "int64", "bool"});
  expect_error([] { zeros({3}).add_(zeros({2, 3})); }, {"add_", "[2, 3]", "[3]", "resize"});
  expect_error([] { zeros({3}).add_(zeros({4})); }, {"add_", "[3]", "[4]"});
  expect_error([] { zeros({1}).expand({3}).add_(1); }, {"add_", "[3]", "memory location"});
  expect_error([] { zeros({3}).clamp_(std::nullopt, std::nullopt); }, {"clamp_", "min and max"});
}

// --- gradients -------------------------------------------------------------------------------

TEST(UnaryGrad, MatchesCentralDifferencesInFloat64) {
  struct Case {
    UnaryOp forward, grad;
    std::function<Tensor(const Tensor&)> f;
  };
  const std::vector<Case> cases = {
      {UnaryOp::Sigmoid, UnaryOp::SigmoidGrad, [](const Tensor& x) { return sigmoid(x); }},
      {UnaryOp::Tanh, UnaryOp::TanhGrad, [](const Tensor& x) { return tanh(x); }},
      {UnaryOp::GeluTanh, UnaryOp::GeluTanhGrad, [](const Tensor& x) { return gelu(x, GeluApproximation::Tanh); }},
      {UnaryOp::GeluErf, UnaryOp::GeluErfGrad, [](const Tensor& x) { return gelu(x); }},
      {UnaryOp::Silu, UnaryOp::SiluGrad, [](const Tensor& x) { return silu(x); }},
  };
  Tensor x = tensor<double>({-30, -6, -2.5, -1, -0.3, 0, 0.2, 0.9, 2, 5, 25});
  const double h = 1e-6;
  for (const Case& c : cases) {
    std::vector<double> fd;
    const auto up = values(c.f(x + h)), down = values(c.f(x - h));
    for (size_t i = 0; i < up.size(); ++i) fd.push_back((up[i] - down[i]) / (2 * h));
    EXPECT_TRUE(matches(unary_grad(c.forward, x), {11}, DType::Float64, fd, 1e-7, 1e-9))
        << unary_op_name(c.forward);
    // The *Grad op itself is accepted too, and float32 agrees with float64.
    EXPECT_TRUE(matches(unary_grad(c.grad, x.to(DType::Float32)), {11}, DType::Float32, fd, 1e-5, 1e-6))
        << unary_op_name(c.grad);
  }
}

}  // namespace
}  // namespace wick::test
