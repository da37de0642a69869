#pragma once
// Store: the small key-value service that ranks rendezvous through (Gloo's addresses, the
// NCCL unique id). The TCP control channel serves one from the driver; InProcessStore
// serves threads of one process. A key is written once and read by anyone; get() waits
// until the key exists or `timeout` passes, then throws wick::Error naming the key.
#include <chrono>
#include <string>
#include <vector>

namespace wick::distributed {

using Bytes = std::vector<char>;
using Milliseconds = std::chrono::milliseconds;

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  virtual Bytes get(const std::string& key, Milliseconds timeout) = 0;
};

}  // namespace wick::distributed
