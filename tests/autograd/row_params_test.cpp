// The op tables' instance names and per-device marks (tests/support/row_params.h): an
// expected failure that fails passes, one that passes fails, a skip mark skips, and every
// instance gets a distinct gtest-safe name.
#include "tests/support/row_params.h"

namespace wick::test {
namespace {

struct FakeRow {
  const char* name;
  std::vector<DType> dtypes;
};

// The failures (and skips) `run` reports, caught so that they do not fail this test.
std::vector<testing::TestPartResult> reported_by(const std::function<void()>& run) {
  testing::TestPartResultArray results;
  {
    testing::ScopedFakeTestPartResultReporter catch_them(
        testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    run();
  }
  std::vector<testing::TestPartResult> out;
  for (int i = 0; i < results.size(); ++i) out.push_back(results.GetTestPartResult(i));
  return out;
}

TEST(RowMarks, ExpectedFailureThatFailsPasses) {
  const auto results = reported_by([] { check_as_marked({Expect::Fail, "known"}, [] { ADD_FAILURE() << "wrong"; }); });
  EXPECT_TRUE(results.empty());
}

TEST(RowMarks, ExpectedFailureThatPassesFailsAndSaysSo) {
  const auto results = reported_by([] { check_as_marked({Expect::Fail, "known"}, [] {}); });
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].failed());
  EXPECT_NE(std::string(results[0].message()).find("known) but passed"), std::string::npos);
}

TEST(RowMarks, PassMarkReportsTheChecksFailures) {
  const auto results = reported_by([] { check_as_marked({}, [] { ADD_FAILURE() << "wrong"; }); });
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].failed());
}

TEST(RowMarks, SkipMarkSkipsWithItsReason) {
  bool ran = false;
  const auto results = reported_by([&] { check_as_marked({Expect::Skip, "no kernel yet"}, [&] { ran = true; }); });
  EXPECT_FALSE(ran);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].skipped());
  EXPECT_NE(std::string(results[0].message()).find("no kernel yet"), std::string::npos);
  check_as_marked({}, [&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(RowParams, NamesAreDistinctAndGtestSafe) {
  const std::vector<FakeRow> rows = {{"clamp max_only", {DType::Float32, DType::Int64}}, {"clamp max_only", {DType::Float32}}};
  const std::vector<RowParam> params = row_params(rows);
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].name, "clamp_max_only_float32");
  EXPECT_EQ(params[1].name, "clamp_max_only_int64");
  EXPECT_EQ(params[2].name, "clamp_max_only_float32_2");
  EXPECT_EQ(params[2].row, 1u);
  EXPECT_NE(params[0].seed, params[2].seed);
  const auto floats = row_params(rows, [](const FakeRow&, DType t) { return is_floating(t); });
  EXPECT_EQ(floats.size(), 2u);
}

}  // namespace
}  // namespace wick::test
