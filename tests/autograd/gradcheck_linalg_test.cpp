// Gradient checks of the matrix products beyond matmul.
#include "tests/autograd/cases.h"

WICK_GRADCHECK_CASES(linalg) {
  using namespace wick;
  return {
      {"mm", [](auto& v) { return mm(v[0], v[1]); }, {{3, 4}, {4, 2}}},
      {"bmm", [](auto& v) { return bmm(v[0], v[1]); }, {{2, 3, 4}, {2, 4, 2}}},
      {"addmm input broadcast", [](auto& v) { return addmm(v[0], v[1], v[2], 0.5, 2.0); }, {{2}, {3, 4}, {4, 2}}},
      {"addmm full input", [](auto& v) { return addmm(v[0], v[1], v[2]); }, {{3, 2}, {3, 4}, {4, 2}}},
      {"outer", [](auto& v) { return outer(v[0], v[1]); }, {{3}, {4}}},
      {"dot", [](auto& v) { return dot(v[0], v[1]); }, {{5}, {5}}},
  };
}

namespace wick::test {
namespace {

TEST(LinalgGrad, ShapeErrorsNameTheOp) {
  Variable a(random({3}, DType::Float64, 1), true), b(random({4}, DType::Float64, 2), true);
  expect_error([&] { dot(a, b); }, {"dot", "[3]", "[4]"});
  expect_error([&] { outer(a, Variable(random({2, 2}, DType::Float64, 3))); }, {"outer", "[2, 2]"});
}

}  // namespace
}  // namespace wick::test
