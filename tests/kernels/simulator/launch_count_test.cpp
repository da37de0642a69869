// How many kernels an op launches, counted by the CUDA simulator (cudasimKernelLaunches): a
// speed property that needs no GPU. Built only with -DWICK_CUDA=SIM.
#include <cudasim/cudasim.h>

#include <functional>
#include <string>
#include <vector>

#include <wick/tensor/cuda.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

// Kernel launches made by f().
unsigned long long launches(const std::function<Tensor()>& f) {
  const unsigned long long before = cudasimKernelLaunches();
  const Tensor r = f();
  cuda::synchronize();
  return cudasimKernelLaunches() - before;
}

TEST(CudaLaunches, ReductionsSoftmaxAndElementwiseOpsAreOneLaunch) {
  WICK_REQUIRE_CUDA();
  const Tensor big = random({(int64_t{1} << 18) + 5}, DType::Float32, 3).to(Device::cuda());
  const Tensor rows = random({4, 70001}, DType::BFloat16, 4).to(Device::cuda());
  const Tensor many = random({5000, 64}, DType::Float32, 5).to(Device::cuda());
  const std::vector<std::pair<std::string, std::function<Tensor()>>> ops = {
      {"full sum", [&] { return sum(big); }},
      {"full mean", [&] { return mean(big); }},
      {"full max", [&] { return max(big); }},
      {"full norm", [&] { return norm(big, 2.0); }},
      {"argmax", [&] { return argmax(big); }},
      {"sum of 4 long rows", [&] { return sum(rows, {1}); }},
      {"sum of 5000 short rows", [&] { return sum(many, {1}); }},
      {"sum over 5000 rows (columns, split)", [&] { return sum(many, {0}); }},
      {"bias gradient of 4 rows", [&] { return sum(rows.narrow(1, 0, 64), {0}); }},
      {"softmax of long rows", [&] { return softmax(rows, 1); }},
      {"softmax of short rows", [&] { return softmax(many, 1); }},
      {"add", [&] { return add(many, many); }},
  };
  for (const auto& [name, f] : ops) EXPECT_EQ(launches(f), 1u) << name;
}

}  // namespace
}  // namespace wick::test
