// The timeout variables are the library's defaults (issue 49, item 5): they were read by the
// examples only, so a program of one's own whose other ranks never came waited the built-in
// 60 s whatever WICK_RENDEZVOUS_TIMEOUT said.
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include <wick/distributed/control/environment_timeouts.h>
#include <wick/distributed/control/tcp_socket.h>
#include <wick/distributed/process_group.h>

#include "tests/distributed/shell.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

using distributed::Milliseconds;
using distributed::timeout_from_environment;

#if defined(WICK_TRAINING_WORKER)
const char* kTimeoutsWorker = WICK_TRAINING_WORKER;
#else
const char* kTimeoutsWorker = nullptr;
#endif

Milliseconds read(const char* value) {
  const auto lookup = [&](const char* name) -> const char* {
    return std::string(name) == "WICK_RENDEZVOUS_TIMEOUT" ? value : nullptr;
  };
  return timeout_from_environment("WICK_RENDEZVOUS_TIMEOUT", Milliseconds(60'000), lookup);
}

TEST(EnvironmentTimeouts, SecondsRoundedUpToMillisecondsAndTheFallbackWhenUnset) {
  EXPECT_EQ(read(nullptr), Milliseconds(60'000));
  EXPECT_EQ(read(""), Milliseconds(60'000));
  EXPECT_EQ(read("1"), Milliseconds(1000));
  EXPECT_EQ(read("2.5"), Milliseconds(2500));
  EXPECT_EQ(read("0.0001"), Milliseconds(1));  // a positive timeout stays positive
  EXPECT_EQ(read("1e8"), Milliseconds(100'000'000'000));
  for (const char* bad : {"abc", "0", "-1", "inf", "nan", "1e9", "5s", " "})
    expect_error([&] { read(bad); },
                 {"WICK_RENDEZVOUS_TIMEOUT='" + std::string(bad) + "'", "positive number of seconds"});
}

TEST(EnvironmentTimeouts, TheLibrarysDefaultsAreTheDocumentedOnes) {
  // Under ctest none of the variables is set (if one is, the defaults are its).
  if (std::getenv("WICK_RENDEZVOUS_TIMEOUT") == nullptr) {
    EXPECT_EQ(distributed::ControlOptions{}.rendezvous_timeout, Milliseconds(60'000));
  }
  if (std::getenv("WICK_DATA_PARALLEL_TIMEOUT") == nullptr) {
    EXPECT_EQ(distributed::DataParallelOptions{}.timeout, Milliseconds(600'000));
  }
  EXPECT_EQ(distributed::kDefaultCollectiveTimeout, Milliseconds(300'000));
}

// Rank `rank` of 2 alone, through ProcessGroup::from_environment(device) with the library's
// defaults and `env` in its environment; `timeout 30` ends it if it waits the built-in 60 s.
ShellRun lone_rank(int rank, const std::string& env) {
  const int port = distributed::find_free_port();
  return run_shell("RANK=" + std::to_string(rank) + " WORLD_SIZE=2 LOCAL_RANK=" + std::to_string(rank) +
                   " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " WICK_JOB_TOKEN=test-token " + env +
                   " timeout 30 '" + kTimeoutsWorker + "' --library-timeouts 2>&1");
}

TEST(EnvironmentTimeouts, ALoneRankZeroGivesUpAfterWickRendezvousTimeoutNamingTheMissingRank) {
  if (kTimeoutsWorker == nullptr) GTEST_SKIP() << "the training worker was not built";
  const ShellRun r = lone_rank(0, "WICK_RENDEZVOUS_TIMEOUT=1");
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) << r.output;  // 124: still waiting at 30 s
  EXPECT_NE(r.output.find("within 1000 ms; missing rank 1"), std::string::npos) << r.output;
  EXPECT_GE(r.seconds, 0.9) << r.output;
  EXPECT_LT(r.seconds, 4.0) << r.output;  // 1 s and the start-up, not 60 s
}

TEST(EnvironmentTimeouts, ALoneFollowerStopsConnectingAfterWickRendezvousTimeout) {
  if (kTimeoutsWorker == nullptr) GTEST_SKIP() << "the training worker was not built";
  const ShellRun r = lone_rank(1, "WICK_RENDEZVOUS_TIMEOUT=1");
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) << r.output;
  EXPECT_NE(r.output.find("cannot reach the driver at 127.0.0.1:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("within 1000 ms"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 4.0) << r.output;
}

TEST(EnvironmentTimeouts, AGarbledVariableIsNamed) {
  if (kTimeoutsWorker == nullptr) GTEST_SKIP() << "the training worker was not built";
  const ShellRun r = lone_rank(0, "WICK_COLLECTIVE_TIMEOUT=soon");
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) << r.output;
  EXPECT_NE(r.output.find("WICK_COLLECTIVE_TIMEOUT='soon' is not a timeout"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 4.0) << r.output;
}

}  // namespace
}  // namespace wick::test
