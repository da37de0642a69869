#include "kernels/cpu/thread_pool.h"

#include <wick/tensor/error.h>
#include <wick/tensor/threads.h>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace wick::cpu {

namespace {

thread_local bool running_task = false;

// How long a waiting thread keeps checking before it sleeps: longer than the gap between
// two ops of a training step on small tensors, far shorter than a scheduler time slice.
constexpr auto kSpin = std::chrono::microseconds(50);

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until ready() or kSpin has passed; returns ready()'s last value.
template <class Ready>
bool spin_until(Ready&& ready) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (ready()) return true;
    relax();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() - start > kSpin) return ready();
  }
}

// Waits (spinning first) until counter reaches 0.
void wait_for_zero(std::atomic<uint32_t>& counter) {
  auto zero = [&] { return counter.load(std::memory_order_acquire) == 0; };
  if (spin_until(zero)) return;
  for (uint32_t c; (c = counter.load(std::memory_order_acquire)) != 0;) counter.wait(c, std::memory_order_acquire);
}

}  // namespace

ThreadPool::ThreadPool(int threads) : owner_(::getpid()) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(call_);
    stop_.store(true);
    generation_.fetch_add(1, std::memory_order_release);
  }
  generation_.notify_all();
  for (auto& w : workers_) w.join();
}

bool ThreadPool::in_task() { return running_task; }

void ThreadPool::claim_and_run(Task task, void* context, int count) {
  running_task = true;
  for (int i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < count;) {
    task(context, i);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
  running_task = false;
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  while (true) {
    auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed))
      while (!changed()) generation_.wait(seen, std::memory_order_acquire);
    Task task;
    void* context;
    int count;
    {
      std::lock_guard<std::mutex> lock(call_);
      if (stop_.load()) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (!open_) continue;
      joined_.fetch_add(1, std::memory_order_relaxed);
      task = task_, context = context_, count = count_;
    }
    claim_and_run(task, context, count);
    if (joined_.fetch_sub(1, std::memory_order_acq_rel) == 1) joined_.notify_one();
  }
}

bool ThreadPool::run(int n, Task task, void* context) {
  if (running_task || ::getpid() != owner_) return false;
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) return false;
  {
    std::lock_guard<std::mutex> lock(call_);
    task_ = task, context_ = context, count_ = n, open_ = true;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(static_cast<uint32_t>(n), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  generation_.notify_all();
  claim_and_run(task, context, n);
  wait_for_zero(pending_);
  {
    std::lock_guard<std::mutex> lock(call_);
    open_ = false;
  }
  // Workers that joined may still be about to find no index left; they must be out before
  // the next call resets the counters.
  wait_for_zero(joined_);
  return true;
}

namespace {

// The threads kernels may use (set_num_threads), and the pool, which has at least that
// many. Pools are never destroyed: workers sleep in a futex until the process ends, kernels
// called from other static destructors still find the pool, and a kernel running on
// another thread while set_num_threads grows the pool keeps the one it started with.
std::atomic<int> g_threads{0};  // 0: not set yet
std::atomic<ThreadPool*> g_pool{nullptr};
std::mutex g_pool_mutex;

int requested_threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : std::max(omp_get_max_threads(), 1);
}

ThreadPool& pool_with_at_least(int threads) {
  ThreadPool* pool = g_pool.load(std::memory_order_acquire);
  if (pool && pool->size() >= threads) return *pool;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  pool = g_pool.load(std::memory_order_acquire);
  if (!pool || pool->size() < threads) {
    pool = new ThreadPool(threads);
    g_pool.store(pool, std::memory_order_release);
  }
  return *pool;
}

}  // namespace

ThreadPool& cpu_thread_pool() {
  ThreadPool* pool = g_pool.load(std::memory_order_acquire);
  return pool ? *pool : pool_with_at_least(requested_threads());
}

int cpu_threads() { return std::min(cpu_thread_pool().size(), requested_threads()); }

}  // namespace wick::cpu

namespace wick {

void set_num_threads(int n) {
  WICK_CHECK(n >= 1, "set_num_threads: ", n, " threads; expected at least 1");
  cpu::g_threads.store(n, std::memory_order_relaxed);
  cpu::pool_with_at_least(n);
}

int get_num_threads() { return cpu::cpu_threads(); }

}  // namespace wick
