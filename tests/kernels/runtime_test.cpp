// The CUDA runtime as seen from a machine with or without a GPU.
#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(CudaRuntime, DeviceCountNeverThrows) {
  int n = -1;
  EXPECT_NO_THROW(n = cuda::device_count());
  EXPECT_GE(n, 0);
  EXPECT_EQ(cuda::is_available(), n > 0);
}

TEST(CudaRuntime, NoDeviceGivesAClearError) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  expect_error([] { zeros({2}, Device::cuda()); }, {"cuda:0"});
}

}  // namespace
}  // namespace wick::test
