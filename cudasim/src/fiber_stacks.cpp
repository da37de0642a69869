// Fiber stacks with guard regions, pooled across host threads, and unguarded stacks with a
// canary for when the pool cannot grow.
#include "fiber_stacks.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <new>
#include <set>
#include <vector>

#include <cudasim/cudasim.h>

namespace cudasim {

namespace {

// Successive stacks differ in length by a page and a cache line (a cycle of 16), so that
// their tops, where the threads of a block keep their hot frames, do not all fall in the
// same cache sets as equally spaced, equally long stacks would.
constexpr unsigned kColours = 16;
constexpr size_t kLongestStack = kFiberStackBytes + (kColours - 1) * 4096;

// A guarded stack costs the process two memory mappings, and Linux allows 65530 by default
// (vm.max_map_count), while a block of 1024 threads that all wait needs 1024 stacks on each
// host thread running it. So at most a quarter of the limit's worth of guarded stacks is
// mapped, and they are shared: a host thread keeps a few for itself and gives the rest to a
// process-wide pool, so that a stack is unguarded only while that many are in use at once.
// Then stacks come in unguarded runs of 32 (one mapping per run), each with a canary below
// the depth every stack gives, checked when the stack comes back: an overflow that wrote it
// fails the block, where a guard region would have faulted at once.
constexpr unsigned kRun = 32;
constexpr size_t kKeptPerThread = 32;

size_t mapping_budget() {
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

struct GuardedPool {
  std::mutex mutex;
  std::vector<StackBounds> free;
  size_t made = 0;                                     // never unmapped
  std::atomic<size_t> in_use{0};                       // handed out now
  std::atomic<size_t> limit{static_cast<size_t>(-1)};  // cudasimSetGuardedStackLimit
  std::set<const char*> runs;                          // of unguarded stacks (sorted: a return looks its stack up)
  std::atomic<bool> any_runs{false};
};

GuardedPool& guarded_pool() {
  static GuardedPool* p = new GuardedPool;  // stream workers may take stacks during static destruction
  return *p;
}

// Mappings are never unmapped: a host thread's own stacks live as long as the thread (the
// block pool's threads and stream workers never end).
struct ThreadStacks {
  std::vector<StackBounds> guarded;  // at most kKeptPerThread
  std::vector<StackBounds> unguarded;
  char* run = nullptr;  // unguarded stacks not handed out yet
  unsigned made = 0;
  unsigned run_left = 0;
  std::vector<StackBounds> overflowed;  // canaries found written, not yet reported
};
thread_local ThreadStacks t_stacks;

// The canary: a word pattern that depends on the address, so that no copy of it elsewhere
// and no single repeated value reads as intact.
uint64_t canary_word(const uint64_t* at) { return 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(at); }

// [begin, end) of the canary of an unguarded stack: from its bottom up to kCanaryBytes
// above the depth of the shortest colour.
void canary_range(const StackBounds& s, uint64_t** begin, uint64_t** end) {
  char* bottom = const_cast<char*>(static_cast<const char*>(s.bottom));
  char* top = bottom + s.size;
  *begin = reinterpret_cast<uint64_t*>(bottom);
  *end = reinterpret_cast<uint64_t*>(top - (kFiberStackBytes - kCanaryBytes));
}

void write_canary(const StackBounds& s) {
  uint64_t *p, *end;
  canary_range(s, &p, &end);
  for (; p < end; ++p) *p = canary_word(p);
}

bool canary_intact(const StackBounds& s) {
  uint64_t *p, *end;
  canary_range(s, &p, &end);
  for (; p < end; ++p)
    if (*p != canary_word(p)) return false;
  return true;
}

bool is_unguarded(const StackBounds& s) {
  GuardedPool& pool = guarded_pool();
  if (!pool.any_runs.load(std::memory_order_acquire)) return false;
  const char* bottom = static_cast<const char*>(s.bottom);
  std::lock_guard<std::mutex> lock(pool.mutex);
  // The last run starting at or below the stack: every return looks up, and a chain of
  // co-resident 1024-thread blocks makes thousands of runs, so no scan over all of them.
  auto after = pool.runs.upper_bound(bottom);
  if (after == pool.runs.begin()) return false;
  return bottom < *std::prev(after) + kRun * kLongestStack;
}

StackBounds map_guarded(unsigned colour) {
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

// A guarded stack when fewer than the limit are in use: this thread's, the pool's, or a new
// one while the mapping budget lasts.
bool take_guarded(StackBounds* s) {
  GuardedPool& pool = guarded_pool();
  if (pool.in_use.fetch_add(1) >= pool.limit.load()) {
    pool.in_use.fetch_sub(1);
    return false;
  }
  if (!t_stacks.guarded.empty()) {
    *s = t_stacks.guarded.back();
    t_stacks.guarded.pop_back();
    return true;
  }
  bool make = false;
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.free.empty()) {
      *s = pool.free.back();
      pool.free.pop_back();
      return true;
    }
    if (pool.made < mapping_budget()) {
      ++pool.made;
      make = true;
    }
  }
  if (make) {
    *s = map_guarded(t_stacks.made++ % kColours);
    return true;
  }
  pool.in_use.fetch_sub(1);
  return false;
}

StackBounds take_unguarded() {
  if (!t_stacks.unguarded.empty()) {
    const StackBounds s = t_stacks.unguarded.back();
    t_stacks.unguarded.pop_back();
    return s;
  }
  if (t_stacks.run_left == 0) {
    void* p =
        mmap(nullptr, kRun * kLongestStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    t_stacks.run = static_cast<char*>(p);
    t_stacks.run_left = kRun;
    GuardedPool& pool = guarded_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.runs.insert(t_stacks.run);
    pool.any_runs.store(true, std::memory_order_release);
  }
  const unsigned colour = t_stacks.made++ % kColours;
  char* bottom = t_stacks.run;
  t_stacks.run += kLongestStack;
  --t_stacks.run_left;
  const StackBounds s{bottom, kLongestStack - (kColours - 1 - colour) * 4096 - colour * 64};
  write_canary(s);
  return s;
}

}  // namespace

boost::context::stack_context take_stack() {
  StackBounds s;
  if (!take_guarded(&s)) s = take_unguarded();
  boost::context::stack_context sc;
  sc.size = s.size;
  sc.sp = const_cast<char*>(static_cast<const char*>(s.bottom)) + s.size;
  return sc;
}

void return_stack(const StackBounds& stack) {
  if (is_unguarded(stack)) {
    if (!canary_intact(stack)) {
      t_stacks.overflowed.push_back(stack);
      write_canary(stack);
    }
    t_stacks.unguarded.push_back(stack);
    return;
  }
  GuardedPool& pool = guarded_pool();
  pool.in_use.fetch_sub(1);
  if (t_stacks.guarded.size() < kKeptPerThread) {
    t_stacks.guarded.push_back(stack);
    return;
  }
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.push_back(stack);
}

bool in_guard(const StackBounds& stack, const void* address) {
  const char* a = static_cast<const char*>(address);
  const char* bottom = static_cast<const char*>(stack.bottom);
  return stack.bottom && a < bottom && a >= bottom - kFiberGuardBytes;
}

bool take_overflowed_stack(StackBounds* stack) {
  if (t_stacks.overflowed.empty()) return false;
  *stack = t_stacks.overflowed.back();
  t_stacks.overflowed.pop_back();
  return true;
}

}  // namespace cudasim

extern "C" void cudasimSetGuardedStackLimit(size_t stacks) { cudasim::guarded_pool().limit.store(stacks); }
