#include <wick/distributed/control/launcher_environment.h>

#include <cstdlib>
#include <map>
#include <memory>

#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

bool present(const EnvironmentLookup& lookup, const char* name) {
  const char* v = lookup(name);
  return v != nullptr && *v != '\0';
}

// The launcher's own variable for each of wick's names, where it has one.
struct Names {
  const char* rank;
  const char* world_size;
  const char* local_rank;
};
constexpr Names kMpirun{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
constexpr Names kSrun{"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"};

std::string slurm_master_port(const EnvironmentLookup& lookup) {
  const char* job = lookup("SLURM_JOB_ID");
  if (job == nullptr || *job == '\0') return "";
  char* end = nullptr;
  const unsigned long long id = std::strtoull(job, &end, 10);
  if (end == job || *end != '\0') return "";  // left unset: from_environment names MASTER_PORT
  return std::to_string(20000 + id % 20000);
}

}  // namespace

std::string detected_launcher(const EnvironmentLookup& lookup) {
  if (present(lookup, "RANK") || present(lookup, "WORLD_SIZE")) return "environment";
  if (present(lookup, kMpirun.rank) && present(lookup, kMpirun.world_size)) return "mpirun";
  if (present(lookup, kSrun.rank) && present(lookup, kSrun.world_size)) return "srun";
  return "";
}

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets; a bracket holds ranges or numbers,
  // of which the first is taken ("03-05" -> "03", keeping the zero padding).
  size_t i = 0;
  std::string host;
  while (i < nodelist.size() && nodelist[i] != ',') {
    if (nodelist[i] == '[') {
      const size_t close = nodelist.find(']', i);
      WICK_CHECK(close != std::string::npos, "the Slurm node list '", nodelist, "' has an unclosed '['");
      const size_t stop = nodelist.find_first_of(",-]", i + 1);
      host += nodelist.substr(i + 1, stop - i - 1);
      i = close + 1;
    } else {
      host += nodelist[i++];
    }
  }
  WICK_CHECK(!host.empty(), "the Slurm node list '", nodelist, "' names no host");
  return host;
}

EnvironmentLookup with_launcher_names(EnvironmentLookup lookup) {
  auto derived = std::make_shared<std::map<std::string, std::string>>();
  const std::string launcher = detected_launcher(lookup);
  const auto take = [&](const char* name, const char* from) {
    if (!present(lookup, name) && from != nullptr && present(lookup, from)) (*derived)[name] = lookup(from);
  };
  if (launcher == "mpirun" || launcher == "srun") {
    const Names& n = launcher == "mpirun" ? kMpirun : kSrun;
    take("RANK", n.rank);
    take("WORLD_SIZE", n.world_size);
    take("LOCAL_RANK", n.local_rank);
    if (!present(lookup, "MASTER_PORT")) {
      const std::string port = launcher == "mpirun" ? "29500" : slurm_master_port(lookup);
      if (!port.empty()) (*derived)["MASTER_PORT"] = port;
    }
    if (launcher == "srun" && !present(lookup, "MASTER_ADDR")) {
      const char* list = present(lookup, "SLURM_STEP_NODELIST") ? lookup("SLURM_STEP_NODELIST")
                                                                 : lookup("SLURM_JOB_NODELIST");
      if (list != nullptr && *list != '\0') (*derived)["MASTER_ADDR"] = first_slurm_host(list);
    }
  }
  return [lookup = std::move(lookup), derived](const char* name) -> const char* {
    auto it = derived->find(name);
    return it != derived->end() ? it->second.c_str() : lookup(name);
  };
}

}  // namespace wick::distributed
