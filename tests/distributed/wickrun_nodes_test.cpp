// wickrun --nnodes M --nproc-per-node N without --master: every node's ranks start on this
// machine, node by node, each knowing its node (GROUP_RANK) and its place in it.
#include <cstdio>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/distributed/shell.h"

namespace {

std::string run(const std::string& command) { return wick::test::run_shell(command).output; }

TEST(WickrunNodes, AllNodesOnOneMachineGetANodeMajorLayout) {
  const std::string out = run(std::string(WICKRUN_PATH) +
                              " --nnodes 2 --nproc-per-node 3 sh -c "
                              "'echo \"$RANK $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $WORLD_SIZE\"'");
  std::set<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.insert(out.substr(start, nl - start));
  EXPECT_EQ(lines, (std::set<std::string>{"0 0 3 0 6", "1 1 3 0 6", "2 2 3 0 6", "3 0 3 1 6", "4 1 3 1 6",
                                          "5 2 3 1 6"}));
}

TEST(WickrunNodes, ANodeRankStillNeedsTheMaster) {
  const std::string out = run(std::string(WICKRUN_PATH) + " --nnodes 2 --node-rank 1 --nproc 1 true 2>&1");
  EXPECT_NE(out.find("--master HOST:PORT is required"), std::string::npos) << out;
}

}  // namespace
