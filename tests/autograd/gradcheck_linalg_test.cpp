// Gradient checks of the matrix products beyond matmul.
#include "tests/autograd/cases.h"

#include <wick/autograd/node.h>

WICK_GRADCHECK_CASES(linalg) {
  using namespace wick;
  return {
      {"mm", [](auto& v) { return mm(v[0], v[1]); }, {{3, 4}, {4, 2}}},
      {"bmm", [](auto& v) { return bmm(v[0], v[1]); }, {{2, 3, 4}, {2, 4, 2}}},
      {"addmm input broadcast", [](auto& v) { return addmm(v[0], v[1], v[2], 0.5, 2.0); }, {{2}, {3, 4}, {4, 2}}},
      {"addmm full input", [](auto& v) { return addmm(v[0], v[1], v[2]); }, {{3, 2}, {3, 4}, {4, 2}}},
      {"outer", [](auto& v) { return outer(v[0], v[1]); }, {{3}, {4}}},
      {"dot", [](auto& v) { return dot(v[0], v[1]); }, {{5}, {5}}},
      {"linear", [](auto& v) { return linear(v[0], v[1], v[2]); }, {{2, 3, 4}, {5, 4}, {5}}},
      {"linear no bias, 1-d input", [](auto& v) { return linear(v[0], v[1]); }, {{4}, {5, 4}}},
      {"linear 1-d input", [](auto& v) { return linear(v[0], v[1], v[2]); }, {{4}, {5, 4}, {5}}},
      {"linear transposed input",
       [](auto& v) { return linear(transpose(v[0], 0, 1), v[1], v[2]); },
       {{4, 3}, {5, 4}, {5}}},
      {"linear broadcast bias", [](auto& v) { return linear(v[0], v[1], v[2]); }, {{2, 3, 4}, {5, 4}, {1}}},
  };
}

namespace wick::test {
namespace {

TEST(LinalgGrad, ShapeErrorsNameTheOp) {
  Variable a(random({3}, DType::Float64, 1), true), b(random({4}, DType::Float64, 2), true);
  expect_error([&] { dot(a, b); }, {"dot", "[3]", "[4]"});
  expect_error([&] { outer(a, Variable(random({2, 2}, DType::Float64, 3))); }, {"outer", "[2, 2]"});
  Variable x(random({2, 3}, DType::Float64, 4)), w(random({5, 4}, DType::Float64, 5));
  expect_error([&] { linear(x, w); }, {"linear", "[2, 3]", "[5, 4]"});
}

// linear with a bias is one product added into the bias (LinearBackward): the same values as
// the product plus the bias, and with no rows an empty output whose gradients are zeros.
TEST(LinalgGrad, LinearWithBiasIsTheProductPlusTheBias) {
  Variable x(random({2, 3, 4}, DType::Float64, 1), true), w(random({5, 4}, DType::Float64, 2), true),
      b(random({5}, DType::Float64, 3), true);
  Variable y = linear(x, w, b);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(std::string(y.grad_fn()->name()), "LinearBackward");
  EXPECT_LE(max(sub(y.data(), add(matmul(x.data(), w.data().t()), b.data())).abs()).item<double>(), 1e-14);
  Variable none(zeros({0, 4}, Options(DType::Float64)), true);
  Variable e = linear(none, w, b);
  EXPECT_EQ(e.shape(), (Shape{0, 5}));
  sum(e).backward();
  EXPECT_EQ(none.grad().shape(), (Shape{0, 4}));
  EXPECT_EQ(b.grad().data().abs().sum().item<double>(), 0.0);
  EXPECT_EQ(w.grad().data().abs().sum().item<double>(), 0.0);
}

// dot and the 1-d matmul validate as the tensor path does, with or without requires_grad
// (issue 13, item 8): [1] . [2] is refused, mixed dtypes are refused.
TEST(LinalgGrad, DotChecksDoNotDependOnRequiresGrad) {
  for (bool requires_grad : {false, true}) {
    Variable one(tensor<double>({1}), requires_grad), two(tensor<double>({1, 2}), requires_grad);
    expect_error([&] { dot(one, two); }, {"dot", "[1]", "[2]"});
    expect_error([&] { matmul(one, two); }, {"[1]", "[2]"});
    Variable half(tensor<double>({1, 2}).to(DType::Float16), requires_grad);
    expect_error([&] { dot(two, half); }, {"dot"});
  }
  // matmul's 1-d promotion is written once (wick/tensor/matmul_promotion.h): the Variable
  // and the Tensor refuse with the same words.
  for (auto [x, y] :
       {std::pair{Shape{3}, Shape{4}}, {Shape{3}, Shape{2, 4}}, {Shape{2, 3}, Shape{4}}, {Shape{}, Shape{3}}}) {
    std::string tensor_message, variable_message;
    try {
      matmul(zeros(x), zeros(y));
    } catch (const Error& e) {
      tensor_message = e.what();
    }
    try {
      matmul(Variable(zeros(x), true), Variable(zeros(y)));
    } catch (const Error& e) {
      variable_message = e.what();
    }
    EXPECT_FALSE(tensor_message.empty()) << shape_str(x) << " @ " << shape_str(y);
    EXPECT_EQ(variable_message, tensor_message);
  }
  Variable a(tensor<double>({1, 2, 3}), true), b(tensor<double>({4, 5, 6}), true);
  Variable d = matmul(a, b);
  EXPECT_EQ(d.data().item<double>(), 32.0);
  d.backward();
  EXPECT_EQ(a.grad().data().to_vector<double>(), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(b.grad().data().to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

// bmm accepts operands of different dtypes where the product is empty or has nothing to
// contract (PyTorch compares them only in the kernel it then skips), and so must its
// backward: each gradient is zeros (or empty) of its operand's shape and dtype.
TEST(LinalgGrad, BmmBackwardWithAnEmptyOperandAcceptsMixedDtypes) {
  struct Case {
    Shape a, b;
  };
  for (Device device : cpu_and_cuda())
    for (const Case& c : {Case{{2, 0, 4}, {2, 4, 5}}, Case{{2, 3, 4}, {2, 4, 0}}, Case{{2, 3, 0}, {2, 0, 5}},
                          Case{{0, 3, 4}, {0, 4, 5}}})
      for (bool a_wide : {false, true}) {
        SCOPED_TRACE(device.str() + " " + shape_str(c.a) + " " + shape_str(c.b) + (a_wide ? " a float64" : ""));
        const DType ta = a_wide ? DType::Float64 : DType::Float32, tb = a_wide ? DType::Float32 : DType::Float64;
        Variable a(random(c.a, ta, 1).to(device), true), b(random(c.b, tb, 2).to(device), true);
        Variable y = bmm(a, b);
        EXPECT_EQ(y.dtype(), tb);
        sum(mul(y, 2.0)).backward();
        ASSERT_TRUE(a.grad().defined() && b.grad().defined());
        EXPECT_TRUE(matches(a.grad().data().to(Device::cpu()), c.a, ta,
                            std::vector<double>(static_cast<size_t>(numel_of(c.a)), 0.0), 0, 0));
        EXPECT_TRUE(matches(b.grad().data().to(Device::cpu()), c.b, tb,
                            std::vector<double>(static_cast<size_t>(numel_of(c.b)), 0.0), 0, 0));
      }
}

}  // namespace
}  // namespace wick::test
