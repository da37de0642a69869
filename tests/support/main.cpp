// The test binaries' main: GoogleTest's, except for a shard of a suite that ctest runs in
// parts (tests/CMakeLists.txt) while reports go to a folder (GTEST_OUTPUT=json:dir/, as
// tools/gpu-check.sh asks): gtest names the report after the binary and picks another name
// only if the file exists already, so two shards finishing together could write one file.
// Each shard writes dir/<binary>.shard<i>.<format> instead.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  // Before InitGoogleTest, which opens the report (GTEST_OUTPUT is the flag's default; an
  // explicit --gtest_output still wins).
  const std::string output = GTEST_FLAG_GET(output);
  const char* shard = std::getenv("GTEST_SHARD_INDEX");
  const size_t colon = output.find(':');
  if (shard && colon != std::string::npos && output.back() == '/') {
    const std::string binary = std::filesystem::path(argv[0]).filename().string();
    GTEST_FLAG_SET(output, output + binary + ".shard" + shard + "." + output.substr(0, colon));
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
