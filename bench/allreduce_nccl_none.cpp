// The NCCL half of wick_bench_allreduce in a build without CUDA.
#include <cstdio>
#include <vector>

namespace wick::bench {
void bench_nccl_allreduce(const std::vector<size_t>&, double) {
  std::printf("\nNCCL: skipped (wick was built without CUDA)\n");
}
}  // namespace wick::bench
