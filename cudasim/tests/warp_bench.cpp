// How long a block sum of N floats (default 16M; argv[1]) takes under the simulator with a
// shared-memory tree and with warp shuffles (argv[2]: "tree" or "shuffle" for one of them).
// Not a test: a measurement for people changing the executor (cudasim/README.md gives the
// numbers).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "block_reductions.h"

int main(int argc, char** argv) {
  using namespace cudasim_tests;
  const size_t n = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : size_t{16} << 20) / kReduceThreads * kReduceThreads;
  const std::string only = argc > 2 ? argv[2] : "";
  float *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&out, n / kReduceThreads * sizeof(float)) != cudaSuccess) return 1;
  std::vector<float> h(n, 1.0f);
  cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  std::printf("%zu floats, blocks of %d:", n, kReduceThreads);
  Seconds tree, shuffle;
  if (only != "shuffle") {
    tree = time_block_sum(tree_block_sum, in, out, n, 1);
    std::printf(" shared-memory tree %.2f s (CPU %.2f s)", tree.wall, tree.cpu);
  }
  if (only != "tree") {
    shuffle = time_block_sum(shuffle_block_sum, in, out, n, 1);
    std::printf(" warp shuffles %.2f s (CPU %.2f s)", shuffle.wall, shuffle.cpu);
  }
  if (only.empty()) std::printf(", shuffles/tree %.2fx by CPU time", shuffle.cpu / tree.cpu);
  std::printf("\n");
  return tree.wall < 0 || shuffle.wall < 0;
}
