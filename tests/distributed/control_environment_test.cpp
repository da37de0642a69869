// from_environment: the variables wickrun sets, and clear errors for missing/garbled ones.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include <wick/distributed/control/control_environment.h>
#include <wick/distributed/control/tcp_socket.h>

#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using wick::test::expect_error;

ProcessGroupConfig read(const std::map<std::string, std::string>& env) {
  return from_environment([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::map<std::string, std::string> good() {
  return {{"RANK", "3"},           {"WORLD_SIZE", "8"},   {"LOCAL_RANK", "1"},
          {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}, {"WICK_JOB_TOKEN", "abc"}};
}

TEST(ControlEnvironment, ReadsEveryVariable) {
  ProcessGroupConfig c = read(good());
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.world_size, 8);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.master_addr, "node0");
  EXPECT_EQ(c.master_port, 29500);
  EXPECT_EQ(c.job_token, "abc");
  auto env = good();
  env.erase("WICK_JOB_TOKEN");
  EXPECT_EQ(read(env).job_token, "");  // optional
}

TEST(ControlEnvironment, MissingVariablesAreNamed) {
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    auto env = good();
    env.erase(name);
    expect_error([&] { read(env); }, {"from_environment", name, "not set"});
  }
}

TEST(ControlEnvironment, GarbledValuesAreNamed) {
  auto with = [](const char* name, const char* value) {
    auto env = good();
    env[name] = value;
    return env;
  };
  expect_error([&] { read(with("RANK", "two")); }, {"RANK='two'", "not a whole number"});
  expect_error([&] { read(with("RANK", "3x")); }, {"RANK='3x'"});
  expect_error([&] { read(with("RANK", "8")); }, {"RANK=8", "out of range 0..7"});
  expect_error([&] { read(with("RANK", "-1")); }, {"RANK=-1"});
  expect_error([&] { read(with("WORLD_SIZE", "0")); }, {"WORLD_SIZE=0"});
  expect_error([&] { read(with("MASTER_PORT", "70000")); }, {"MASTER_PORT=70000", "1..65535"});
  expect_error([&] { read(with("MASTER_PORT", "")); }, {"MASTER_PORT", "not set"});
  expect_error([&] { read(with("LOCAL_RANK", "99999999999999999999")); }, {"LOCAL_RANK"});
}

// Issue 49, item 1: torchrun's agent serves its store on MASTER_PORT (and tells the ranks
// with TORCHELASTIC_USE_AGENT_STORE=True), so the control channel takes the next port;
// WICK_CONTROL_PORT decides under every launcher.
TEST(ControlEnvironment, TheControlPortMovesPastTorchrunsAgentStore) {
  auto env = good();
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EXPECT_EQ(read(env).master_port, 29501);
  env["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_EQ(read(env).master_port, 29500);
  env["WICK_CONTROL_PORT"] = "31000";
  EXPECT_EQ(read(env).master_port, 31000);
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EXPECT_EQ(read(env).master_port, 31000);  // the own variable wins
  env["WICK_CONTROL_PORT"] = "0";
  expect_error([&] { read(env); }, {"WICK_CONTROL_PORT=0", "1..65535"});
  env.erase("WICK_CONTROL_PORT");
  env["MASTER_PORT"] = "65535";
  expect_error([&] { read(env); }, {"torchrun's agent", "65535", "WICK_CONTROL_PORT"});
}

TEST(ControlEnvironment, ABusyPortIsNamedWithTheVariablesThatMoveIt) {
  const Socket taken = listen_tcp("127.0.0.1", 0);
  ProcessGroupConfig c;
  c.rank = 0;
  c.world_size = 2;
  c.master_addr = "127.0.0.1";
  c.master_port = local_port(taken);
  expect_error([&] { start_driver_channel(c, {}); }, {"in use", "WICK_CONTROL_PORT", std::to_string(c.master_port)});
}

// Issue 14, defect 8: the token comes from a private file (or the environment), never a
// command line.
std::string token_file(const std::string& name, const std::string& text, mode_t mode) {
  std::string path = ::testing::TempDir() + "/wick_token_" + std::to_string(::getpid()) + "_" + name;
  ::unlink(path.c_str());
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(ControlEnvironment, TheTokenFileIsItsFirstLineAndMustBePrivate) {
  std::string ok = token_file("ok", "s3cret\nignored\n", 0600);
  EXPECT_EQ(read_token_file(ok, "test"), "s3cret");
  std::string crlf = token_file("crlf", "s3cret\r\n", 0400);
  EXPECT_EQ(read_token_file(crlf, "test"), "s3cret");
  std::string shared = token_file("shared", "s3cret\n", 0644);
  expect_error([&] { read_token_file(shared, "--token-file"); },
               {"--token-file", shared, "read or written by others", "mode 644", "chmod 600"});
  std::string empty = token_file("empty", "\nsecond", 0600);
  expect_error([&] { read_token_file(empty, "test"); }, {"is empty"});
  std::string big = token_file("big", std::string(5000, 'x'), 0600);
  expect_error([&] { read_token_file(big, "test"); }, {"5000 bytes", "more than the 4096"});
  expect_error([&] { read_token_file("/nonexistent/token", "test"); }, {"cannot open", "/nonexistent/token"});
  expect_error([&] { read_token_file(::testing::TempDir(), "test"); }, {"not a regular file"});
  // WICK_JOB_TOKEN_FILE wins over WICK_JOB_TOKEN.
  auto env = good();
  env["WICK_JOB_TOKEN_FILE"] = ok;
  EXPECT_EQ(read(env).job_token, "s3cret");
  env["WICK_JOB_TOKEN_FILE"] = shared;
  expect_error([&] { read(env); }, {"WICK_JOB_TOKEN_FILE", "chmod 600"});
  for (const auto& p : {ok, crlf, shared, empty, big}) ::unlink(p.c_str());
}

TEST(ControlEnvironment, BindAddressDefaultsToMasterAddr) {
  auto env = good();
  EXPECT_EQ(read(env).bind_addr, "");  // start_driver_channel then listens on MASTER_ADDR
  env["WICK_BIND_ADDR"] = "0.0.0.0";
  EXPECT_EQ(read(env).bind_addr, "0.0.0.0");
}

}  // namespace
}  // namespace wick::distributed
