// The CUDA simulator's own part of a launch's host cost (its launch record, argument copies
// and stream queue), which a driver's launch does not pay: subtracted from the CUDA counts
// of host_cost_test.cpp, it leaves wick's. Built only with -DWICK_CUDA=SIM.
#include <gtest/gtest.h>

#include <wick/tensor/cuda.h>

#include "kernels/cuda/launch.cuh"
#include "tests/host_cost/host_cost.h"

namespace wick::test {
namespace {

__global__ void empty_kernel(float*) {}

TEST(HostCost, TheSimulatorsOwnLaunch) {
  float* p = nullptr;
  const Cost c = cost_of([&] { cuda_kernels::launch_kernel("empty_kernel", &empty_kernel, 1, 32, 0, nullptr, p); });
  cuda::synchronize();
  report("simulator: a launch alone", c);
  EXPECT_GT(c.allocs, 0);  // it is not free: the counts above include it
}

}  // namespace
}  // namespace wick::test
