// Shape arithmetic on sizes that come from files: products that overflow int64 throw
// instead of wrapping (undefined behaviour, and a small plausible size once wrapped).
#include <gtest/gtest.h>

#include <wick/wick.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(Shape, ContiguousStridesCountZeroSizesAsOne) {
  EXPECT_EQ(contiguous_strides({2, 0, 3}), (Shape{3, 3, 1}));
  EXPECT_EQ(contiguous_strides({}), Shape{});
  EXPECT_EQ(numel_of({2, 0, 3}), 0);
  EXPECT_EQ(numel_of({}), 1);
  // The largest shapes whose strides still fit.
  EXPECT_EQ(contiguous_strides({int64_t{1} << 62, 2}), (Shape{2, 1}));
  EXPECT_EQ(contiguous_strides({3, int64_t{1} << 61, 2}), (Shape{int64_t{1} << 62, 2, 1}));
}

// A zero size first made numel 0 and hid the overflow of the strides of the huge sizes
// after it (signed overflow: UBSan reports it; without UBSan the strides wrapped).
TEST(Shape, StridesThatOverflowInt64Throw) {
  const int64_t big = int64_t{1} << 40;
  expect_error([&] { contiguous_strides({0, big, big}); }, {"contiguous_strides", "[0, 1099511627776, 1099511627776]",
                                                            "overflow int64"});
  expect_error([&] { contiguous_strides({2, int64_t{1} << 62, 2}); }, {"contiguous_strides", "overflow int64"});
  expect_error([&] { empty({0, big, big}, DType::UInt8); }, {"overflow int64"});
}

TEST(Shape, NumelThatOverflowsInt64Throws) {
  expect_error([] { numel_of({int64_t{1} << 32, int64_t{1} << 32}); }, {"numel", "more elements than int64"});
  expect_error([] { numel_of({-(int64_t{1} << 62), 4}); }, {"numel"});
}

}  // namespace
}  // namespace wick::test
