#pragma once
// What the declared op tables share (the unary table, tests/autograd/unary_table_test.cpp,
// and the binary table, tests/autograd/binary_table.h): reference values as the result's
// dtype stores them, and the check that every kernel op of an X-macro list has a row.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tests/support/dtype_sets.h"
#include "tests/support/reference.h"

namespace wick::test {

// float64 reference values as a result of dtype t holds them: integers wrap around
// (wrap_to), floats are rounded to t, so that a value beyond float16's range is inf on both
// sides of the comparison.
inline std::vector<double> as_stored(std::vector<double> v, DType t) {
  if (!is_floating(t)) {
    for (double& x : v) x = wrap_to(x, t);
    return v;
  }
  if (t == DType::Float64 || v.empty()) return v;
  return values(tensor<double>(v).to(t));
}

// Fails for each of the `count` kernel ops (named by name_of) that no row names, except
// those `exempt` says are checked through other ops.
template <class Op, class Rows>
void expect_every_op_has_a_row(const char* table, int count, const char* (*name_of)(Op), const Rows& rows,
                               const std::function<bool(const std::string&)>& exempt = nullptr) {
  std::set<std::string> names;
  for (const auto& r : rows) names.insert(r.name);
  for (int i = 0; i < count; ++i) {
    const std::string name = name_of(static_cast<Op>(i));
    if (exempt && exempt(name)) continue;
    EXPECT_TRUE(names.count(name)) << "kernel op " << name << " has no row in the " << table << " table";
  }
}

}  // namespace wick::test
