// Gradient checks of the view, join and conversion ops.
#include "tests/autograd/cases.h"

WICK_GRADCHECK_CASES(views) {
  using namespace wick;
  return {
      {"view", [](auto& v) { return view(v[0], {3, -1}); }, {{2, 3}}},
      {"flatten", [](auto& v) { return flatten(v[0], 1); }, {{2, 3, 2}}},
      {"permute", [](auto& v) { return permute(v[0], {2, 0, 1}); }, {{2, 3, 4}}},
      {"squeeze all", [](auto& v) { return squeeze(v[0]); }, {{1, 3, 1}}},
      {"squeeze dim", [](auto& v) { return squeeze(v[0], -1); }, {{2, 1}}},
      {"unsqueeze", [](auto& v) { return unsqueeze(v[0], 1); }, {{2, 3}}},
      {"broadcast_to", [](auto& v) { return broadcast_to(v[0], {2, 3, 4}); }, {{3, 1}}},
      {"slice step", [](auto& v) { return slice(v[0], 1, 1, 6, 2); }, {{2, 6}}},
      {"slice negative start", [](auto& v) { return slice(v[0], 0, -2, 100); }, {{4, 2}}},
      {"narrow", [](auto& v) { return narrow(v[0], 1, 1, 2); }, {{2, 4}}},
      {"select negative", [](auto& v) { return select(v[0], 0, -1); }, {{3, 2}}},
      {"slice_scatter", [](auto& v) { return slice_scatter(v[0], v[1], 1, 0, 4, 2); }, {{2, 4}, {2, 2}}},
      {"chunk", [](auto& v) {
         auto p = chunk(v[0], 3, 1);  // sizes 2, 2, 1
         return cat({mul(p[2], 3.0), p[0], p[1]}, 1);
       }, {{2, 5}}},
      {"split sizes", [](auto& v) {
         auto p = split(v[0], std::vector<int64_t>{1, 3}, 0);
         return add(mul(p[0], 2.0), sum(p[1], {0}, true));
       }, {{4, 2}}},
      {"split size", [](auto& v) { return split(v[0], 2, 0)[1]; }, {{3, 2}}},
      {"cat", [](auto& v) { return cat({v[0], v[1], v[2]}, 0); }, {{1, 3}, {2, 3}, {1, 3}}},
      {"cat last dim", [](auto& v) { return cat({v[0], v[1]}, -1); }, {{2, 1}, {2, 3}}},
      {"stack", [](auto& v) { return stack({v[0], v[1]}, 1); }, {{2, 3}, {2, 3}}},
      {"contiguous", [](auto& v) { return contiguous(transpose(v[0], 0, 1)); }, {{2, 3}}},
      {"clone", [](auto& v) { return clone(v[0]); }, {{3}}},
      // Values near zero keep the float32 round trip exact enough for finite differences.
      {"to float32 and back", [](auto& v) { return to(to(v[0], DType::Float32), DType::Float64); }, {{4}}, -1e-3,
       1e-3},
  };
}

namespace wick::test {
namespace {

TEST(ViewsGrad, ConversionsToTheSameTypeAreIdentity) {
  Variable x(random({3}, DType::Float64, 1), true);
  EXPECT_TRUE(to(x, DType::Float64).is_same(x));
  EXPECT_TRUE(to(x, Device::cpu()).is_same(x));
  EXPECT_TRUE(contiguous(x).is_same(x));
  EXPECT_FALSE(clone(x).is_same(x));
}

TEST(ViewsGrad, ToGivesTheGradientInTheInputsDtype) {
  Variable x(random({3}, DType::Float64, 2), true);
  sum(mul(to(x, DType::Float32), 2.0)).backward();
  EXPECT_TRUE(matches(x.grad().data(), {3}, DType::Float64, {2, 2, 2}));
}

TEST(ViewsGrad, CatStackSplitErrors) {
  Variable a(random({2, 3}, DType::Float64, 3), true);
  expect_error([&] { split(a, std::vector<int64_t>{1, 3}, 1); }, {"split", "[1, 3]", "3"});
  expect_error([&] { stack({a, Variable(random({3, 2}, DType::Float64, 4))}); }, {"stack", "[2, 3]", "[3, 2]"});
  expect_error([&] { slice_scatter(a, Variable(random({2, 3}, DType::Float64, 5)), 1, 0, 2); },
               {"slice_scatter", "[2, 3]", "[2, 2]"});
}

}  // namespace
}  // namespace wick::test
