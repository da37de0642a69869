// wickrun killed with SIGKILL (it cannot forward anything then): its ranks, and whatever
// they started, must not train on alone. Each process of interest records its pid and
// sleeps; after the kill every one of them is gone. And a rank that exits takes what it
// left running with it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  // A zombie (not reaped yet by whoever adopted it) is dead too.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_text, name, state;
  stat >> pid_text >> name >> state;
  return state != "Z";
}

// Waits up to 5 s for each of `names` in `dir` to hold a pid, and returns them.
std::vector<pid_t> read_pids(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<pid_t> pids;
  for (const std::string& name : names) {
    const std::string file = dir + "/" + name;
    pid_t pid = 0;
    for (int i = 0; i < 100 && pid <= 0; ++i) {
      std::ifstream in(file);
      std::string line;
      // Written with echo: a whole line means the whole pid.
      if (std::getline(in, line) && in.good()) pid = static_cast<pid_t>(std::atol(line.c_str()));
      if (pid <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_GT(pid, 0) << file;
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

// Each pid is gone within 3 s (then killed, so a failure leaves nothing behind).
void expect_gone(const std::vector<pid_t>& pids, const std::string& what) {
  for (pid_t pid : pids) {
    for (int i = 0; i < 150 && alive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(alive(pid)) << "process " << pid << " outlived " << what;
    if (alive(pid)) ::kill(pid, SIGKILL);
  }
}

TEST(WickrunLauncherDeath, RanksDieWithAKilledLauncher) {
  const std::string dir = ::testing::TempDir() + "/wickrun_death_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    const std::string script = "echo $$ > " + dir + "/pid_$RANK; exec sleep 60";
    ::execl(WICKRUN_PATH, "wickrun", "--nproc", "2", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  std::vector<pid_t> ranks;
  for (int r = 0; r < 2; ++r) {
    const std::string file = dir + "/pid_" + std::to_string(r);
    for (int i = 0; i < 100 && !std::filesystem::exists(file); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the pid's digits written
    std::ifstream in(file);
    pid_t pid = 0;
    in >> pid;
    ASSERT_GT(pid, 0) << file;
    ranks.push_back(pid);
  }
  for (pid_t pid : ranks) EXPECT_TRUE(alive(pid));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  for (pid_t pid : ranks) {
    for (int i = 0; i < 100 && alive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(alive(pid)) << "rank process " << pid << " outlived its launcher";
    if (alive(pid)) ::kill(pid, SIGKILL);
  }
  std::filesystem::remove_all(dir);
}

// Issue 25: a rank started through a wrapper script (the script waits for the real program,
// wickrun's grandchild) survived `kill -9 wickrun` and trained to the end, and so did
// anything a rank put in a session of its own. Before the guard processes, PR_SET_PDEATHSIG
// on the direct child killed only the wrapper.
TEST(WickrunLauncherDeath, GrandchildrenAndTheirOwnSessionsDieWithAKilledLauncher) {
  const std::string dir = ::testing::TempDir() + "/wickrun_death_tree_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    const std::string script = "setsid sh -c 'echo $$ > " + dir + "/session_$RANK; exec sleep 60' & "
                               "sh -c 'echo $$ > " + dir + "/grandchild_$RANK; exec sleep 60'; wait";
    ::execl(WICKRUN_PATH, "wickrun", "--nproc", "2", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  const std::vector<pid_t> pids =
      read_pids(dir, {"grandchild_0", "grandchild_1", "session_0", "session_1"});
  for (pid_t pid : pids) EXPECT_TRUE(alive(pid));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  expect_gone(pids, "its killed launcher");
  std::filesystem::remove_all(dir);
}

// What a rank leaves running when it exits (a background job, a daemon in its own session)
// is stopped with it, so a finished job leaves nothing behind. Before the guards these
// outlived a successful wickrun.
TEST(WickrunLauncherDeath, WhatARankLeftRunningIsStoppedWhenTheRankExits) {
  const std::string dir = ::testing::TempDir() + "/wickrun_leftovers_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string script = "sh -c 'echo $$ > " + dir + "/background; exec sleep 60' & "
                             "setsid sh -c 'echo $$ > " + dir + "/session; exec sleep 60' & "
                             "while [ ! -s " + dir + "/background ] || [ ! -s " + dir + "/session ]; do sleep 0.01; done";
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::execl(WICKRUN_PATH, "wickrun", "--nproc", "1", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  int status = -1;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  expect_gone(read_pids(dir, {"background", "session"}), "its finished rank");
  std::filesystem::remove_all(dir);
}

}  // namespace
