// wickrun killed with SIGKILL (it cannot forward anything then): its ranks must not train on
// alone. Each rank records its pid and sleeps; after the kill every one of them is gone.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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

}  // namespace
