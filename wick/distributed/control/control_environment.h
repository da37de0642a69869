#pragma once
// ProcessGroupConfig: where this process sits in the job, read from the environment that
// wickrun (or torchrun, mpirun, srun: launcher_environment.h, or a batch script) sets:
//   RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT  (required)
//   WICK_JOB_TOKEN_FILE or WICK_JOB_TOKEN                   (optional, default empty)
//   WICK_BIND_ADDR  the driver's listening address (default MASTER_ADDR; 0.0.0.0 = every
//                   interface, for a MASTER_ADDR that resolves to loopback on the driver)
//   WICK_CONTROL_PORT  the control channel's port (default MASTER_PORT, or MASTER_PORT + 1
//                   when torchrun's agent serves its store on MASTER_PORT, which it says
//                   with TORCHELASTIC_USE_AGENT_STORE=True)
#include <functional>
#include <memory>
#include <string>

#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/control/control_options.h>

namespace wick::distributed {

struct ProcessGroupConfig {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // which device of this machine to use
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // the control channel's port (WICK_CONTROL_PORT, see above)
  std::string job_token;
  std::string bind_addr;  // where the driver listens; empty: master_addr
};

// The job token from WICK_JOB_TOKEN_FILE (read with read_token_file) or else WICK_JOB_TOKEN;
// empty when neither is set.
std::string job_token_from_environment();
std::string job_token_from_environment(const std::function<const char*(const char*)>& lookup);
// Reads a token file: its first line, without the line end. Refuses (wick::Error naming
// `what` and the path) a file others can read or write (like ssh with a private key), one
// that is not a regular file, larger than 4 KiB, or empty.
std::string read_token_file(const std::string& path, const char* what);

// Reads the variables above; throws wick::Error naming the variable when one is missing or
// garbled (not a whole number, rank outside [0, WORLD_SIZE), port outside 1..65535...).
ProcessGroupConfig from_environment();
// The same, reading variables through `lookup` (returns nullptr for unset), for tests.
ProcessGroupConfig from_environment(const std::function<const char*(const char*)>& lookup);

// Convenience for rank 0: a ControlServer listening on config.bind_addr (or master_addr) at
// config.master_port
// that has waited (up to options.rendezvous_timeout) for every follower.
std::unique_ptr<DriverChannel> start_driver_channel(const ProcessGroupConfig& config, ControlOptions options = {});
// Convenience for the other ranks: a registered ControlClient.
std::unique_ptr<FollowerChannel> connect_follower_channel(const ProcessGroupConfig& config,
                                                          ControlOptions options = {});

}  // namespace wick::distributed
