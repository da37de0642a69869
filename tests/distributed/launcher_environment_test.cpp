// The environments of torchrun, mpirun and srun read as wick's RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT (wick/distributed/control/launcher_environment.h).
#include <map>
#include <string>

#include <wick/distributed/control/control_environment.h>
#include <wick/distributed/control/launcher_environment.h>

#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using Env = std::map<std::string, std::string>;

EnvironmentLookup lookup_in(const Env& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

ProcessGroupConfig read(const Env& env) { return from_environment(lookup_in(env)); }

// Where `c` says this rank sits, all five values.
void expect_place(const ProcessGroupConfig& c, int rank, int world_size, int local_rank, const std::string& addr,
                  int port) {
  EXPECT_EQ(c.rank, rank);
  EXPECT_EQ(c.world_size, world_size);
  EXPECT_EQ(c.local_rank, local_rank);
  EXPECT_EQ(c.master_addr, addr);
  EXPECT_EQ(c.master_port, port);
}

TEST(LauncherEnvironment, TorchrunsVariablesAreWicksOwn) {
  const Env env{{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "n1"},
                {"MASTER_PORT", "29400"}, {"GROUP_RANK", "1"}, {"TORCHELASTIC_RUN_ID", "x"}};
  EXPECT_EQ(detected_launcher(lookup_in(env)), "environment");
  expect_place(read(env), 2, 4, 0, "n1", 29400);
}

TEST(LauncherEnvironment, OpenMpiGivesRankSizeAndLocalRank) {
  Env env{{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
          {"MASTER_ADDR", "head"}};
  EXPECT_EQ(detected_launcher(lookup_in(env)), "mpirun");
  expect_place(read(env), 5, 8, 1, "head", 29500);
  env["MASTER_PORT"] = "31000";
  EXPECT_EQ(read(env).master_port, 31000);
  // mpirun knows no rank 0 host: MASTER_ADDR must come with the job, and the error says how.
  env.erase("MASTER_ADDR");
  wick::test::expect_error([&] { read(env); }, {"MASTER_ADDR is not set", "mpirun pass -x MASTER_ADDR"});
}

TEST(LauncherEnvironment, SrunGivesEverythingFromTheStep) {
  Env env{{"SLURM_PROCID", "3"},          {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "1"},
          {"SLURM_NTASKS", "4"},          {"SLURM_JOB_ID", "123456"},    {"SLURM_STEP_NODELIST", "gpu[07-08]"},
          {"SLURM_JOB_NODELIST", "gpu[07-09]"}};
  EXPECT_EQ(detected_launcher(lookup_in(env)), "srun");
  expect_place(read(env), 3, 4, 1, "gpu07", 20000 + 123456 % 20000);
  // Names set in the environment win over the launcher's.
  env["MASTER_ADDR"] = "login";
  env["MASTER_PORT"] = "29999";
  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  env["LOCAL_RANK"] = "0";
  expect_place(read(env), 0, 1, 0, "login", 29999);
}

TEST(LauncherEnvironment, ABatchScriptIsOneProcess) {
  // sbatch sets SLURM_PROCID=0 and SLURM_NTASKS for the script itself, but no step: not a
  // rank of a distributed job.
  const Env env{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "a"}};
  EXPECT_EQ(detected_launcher(lookup_in(env)), "");
  EXPECT_EQ(with_launcher_names(lookup_in(env))("WORLD_SIZE"), nullptr);
}

TEST(LauncherEnvironment, FirstHostOfASlurmNodeList) {
  EXPECT_EQ(first_slurm_host("node01"), "node01");
  EXPECT_EQ(first_slurm_host("a,b,c"), "a");
  EXPECT_EQ(first_slurm_host("gpu[03-05,09],cpu1"), "gpu03");
  EXPECT_EQ(first_slurm_host("gpu[9,10]"), "gpu9");
  EXPECT_EQ(first_slurm_host("rack1-n[002-004]-ib"), "rack1-n002-ib");
  wick::test::expect_error([] { first_slurm_host("gpu[03-05"); }, {"unclosed '['"});
  wick::test::expect_error([] { first_slurm_host(""); }, {"names no host"});
}

}  // namespace
}  // namespace wick::distributed
