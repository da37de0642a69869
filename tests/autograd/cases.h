#pragma once
// The gradcheck case table, shared by every family's test file: each file registers its
// cases with WICK_GRADCHECK_CASES, gradcheck_test.cpp runs each by finite differences as a
// gtest instance of its own (WICK_GRADCHECK_ROWS: Rows/GradcheckCase.FirstAndSecondOrder/conv2d),
// and its coverage test fails for any backward node in autograd/ that no case reaches. The
// table is per test binary: tests/nn registers the cases of nn/ (losses, norms) and runs
// them in gradcheck_nn_test.cpp.
#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tests/support/readme_check.h"
#include "tests/support/reference.h"
#include "tests/support/row_params.h"

namespace wick::test {

using GradFn = std::function<Variable(const std::vector<Variable>&)>;

struct GradCase {
  std::string name;
  GradFn f;
  std::vector<Shape> shapes;  // float64 inputs drawn uniformly from [lo, hi)
  double lo = -2, hi = 2;
};

// The nodes that compute their gradients with fused kernels and therefore refuse
// create_graph (a second derivative through them would silently be wrong). Every case's
// second derivatives are checked by finite differences of its gradient, except that a
// case may stop at one of these nodes with its "double backward (create_graph) is not
// supported" error. (Pooling's gradients are linear in x, so its kernels may serve
// create_graph: their second derivative is checked.)
inline const std::vector<std::string> kRefusesDoubleBackward = {"ConvolutionBackward",
                                                                "ConvTransposeBackward",
                                                                "CrossEntropyBackward",
                                                                "BatchNormBackward",
                                                                "LayerNormBackward",
                                                                "GroupNormBackward",
                                                                "ScaledDotProductAttentionBackward",
                                                                "CheckpointBackward"};

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

// x -> the gradient of <w, f(x)> for a fixed random w, every input's flattened and joined,
// built with create_graph: its own gradient is f's second derivative. A gradient that does
// not depend on x (a linear op) is tied to x with a zero coefficient, so that finite
// differences still check that it is constant (a backward computed with tensor kernels
// would silently be constant where it should not be).
inline GradFn first_gradient(GradFn f) {
  return [f](const std::vector<Variable>& v) {
    GradModeGuard on(true);  // gradcheck's numeric pass runs without grad
    Variable out = f(v);
    Variable w(random(out.shape(), DType::Float64, 77));
    std::vector<Variable> g = grad({out}, v, {w}, /*retain_graph=*/true, /*create_graph=*/true);
    for (Variable& gi : g) gi = reshape(gi, {-1});
    Variable joined = cat(g, 0);
    for (const Variable& x : v) joined = add(joined, mul(sum(x), 0.0));
    return joined;
  };
}

inline std::vector<Tensor> case_inputs(const GradCase& c, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (const Shape& s : c.shapes) inputs.push_back(random(s, DType::Float64, seed++, c.lo, c.hi));
  return inputs;
}

// The node named by a "double backward (create_graph) is not supported" error, or "".
inline std::string refusing_node(const std::string& message) {
  const size_t at = message.find(": double backward (create_graph) is not supported");
  if (at == std::string::npos) return "";
  const size_t start = message.rfind(' ', at);
  const size_t from = start == std::string::npos ? 0 : start + 1;
  return message.substr(from, at - from);
}

// One case: gradcheck, then the second derivatives, or a refusal by a node of
// kRefusesDoubleBackward.
inline void expect_case_passes(const GradCase& c, uint64_t seed) {
  const std::vector<Tensor> inputs = case_inputs(c, seed);
  GradcheckResult r = gradcheck(c.f, inputs);
  EXPECT_TRUE(r.ok) << c.name << ": " << r.message;
  try {
    GradcheckResult r2 = gradcheck(first_gradient(c.f), inputs);
    EXPECT_TRUE(r2.ok) << c.name << " (second derivatives): " << r2.message;
  } catch (const Error& e) {
    const std::string node = refusing_node(e.what());
    EXPECT_TRUE(std::find(kRefusesDoubleBackward.begin(), kRefusesDoubleBackward.end(), node) !=
                kRefusesDoubleBackward.end())
        << c.name << " (second derivatives): " << e.what();
  }
}

// Every registered case, built once (after the static registrations: the gtest instances
// are listed when main starts).
inline const std::vector<GradCase>& gradcheck_table() {
  static const std::vector<GradCase> cases = all_gradcheck_cases();
  return cases;
}

// One instance per case, named after it; the inputs drawn with consecutive seeds in table
// order, as a single loop over the cases would.
inline std::vector<RowParam> gradcheck_case_params() {
  std::vector<RowParam> params;
  uint64_t seed = 1;
  for (size_t i = 0; i < gradcheck_table().size(); ++i) {
    const GradCase& c = gradcheck_table()[i];
    params.push_back({i, DType::Float64, seed, name_part(c.name)});
    seed += c.shapes.size();
  }
  make_names_unique(params);
  return params;
}

// The op a case checks: its name up to the first space ("prod dim keepdim" checks prod).
inline std::string case_op(const GradCase& c) { return c.name.substr(0, c.name.find(' ')); }

// Every op of this binary's gradient table is named in README.md.
inline void expect_readme_names_every_case() {
  std::set<std::string> ops;
  for (const GradCase& c : all_gradcheck_cases()) ops.insert(case_op(c));
  expect_readme_names(ops, "gradient case table");
}

}  // namespace wick::test

// Once per test binary: each registered case, first and second order, as a test.
#define WICK_GRADCHECK_ROWS()                                                                             \
  class GradcheckCase : public testing::TestWithParam<::wick::test::RowParam> {};                         \
  TEST_P(GradcheckCase, FirstAndSecondOrder) {                                                            \
    ::wick::test::expect_case_passes(::wick::test::gradcheck_table()[GetParam().row], GetParam().seed);   \
  }                                                                                                       \
  INSTANTIATE_TEST_SUITE_P(Rows, GradcheckCase, testing::ValuesIn(::wick::test::gradcheck_case_params()), \
                           ::wick::test::row_param_name)

// In a test file: WICK_GRADCHECK_CASES(conv) { return {{"conv2d", [](auto& v) {...}, {{1, 2, 5, 5}, {3, 2, 3, 3}}}}; }
#define WICK_GRADCHECK_CASES(family)                                                               \
  static std::vector<::wick::test::GradCase> family##_gradcheck_cases();                           \
  static const ::wick::test::GradcheckFamily family##_gradcheck_family(&family##_gradcheck_cases); \
  static std::vector<::wick::test::GradCase> family##_gradcheck_cases()
