#pragma once
// InProcessStore: the Store for ranks that are threads of one process (a mutex-guarded map).
#include <condition_variable>
#include <map>
#include <mutex>

#include <wick/distributed/comm/store.h>

namespace wick::distributed {

class InProcessStore final : public Store {
 public:
  void set(const std::string& key, const Bytes& value) override;
  // Waits until some thread sets `key`; throws wick::Error naming the key after `timeout`.
  Bytes get(const std::string& key, Milliseconds timeout) override;

 private:
  std::mutex mutex_;
  std::condition_variable set_cv_;
  std::map<std::string, Bytes> values_;
};

}  // namespace wick::distributed
