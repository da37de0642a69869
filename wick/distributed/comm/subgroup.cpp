#include <wick/distributed/comm/subgroup.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {

std::unique_ptr<Communicator> new_group(Store& store, int rank, int world_size, const std::vector<int>& ranks,
                                        Device device, Milliseconds timeout) {
  WICK_CHECK(!ranks.empty(), "new_group: the list of ranks is empty");
  std::set<int> seen;
  for (int r : ranks) {
    WICK_CHECK(r >= 0 && r < world_size, "new_group: rank ", r, " is outside the job's ", world_size, " ranks");
    WICK_CHECK(seen.insert(r).second, "new_group: rank ", r, " is listed twice");
  }
  // Every rank counts every group, so the n-th group has the same prefix everywhere.
  std::string prefix = "group" + std::to_string(store.next_generation("new_group", rank)) + "/";
  auto me = std::find(ranks.begin(), ranks.end(), rank);
  if (me == ranks.end()) return nullptr;
  PrefixStore group_store(store, prefix);
  return make_communicator(group_store, static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()), device,
                           timeout);
}

std::vector<int> NodeTopology::node_ranks() const {
  std::vector<int> out;
  for (int l = 0; l < local_size; ++l) out.push_back(node * local_size + l);
  return out;
}

std::vector<int> NodeTopology::peer_ranks() const {
  std::vector<int> out;
  for (int n = 0; n < nodes; ++n) out.push_back(n * local_size + local_rank);
  return out;
}

namespace {
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  WICK_CHECK(*end == '\0' && x >= 0 && x < (1L << 30), "node_topology: ", name, "='", v, "' is not a rank count");
  return static_cast<int>(x);
}
}  // namespace

NodeTopology node_topology(Communicator& world) {
  const int size = world.size();
  return node_topology(world, env_int("LOCAL_RANK", world.rank()), env_int("LOCAL_WORLD_SIZE", size));
}

NodeTopology node_topology(Communicator& world, int local_rank, int local_size) {
  const int rank = world.rank(), size = world.size();
  // Every rank's view, so that a mismatch is reported the same way on every rank.
  Tensor mine = tensor<int64_t>({local_rank, local_size}).to(world.device());
  Tensor all = zeros({size, 2}, Options(DType::Int64, world.device()));
  world.all_gather(mine, all)->wait();
  const std::vector<int64_t> v = all.to_vector<int64_t>();
  for (int r = 0; r < size; ++r) {
    const int64_t lr = v[2 * r], ls = v[2 * r + 1];
    WICK_CHECK(ls == v[1], "node_topology: rank 0 has ", v[1], " ranks on its node but rank ", r, " has ", ls,
               "; every node must run the same number of ranks (as Heat's DASO requires equal GPUs per node)");
    WICK_CHECK(ls >= 1 && size % ls == 0, "node_topology: ", size, " ranks cannot form nodes of ", ls);
    WICK_CHECK(lr == r % ls, "node_topology: rank ", r, " has local rank ", lr, ", but nodes of ", ls,
               " ranks in node-major order (as wickrun starts them) give it local rank ", r % ls);
  }
  return NodeTopology{rank / local_size, size / local_size, local_rank, local_size};
}

}  // namespace wick::distributed
