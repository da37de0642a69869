// from_environment: the variables wickrun sets, and clear errors for missing/garbled ones.
#include <map>
#include <string>

#include <wick/distributed/control_environment.h>

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

}  // namespace
}  // namespace wick::distributed
