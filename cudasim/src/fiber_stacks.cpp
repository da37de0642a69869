// Fiber stacks with guard regions, pooled per host thread.
#include "fiber_stacks.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <new>
#include <vector>

namespace cudasim {

namespace {

// Mappings are never unmapped: the pool of a host thread lives as long as the thread (the
// block pool's threads and stream workers never end).
struct StackPool {
  std::vector<StackBounds> free;
  unsigned made = 0;
  char* run = nullptr;  // unguarded stacks not handed out yet (see below)
  unsigned run_left = 0;
};
thread_local StackPool t_pool;

// Successive stacks differ in length by a page and a cache line (a cycle of 16), so that
// their tops, where the threads of a block keep their hot frames, do not all fall in the
// same cache sets as equally spaced, equally long stacks would.
constexpr unsigned kColours = 16;
constexpr size_t kLongestStack = kFiberStackBytes + (kColours - 1) * 4096;

// A guarded stack costs the process two memory mappings, and Linux allows 65530 by default
// (vm.max_map_count), while a block of 1024 threads that all wait needs 1024 stacks on each
// host thread running it. Past a quarter of the limit, stacks come in unguarded runs of 32
// (one mapping per run), where an overflow runs into the next stack unnoticed.
constexpr unsigned kRun = 32;

size_t guarded_budget() {
  static const size_t budget = [] {
    size_t limit = 65530;
    if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
      unsigned long v = 0;
      if (std::fscanf(f, "%lu", &v) == 1 && v > 0) limit = v;
      std::fclose(f);
    }
    return limit / 4 / 2;
  }();
  return budget;
}
std::atomic<size_t> g_guarded{0};

StackBounds guarded_stack(unsigned colour) {
  const size_t total = kFiberGuardBytes + kFiberStackBytes + colour * 4096;
  void* p = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  char* base = static_cast<char*>(p);
  if (mprotect(base + kFiberGuardBytes, total - kFiberGuardBytes, PROT_READ | PROT_WRITE) != 0) {
    munmap(base, total);
    throw std::bad_alloc();
  }
  return {base + kFiberGuardBytes, total - kFiberGuardBytes - colour * 64};
}

StackBounds unguarded_stack(unsigned colour) {
  if (t_pool.run_left == 0) {
    void* p = mmap(nullptr, kRun * kLongestStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    t_pool.run = static_cast<char*>(p);
    t_pool.run_left = kRun;
  }
  char* bottom = t_pool.run;
  t_pool.run += kLongestStack;
  --t_pool.run_left;
  return {bottom, kLongestStack - (kColours - 1 - colour) * 4096 - colour * 64};
}

StackBounds new_stack() {
  const unsigned colour = t_pool.made++ % kColours;
  if (g_guarded.fetch_add(1) < guarded_budget()) return guarded_stack(colour);
  g_guarded.fetch_sub(1);
  return unguarded_stack(colour);
}

}  // namespace

boost::context::stack_context take_stack() {
  StackBounds s;
  if (!t_pool.free.empty()) {
    s = t_pool.free.back();
    t_pool.free.pop_back();
  } else {
    s = new_stack();
  }
  boost::context::stack_context sc;
  sc.size = s.size;
  sc.sp = const_cast<char*>(static_cast<const char*>(s.bottom)) + s.size;
  return sc;
}

void return_stack(const StackBounds& stack) { t_pool.free.push_back(stack); }

bool in_guard(const StackBounds& stack, const void* address) {
  const char* a = static_cast<const char*>(address);
  const char* bottom = static_cast<const char*>(stack.bottom);
  return stack.bottom && a < bottom && a >= bottom - kFiberGuardBytes;
}

}  // namespace cudasim
