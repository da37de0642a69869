// The simulator's cost of a warp exchange measured against its cost of a barrier: a block
// sum by warp shuffles (the shape of wick's reductions) may not cost much more than the same
// sum by a shared-memory tree. Both do similar work per thread (5 exchanges against 8
// barriers per value), so a large ratio means the exchanges themselves are slow. CPU time is
// compared, which a busy machine disturbs far less than wall time.
#include <gtest/gtest.h>

#include <vector>

#include "block_reductions.h"
#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;

TEST(WarpSpeed, AShuffleReductionCostsAboutWhatASharedMemoryTreeCosts) {
  constexpr size_t kN = size_t{1} << 18;
  DeviceBuffer<float> in(kN), out(kN / kReduceThreads);
  in.write(std::vector<float>(kN, 1.0f));
  const Seconds tree = time_block_sum(tree_block_sum, in.ptr, out.ptr, kN, 3);
  for (float v : out.read()) ASSERT_EQ(v, 256.0f);
  const Seconds shuffle = time_block_sum(shuffle_block_sum, in.ptr, out.ptr, kN, 3);
  for (float v : out.read()) ASSERT_EQ(v, 256.0f);
  ASSERT_GT(tree.cpu, 0.0);
  RecordProperty("tree_cpu_seconds", std::to_string(tree.cpu));
  RecordProperty("shuffle_cpu_seconds", std::to_string(shuffle.cpu));
  EXPECT_LT(shuffle.cpu, 2.0 * tree.cpu) << "shuffles " << shuffle.cpu << " s, tree " << tree.cpu << " s of CPU time";
}

}  // namespace
