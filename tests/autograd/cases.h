#pragma once
// The gradcheck case table, shared by every family's test file: each file registers its
// cases with WICK_GRADCHECK_CASES, gradcheck_test.cpp runs them all by finite differences,
// and its coverage test fails for any backward node in autograd/ that no case reaches. The
// table is per test binary: tests/nn registers the cases of nn/ (losses, norms) and runs
// them with expect_gradcheck_cases_pass in gradcheck_nn_test.cpp.
#include <functional>
#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {

struct GradCase {
  std::string name;
  std::function<Variable(const std::vector<Variable>&)> f;
  std::vector<Shape> shapes;  // float64 inputs drawn uniformly from [lo, hi)
  double lo = -2, hi = 2;
};

inline std::vector<std::vector<GradCase> (*)()>& gradcheck_families() {
  static std::vector<std::vector<GradCase> (*)()> families;
  return families;
}

struct GradcheckFamily {
  explicit GradcheckFamily(std::vector<GradCase> (*f)()) { gradcheck_families().push_back(f); }
};

// Every registered case, in registration order.
inline std::vector<GradCase> all_gradcheck_cases() {
  std::vector<GradCase> all;
  for (auto f : gradcheck_families())
    for (GradCase& c : f()) all.push_back(std::move(c));
  return all;
}

// Runs every registered case by finite differences, drawing the inputs with consecutive
// seeds from `seed`.
inline void expect_gradcheck_cases_pass(uint64_t seed = 1) {
  for (const GradCase& c : all_gradcheck_cases()) {
    std::vector<Tensor> inputs;
    for (const Shape& s : c.shapes) inputs.push_back(random(s, DType::Float64, seed++, c.lo, c.hi));
    GradcheckResult r = gradcheck(c.f, inputs);
    EXPECT_TRUE(r.ok) << c.name << ": " << r.message;
  }
}

}  // namespace wick::test

// In a test file: WICK_GRADCHECK_CASES(conv) { return {{"conv2d", [](auto& v) {...}, {{1, 2, 5, 5}, {3, 2, 3, 3}}}}; }
#define WICK_GRADCHECK_CASES(family)                                                        \
  static std::vector<::wick::test::GradCase> family##_gradcheck_cases();                     \
  static const ::wick::test::GradcheckFamily family##_gradcheck_family(&family##_gradcheck_cases); \
  static std::vector<::wick::test::GradCase> family##_gradcheck_cases()
