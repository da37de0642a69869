#pragma once
// Holding a stream's worker until the host releases it: lets a test see what the host
// observes, and when a call returns, while device work is still pending.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace cudasim_tests {

// Spins until *flag (pinned host memory, written by the host) is set.
__global__ inline void wait_for_flag(const int* flag) {
  std::atomic_ref<int> f(*const_cast<int*>(flag));
  while (f.load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
}

struct Gate {
  int* flag = nullptr;  // pinned: the host writes it while a kernel reads it
  Gate() {
    EXPECT_EQ(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocDefault), cudaSuccess);
    *flag = 0;
  }
  ~Gate() { cudaFreeHost(flag); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void open() { std::atomic_ref<int>(*flag).store(1); }
};

// Opens a gate when told, or by itself after 30 s (long enough for a loaded machine), so that a call that wrongly
// waits for the gated work returns late (and the test fails) instead of hanging. `opened`
// is set before the gate opens: a call that returns while it is false returned while the
// gated work was still held.
class TimedOpener {
 public:
  explicit TimedOpener(Gate& gate)
      : thread_([this, &gate] {
          std::unique_lock<std::mutex> lock(mutex_);
          told_.wait_for(lock, std::chrono::seconds(30), [this] { return open_now_; });
          opened = true;
          gate.open();
        }) {}
  ~TimedOpener() { open(); }
  TimedOpener(const TimedOpener&) = delete;
  TimedOpener& operator=(const TimedOpener&) = delete;
  void open() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_now_ = true;
    }
    told_.notify_all();
    thread_.join();
  }
  std::atomic<bool> opened{false};

 private:
  std::mutex mutex_;
  std::condition_variable told_;
  bool open_now_ = false;
  std::thread thread_;
};

}  // namespace cudasim_tests
