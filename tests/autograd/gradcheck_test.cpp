// Every differentiable op checked by finite differences in float64, and a check that no
// backward node in autograd/ escapes this table.
#include "tests/autograd/cases.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace wick::test {
namespace {

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(core) {
  using wick::Variable;
  return {
      {"add broadcast", [](auto& v) { return add(v[0], v[1]); }, {{3, 1}, {4}}},
      {"sub broadcast", [](auto& v) { return sub(v[0], v[1]); }, {{2, 3}, {1, 3}}},
      {"mul broadcast", [](auto& v) { return mul(v[0], v[1]); }, {{2, 3}, {3}}},
      {"div", [](auto& v) { return div(v[0], v[1]); }, {{2, 3}, {2, 3}}, 0.5, 2},
      {"add scalar", [](auto& v) { return add(v[0], 2.5); }, {{4}}},
      {"mul scalar", [](auto& v) { return mul(v[0], -1.5); }, {{2, 2}}},
      {"pow", [](auto& v) { return pow(v[0], 3.0); }, {{5}}},
      {"sum all", [](auto& v) { return sum(v[0]); }, {{2, 3}}},
      {"sum dims keepdim", [](auto& v) { return sum(v[0], {0, 2}, true); }, {{2, 3, 4}}},
      {"sum dim", [](auto& v) { return sum(v[0], {-1}); }, {{2, 3}}},
      {"mean", [](auto& v) { return mean(v[0], {1}); }, {{3, 4}}},
      {"reshape", [](auto& v) { return reshape(v[0], {3, 2}); }, {{2, 3}}},
      {"transpose", [](auto& v) { return transpose(v[0], 0, 1); }, {{2, 3}}},
      {"expand", [](auto& v) { return expand(v[0], {2, 3, 4}); }, {{3, 1}}},
      {"matmul 2d", [](auto& v) { return matmul(v[0], v[1]); }, {{3, 4}, {4, 2}}},
      {"matmul batched broadcast", [](auto& v) { return matmul(v[0], v[1]); }, {{2, 3, 4}, {4, 5}}},
      {"matmul vec-mat", [](auto& v) { return matmul(v[0], v[1]); }, {{4}, {4, 3}}},
      {"matmul mat-vec", [](auto& v) { return matmul(v[0], v[1]); }, {{3, 4}, {4}}},
      {"matmul dot", [](auto& v) { return matmul(v[0], v[1]); }, {{5}, {5}}},
  };
}

namespace wick::test {
namespace {

// The names of every node in the graph that produced v.
void collect_nodes(const Variable& v, std::set<std::string>& names) {
  std::vector<Node*> stack;
  std::set<Node*> seen;
  if (v.grad_fn()) stack.push_back(v.grad_fn().get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    names.insert(n->name());
    for (const Edge& e : n->next_edges())
      if (e.fn) stack.push_back(e.fn.get());
  }
}

WICK_GRADCHECK_ROWS();

TEST(Gradcheck, ReadmeNamesEveryOp) { expect_readme_names_every_case(); }

TEST(Gradcheck, CatchesAWrongGradient) {
  // A function whose backward is wrong on purpose (the gradient of x is dropped by detach)
  // must be reported: the checker itself can fail.
  GradcheckResult r = gradcheck([](auto& v) { return add(mul(v[0], v[0]), v[0].detach()); },
                                {random({3}, DType::Float64, 5)});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("finite differences"), std::string::npos);
}

// Every node class declared in autograd/ must appear in some case's graph above, and in a
// case whose second derivatives are checked, unless the node itself refuses create_graph.
TEST(Gradcheck, EveryBackwardNodeIsChecked) {
  std::set<std::string> covered, second_order;
  uint64_t seed = 100;
  for (const GradCase& c : all_gradcheck_cases()) {
    std::vector<Variable> vars;
    for (const Tensor& t : case_inputs(c, seed)) vars.emplace_back(t, true);
    std::set<std::string> nodes;
    collect_nodes(c.f(vars), nodes);
    covered.insert(nodes.begin(), nodes.end());
    try {
      first_gradient(c.f)(vars);
      second_order.insert(nodes.begin(), nodes.end());  // Rows/GradcheckCase.FirstAndSecondOrder checks them
    } catch (const Error& e) {
      EXPECT_NE(refusing_node(e.what()), "") << c.name << ": " << e.what();
    }
    seed += c.shapes.size();
  }
  covered.insert("AccumulateGrad");
  second_order.insert("AccumulateGrad");
  second_order.insert(kRefusesDoubleBackward.begin(), kRefusesDoubleBackward.end());
  std::set<std::string> declared;
  // Node names are string literals ending in "Backward" (returned by name(), or passed to a
  // node shared by several ops); no other literal in autograd/ looks like that.
  std::regex name_re("\"([A-Z][A-Za-z0-9]*Backward)\"");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::string(WICK_SOURCE_DIR) + "/wick/autograd")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name_re); it != std::sregex_iterator(); ++it)
      declared.insert((*it)[1].str());
  }
  EXPECT_GE(declared.size(), 10u) << "the source scan found too few nodes; is WICK_SOURCE_DIR right?";
  for (const std::string& n : kRefusesDoubleBackward) EXPECT_TRUE(declared.count(n)) << n << " is not a node";
  for (const std::string& n : declared) {
    EXPECT_TRUE(covered.count(n)) << n << " has no gradient check";
    EXPECT_TRUE(second_order.count(n)) << n << " has neither a second-derivative check nor a refusal of create_graph";
  }
}

}  // namespace
}  // namespace wick::test
