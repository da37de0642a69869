#include <wick/distributed/control_environment.h>

#include <cerrno>
#include <cstdlib>

#include <wick/distributed/control_client.h>
#include <wick/distributed/control_server.h>
#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

using Lookup = std::function<const char*(const char*)>;

std::string required(const Lookup& lookup, const char* name) {
  const char* value = lookup(name);
  WICK_CHECK(value != nullptr && *value != '\0', "from_environment: ", name,
             " is not set (launch with wickrun, or set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)");
  return value;
}

int whole_number(const Lookup& lookup, const char* name, long lo, long hi) {
  std::string text = required(lookup, name);
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  WICK_CHECK(errno == 0 && end != text.c_str() && *end == '\0', "from_environment: ", name, "='", text,
             "' is not a whole number");
  WICK_CHECK(v >= lo && v <= hi, "from_environment: ", name, "=", v, " is out of range ", lo, "..", hi);
  return static_cast<int>(v);
}

}  // namespace

ProcessGroupConfig from_environment(const Lookup& lookup) {
  ProcessGroupConfig config;
  config.world_size = whole_number(lookup, "WORLD_SIZE", 1, 1 << 20);
  config.rank = whole_number(lookup, "RANK", 0, config.world_size - 1);
  config.local_rank = whole_number(lookup, "LOCAL_RANK", 0, config.world_size - 1);
  config.master_addr = required(lookup, "MASTER_ADDR");
  config.master_port = whole_number(lookup, "MASTER_PORT", 1, 65535);
  const char* token = lookup("WICK_JOB_TOKEN");
  config.job_token = token ? token : "";
  return config;
}

ProcessGroupConfig from_environment() {
  return from_environment([](const char* name) -> const char* { return std::getenv(name); });
}

std::unique_ptr<DriverChannel> start_driver_channel(const ProcessGroupConfig& config, ControlOptions options) {
  WICK_CHECK(config.rank == 0, "start_driver_channel: rank ", config.rank, " is not the driver (rank 0)");
  auto server = std::make_unique<ControlServer>("0.0.0.0", config.master_port, config.world_size, config.job_token,
                                                options);
  server->wait_for_followers();
  return server;
}

std::unique_ptr<FollowerChannel> connect_follower_channel(const ProcessGroupConfig& config, ControlOptions options) {
  WICK_CHECK(config.rank > 0, "connect_follower_channel: rank 0 is the driver; use start_driver_channel");
  return std::make_unique<ControlClient>(config.master_addr, config.master_port, config.rank, config.world_size,
                                         config.job_token, options);
}

}  // namespace wick::distributed
