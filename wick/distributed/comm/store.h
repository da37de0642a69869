#pragma once
// Store: the small key-value service that ranks rendezvous through (Gloo's addresses, the
// NCCL unique id). The TCP control channel serves one from the driver; InProcessStore
// serves threads of one process. A key is written once and read by anyone; get() waits
// until the key exists or `timeout` passes, then throws wick::Error naming the key.
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace wick::distributed {

using Bytes = std::vector<char>;
using Milliseconds = std::chrono::milliseconds;

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  virtual Bytes get(const std::string& key, Milliseconds timeout) = 0;

  // The rendezvous generation of the next communicator that `rank` makes with key prefix
  // `prefix` on this store: 0, then 1, ... Every rank creates its communicators in the same
  // order, so the ranks agree on it without talking, and a communicator never reads the keys
  // of an earlier one made with the same prefix. Counted per rank because threads that are
  // ranks share one store.
  int next_generation(const std::string& prefix, int rank) {
    std::lock_guard<std::mutex> lock(generations_mutex_);
    return generations_[{prefix, rank}]++;
  }

 private:
  std::mutex generations_mutex_;
  std::map<std::pair<std::string, int>, int> generations_;
};

}  // namespace wick::distributed
