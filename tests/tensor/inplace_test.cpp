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

TEST(Fill, NumbersFitByPyTorchsRule) {
  // An integer from -255 to -1 goes into uint8 wrapped around (PyTorch lets a - b work as
  // a + 255 b); fill_, masked_fill_ and zero_ agree; index_fill is masked_fill's.
  Tensor u = zeros({3}, DType::UInt8);
  EXPECT_TRUE(matches(u.fill_(-1), {3}, DType::UInt8, {255, 255, 255}));
  EXPECT_TRUE(matches(u.fill_(-255), {3}, DType::UInt8, {1, 1, 1}));
  EXPECT_TRUE(matches(masked_fill(zeros({3}, DType::UInt8), tensor<bool>({true, false, true}), -3), {3},
                      DType::UInt8, {253, 0, 253}));
  EXPECT_TRUE(matches(full({2}, -2, DType::UInt8), {2}, DType::UInt8, {254, 254}));
  expect_error([&] { u.fill_(-256); }, {"fill_", "value -256", "uint8", "overflow"});
  expect_error([&] { u.fill_(256); }, {"fill_", "value 256", "uint8"});
  // Floating numbers must lie in the dtype's range as they are, then are truncated.
  expect_error([&] { u.fill_(-0.5); }, {"fill_", "-0.5", "uint8"});
  EXPECT_TRUE(matches(u.fill_(2.7), {3}, DType::UInt8, {2, 2, 2}));
  const double nan = std::nan(""), inf = INFINITY;
  for (DType t : {DType::UInt8, DType::Int32, DType::Int64}) {
    Tensor i = zeros({2}, t);
    expect_error([&] { i.fill_(nan); }, {"fill_", "nan", dtype_name(t)});
    expect_error([&] { i.fill_(-inf); }, {"fill_", "inf", dtype_name(t)});
  }
  Tensor i32 = zeros({1}, DType::Int32), i64 = zeros({1}, DType::Int64);
  EXPECT_TRUE(matches(i32.fill_(-2147483648LL), {1}, DType::Int32, {-2147483648.0}));
  expect_error([&] { i32.fill_(2147483648LL); }, {"fill_", "2147483648", "int32"});
  expect_error([&] { i32.fill_(-1); i32.masked_fill_(tensor<bool>({true}), 3e9); }, {"masked_fill_", "int32"});
  expect_error([&] { i64.fill_(9.3e18); }, {"fill_", "int64"});
  EXPECT_EQ(i64.fill_(-9.2e18).item<int64_t>(), -9200000000000000000LL);
  expect_error([&] { zeros({1}, DType::Float32).fill_(1e39); }, {"fill_", "float32"});
  expect_error([&] { zeros({1}, DType::Float16).fill_(70000); }, {"fill_", "70000", "float16"});
  EXPECT_TRUE(std::isinf(zeros({1}, DType::Float16).fill_(-inf).to(DType::Float64).item<double>()));
  EXPECT_TRUE(matches(zeros({2}, DType::Bool).fill_(-7), {2}, DType::Bool, {1, 1}));
}

TEST(Fill, ExpandedViewsTakeFillZeroAndMaskedFill) {
  // PyTorch fills an expanded view (one value per memory location however many elements
  // share it) and masked_fill_s it (deprecated, not refused): a shared location takes the
  // value when any of its elements is masked.
  Tensor base = tensor<double>({1, 2, 3});
  Tensor e = base.unsqueeze(0).expand({4, 3});
  e.fill_(7);
  EXPECT_TRUE(matches(base, {3}, DType::Float64, {7, 7, 7}));
  e.zero_();
  EXPECT_TRUE(matches(e, {4, 3}, DType::Float64, std::vector<double>(12, 0.0)));
  Tensor mask = zeros({4, 3}, DType::Bool);
  mask.select(0, 2).select(0, 1).fill_(true);  // only row 2 masks column 1
  e.masked_fill_(mask, 5.0);
  EXPECT_TRUE(matches(base, {3}, DType::Float64, {0, 5, 0}));
  e.masked_fill_(tensor<bool>({true, false, false}), -1.0);  // a broadcast mask
  EXPECT_TRUE(matches(base, {3}, DType::Float64, {-1, 5, 0}));
  // Several expanded dims, a 0-d base, and a view that is partly expanded and strided.
  Tensor one = scalar_tensor(2.0, DType::Float64);
  one.expand({2, 3, 4}).fill_(9);
  EXPECT_EQ(one.item<double>(), 9);
  Tensor grid = zeros({3, 4}, DType::Int32);
  Tensor mixed = grid.slice(1, 0, 4, 2).unsqueeze(1).expand({3, 5, 2});
  Tensor m = zeros({3, 5, 2}, DType::Bool);
  m.select(0, 1).select(0, 4).fill_(true);
  mixed.masked_fill_(m, -4);
  EXPECT_TRUE(matches(grid, {3, 4}, DType::Int32, {0, 0, 0, 0, -4, 0, -4, 0, 0, 0, 0, 0}));
  // Other in-place writes into an expanded view are still refused, as PyTorch's are.
  expect_error([&] { e.add_(1); }, {"several elements share one memory"});
  expect_error([&] { e.copy_(zeros({4, 3}, DType::Float64)); }, {"copy_", "several elements share one memory"});
}

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
