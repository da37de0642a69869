#include <wick/distributed/comm/in_process_store.h>

#include <wick/distributed/comm/deadline.h>
#include <wick/tensor/error.h>

namespace wick::distributed {

void InProcessStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  set_cv_.notify_all();
}

Bytes InProcessStore::get(const std::string& key, Milliseconds timeout) {
  std::unique_lock lock(mutex_);
  bool found = set_cv_.wait_until(lock, deadline_after(timeout), [&] { return values_.count(key) > 0; });
  WICK_CHECK(found, "Store::get (in-process): key '", key, "' was not set within ", timeout.count(), " ms");
  return values_.at(key);
}

}  // namespace wick::distributed
