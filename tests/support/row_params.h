#pragma once
// The op tables' rows as gtest instances (issue 24, item 4): each (row, dtype) is a
// parameterised test of its own, named like Rows/UnaryTable.Reference/expm1_float16,
// so that ctest runs the rows in parallel (in shards, or each as a test of its own:
// tests/CMakeLists.txt) and a failure names its row. And the per-device column: a row may be skipped on
// a device, or expected to fail there (its checks run; their failures are the expected
// outcome, and a row that passes fails, so that a stale mark is noticed and removed).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {

struct RowParam {
  size_t row = 0;  // index into the table
  DType dtype = DType::Float32;
  uint64_t seed = 0;  // the instance's first seed; instances are kSeedsPerRow apart
  std::string name;
};
// What gtest prints for a failing instance's parameter.
inline void PrintTo(const RowParam& p, std::ostream* os) { *os << p.name; }

// A gtest name part: letters and digits kept, anything else '_' ("clamp max_only" -> clamp_max_only).
inline std::string name_part(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// Repeated names (two rows of one op with the same label) get _2, _3 ... in order.
inline void make_names_unique(std::vector<RowParam>& params) {
  std::map<std::string, int> seen;
  for (RowParam& p : params)
    if (int n = ++seen[p.name]; n > 1) p.name += "_" + std::to_string(n);
}

// Seeds an instance may draw from (seed, seed + 1, ...) without meeting the next one's: the
// reduction table's CUDA check draws one per dim subset and layout of two shapes (up to 96).
inline constexpr uint64_t kSeedsPerRow = 1024;

inline std::string row_param_name(const testing::TestParamInfo<RowParam>& info) { return info.param.name; }

// One instance per (row, dtype of the row) that `keep` accepts (all by default).
template <class Rows, class Keep = bool (*)(const typename Rows::value_type&, DType)>
std::vector<RowParam> row_params(const Rows& rows,
                                 Keep keep = [](const typename Rows::value_type&, DType) { return true; }) {
  std::vector<RowParam> params;
  for (size_t i = 0; i < rows.size(); ++i)
    for (DType t : rows[i].dtypes)
      if (keep(rows[i], t)) params.push_back({i, t, 0, name_part(rows[i].name) + "_" + dtype_name(t)});
  for (size_t i = 0; i < params.size(); ++i) params[i].seed = 1 + kSeedsPerRow * i;
  make_names_unique(params);
  return params;
}

// The per-device column of a row.
enum class Expect { Pass, Skip, Fail };
struct Mark {
  Expect expect = Expect::Pass;
  const char* why = "";
};
struct DeviceMarks {
  Mark cpu, cuda;
};

// Runs a row's checks under its mark for a device: as they are (Pass); not at all, with the
// test reported skipped and the mark's reason (Skip); or with their failures caught, the
// expected outcome, and a failure of its own when none came (Fail).
inline void check_as_marked(const Mark& mark, const std::function<void()>& checks) {
  if (mark.expect == Expect::Skip) GTEST_SKIP() << "marked: " << mark.why;
  if (mark.expect == Expect::Pass) return checks();
  testing::TestPartResultArray failures;
  {
    testing::ScopedFakeTestPartResultReporter catch_them(
        testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    checks();
  }
  int failed = 0;
  for (int i = 0; i < failures.size(); ++i) failed += failures.GetTestPartResult(i).failed();
  if (failed == 0) ADD_FAILURE() << "marked to fail on this device (" << mark.why << ") but passed: remove the mark";
}

}  // namespace wick::test
