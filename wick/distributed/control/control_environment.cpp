#include <wick/distributed/control/control_environment.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ios>

#include <wick/distributed/control/control_client.h>
#include <wick/distributed/control/control_server.h>
#include <wick/distributed/control/launcher_environment.h>
#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

using Lookup = std::function<const char*(const char*)>;

std::string required(const Lookup& lookup, const char* name) {
  const char* value = lookup(name);
  WICK_CHECK(value != nullptr && *value != '\0', "from_environment: ", name,
             " is not set (launch with wickrun, torchrun, mpirun or srun, or set RANK, WORLD_SIZE, LOCAL_RANK, "
             "MASTER_ADDR, MASTER_PORT; under mpirun pass -x MASTER_ADDR=<rank 0's host>)");
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

bool is_true(const char* v) {
  if (v == nullptr) return false;
  std::string t(v);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t == "1" || t == "true" || t == "yes";
}

// The port of wick's control channel. torchrun's agent serves its own store on MASTER_PORT
// and says so to the ranks (TORCHELASTIC_USE_AGENT_STORE=True): the channel then takes the
// next port. WICK_CONTROL_PORT, when set, decides under every launcher.
int control_port(const Lookup& lookup) {
  const char* own = lookup("WICK_CONTROL_PORT");
  if (own != nullptr && *own != '\0') return whole_number(lookup, "WICK_CONTROL_PORT", 1, 65535);
  const int master = whole_number(lookup, "MASTER_PORT", 1, 65535);
  if (!is_true(lookup("TORCHELASTIC_USE_AGENT_STORE"))) return master;
  WICK_CHECK(master < 65535, "from_environment: torchrun's agent holds MASTER_PORT=", master,
             " and the control channel's port would be the next one, past 65535; set WICK_CONTROL_PORT");
  return master + 1;
}

}  // namespace

ProcessGroupConfig from_environment(const Lookup& raw) {
  const Lookup lookup = with_launcher_names(raw);
  ProcessGroupConfig config;
  config.world_size = whole_number(lookup, "WORLD_SIZE", 1, 1 << 20);
  config.rank = whole_number(lookup, "RANK", 0, config.world_size - 1);
  config.local_rank = whole_number(lookup, "LOCAL_RANK", 0, config.world_size - 1);
  config.master_addr = required(lookup, "MASTER_ADDR");
  config.master_port = control_port(lookup);
  config.job_token = job_token_from_environment(lookup);
  const char* bind = raw("WICK_BIND_ADDR");
  config.bind_addr = bind ? bind : "";
  return config;
}

std::string job_token_from_environment(const Lookup& lookup) {
  const char* file = lookup("WICK_JOB_TOKEN_FILE");
  if (file != nullptr && *file != '\0') return read_token_file(file, "WICK_JOB_TOKEN_FILE");
  const char* token = lookup("WICK_JOB_TOKEN");
  return token ? token : "";
}

std::string job_token_from_environment() {
  return job_token_from_environment([](const char* name) -> const char* { return std::getenv(name); });
}

std::string read_token_file(const std::string& path, const char* what) {
  constexpr std::size_t kMaxTokenFile = 4096;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  WICK_CHECK(fd >= 0, what, ": cannot open the token file ", path, ": ", std::strerror(errno));
  std::string text;
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  if (stat_ok && S_ISREG(st.st_mode) && (st.st_mode & 077) == 0 && static_cast<std::size_t>(st.st_size) <= kMaxTokenFile) {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  WICK_CHECK(stat_ok && S_ISREG(st.st_mode), what, ": the token file ", path, " is not a regular file");
  WICK_CHECK((st.st_mode & 077) == 0, what, ": the token file ", path, " can be read or written by others (mode ",
             std::oct, (st.st_mode & 0777), std::dec, "); make it private: chmod 600 ", path);
  WICK_CHECK(static_cast<std::size_t>(st.st_size) <= kMaxTokenFile, what, ": the token file ", path, " has ",
             st.st_size, " bytes, more than the ", kMaxTokenFile, " a token file may have");
  const std::size_t line_end = text.find_first_of("\r\n");
  if (line_end != std::string::npos) text.resize(line_end);
  WICK_CHECK(!text.empty(), what, ": the token file ", path, " is empty (its first line is the token)");
  return text;
}

ProcessGroupConfig from_environment() {
  return from_environment([](const char* name) -> const char* { return std::getenv(name); });
}

std::unique_ptr<DriverChannel> start_driver_channel(const ProcessGroupConfig& config, ControlOptions options) {
  WICK_CHECK(config.rank == 0, "start_driver_channel: rank ", config.rank, " is not the driver (rank 0)");
  const std::string& host = config.bind_addr.empty() ? config.master_addr : config.bind_addr;
  std::unique_ptr<ControlServer> server;
  try {
    server = std::make_unique<ControlServer>(host, config.master_port, config.world_size, config.job_token, options);
  } catch (const Error& e) {
    if (!config.bind_addr.empty()) throw;
    if (std::string(e.what()).find("in use") != std::string::npos)
      wick::detail::throw_error(e.what(), " (another program holds the control channel's port ", config.master_port,
                                ": MASTER_PORT, or MASTER_PORT + 1 under torchrun's agent store; choose another with "
                                "MASTER_PORT or WICK_CONTROL_PORT)");
    wick::detail::throw_error(e.what(), " (the driver listens on MASTER_ADDR; if that is not an address of this "
                              "machine, set WICK_BIND_ADDR to one, or to 0.0.0.0 for every interface)");
  }
  server->wait_for_followers();
  return server;
}

std::unique_ptr<FollowerChannel> connect_follower_channel(const ProcessGroupConfig& config, ControlOptions options) {
  WICK_CHECK(config.rank > 0, "connect_follower_channel: rank 0 is the driver; use start_driver_channel");
  return std::make_unique<ControlClient>(config.master_addr, config.master_port, config.rank, config.world_size,
                                         config.job_token, options);
}

}  // namespace wick::distributed
