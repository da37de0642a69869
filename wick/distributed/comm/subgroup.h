#pragma once
// Communicators over a subset of the ranks (torch.distributed.new_group) and the node layout
// of a job, for hierarchical schemes such as DASO.
//
// A subgroup is an ordinary communicator (Gloo or NCCL, by device) whose rendezvous keys
// live under their own prefix of the job's store, so any number of groups can be made over
// one store. Every rank of the job calls new_group for every group in the same order, also
// for groups it is not a member of (it gets null), as torch requires; then the ranks agree
// on the prefixes without talking.
#include <memory>
#include <string>
#include <vector>

#include <wick/distributed/comm/communicator.h>

namespace wick::distributed {

// A view of a store whose keys all start with `prefix`.
class PrefixStore final : public Store {
 public:
  PrefixStore(Store& base, std::string prefix) : base_(base), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const Bytes& value) override { base_.set(prefix_ + key, value); }
  Bytes get(const std::string& key, Milliseconds timeout) override { return base_.get(prefix_ + key, timeout); }

 private:
  Store& base_;
  std::string prefix_;
};

// The communicator of `ranks` (ranks of the job, listed in the order that gives their rank
// in the group) for this rank `rank` of the job; null when `rank` is not in `ranks`. Throws
// wick::Error for an empty list, a duplicate or a rank outside [0, world_size).
std::unique_ptr<Communicator> new_group(Store& store, int rank, int world_size, const std::vector<int>& ranks,
                                        Device device, Milliseconds timeout = std::chrono::seconds(30));

// Where the ranks sit: `nodes` machines with `local_size` ranks each, rank =
// node * local_size + local_rank (the layout wickrun gives).
struct NodeTopology {
  int node = 0;
  int nodes = 1;
  int local_rank = 0;
  int local_size = 1;
  // The job's ranks on this node, and those with this rank's local rank on every node.
  std::vector<int> node_ranks() const;
  std::vector<int> peer_ranks() const;
};

// From LOCAL_RANK and LOCAL_WORLD_SIZE (wickrun sets both; absent: one node holding every
// rank), checked against every other rank's over `world`: nodes with different numbers of
// ranks, or a layout other than node-major, are refused with a wick::Error naming them.
NodeTopology node_topology(Communicator& world);
// The same from explicit values (tests, or a launcher with its own variables).
NodeTopology node_topology(Communicator& world, int local_rank, int local_size);

}  // namespace wick::distributed
