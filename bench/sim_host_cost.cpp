// The host cost of small CUDA ops, measured on the CUDA simulator with kernel execution
// turned off (cudasimSetKernelExecution(0)): what remains is wick's own work per call
// (argument checks, dispatch, output allocation from the caching allocator, layout, launch)
// plus the simulator's launch bookkeeping, which a driver's launch replaces. Built only with
// -DWICK_CUDA=SIM; a plain timing program, since Google Benchmark's loop would time itself.
//
//   wick_sim_host_cost [--calls N] [--repeat R]
//
// Prints the median over R rounds of N calls of each op, in ns per call, and the same for a
// launch of an empty kernel straight through the simulator (the part a GPU run would not pay).
#include <cudasim/cudasim.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <wick/wick.h>

#include "kernels/cuda/launch.cuh"

namespace {

__global__ void empty_kernel(float*) {}

double median_ns(int calls, int repeat, const std::function<void()>& f) {
  for (int i = 0; i < calls / 10 + 1; ++i) f();  // warm-up: caches, handles
  std::vector<double> rounds;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace wick;
  int calls = 20000, repeat = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::atoi(argv[i + 1]);
  }
  const Tensor a = randn({1024}).cuda(), b = randn({1024}).cuda();
  const Tensor m = randn({64, 64}).cuda();
  cuda::synchronize();
  cudasimSetKernelExecution(0);
  struct Case {
    const char* name;
    std::function<void()> f;
  };
  float* raw = static_cast<float*>(a.data_ptr());
  const std::vector<Case> cases = {
      {"empty kernel launch (simulator only)",
       [&] { (void)cuda_kernels::launch_kernel("empty_kernel", &empty_kernel, 1, 32, 0, nullptr, raw); }},
      {"add of 1024 floats", [&] { Tensor c = add(a, b); }},
      {"mul by a number", [&] { Tensor c = mul(a, Scalar(2.0)); }},
      {"relu", [&] { Tensor c = relu(a); }},
      {"sum of 1024 floats", [&] { Tensor c = sum(a); }},
      {"softmax of 64x64", [&] { Tensor c = softmax(m, 1); }},
  };
  std::printf("host time per call on the CUDA simulator, kernels not executed (median of %d rounds of %d calls)\n",
              repeat, calls);
  for (const Case& c : cases) std::printf("%-40s %8.0f ns\n", c.name, median_ns(calls, repeat, c.f));
  cudasimSetKernelExecution(1);
  cuda::synchronize();
  return 0;
}
