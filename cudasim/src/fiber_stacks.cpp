// Fiber stacks with guard regions, pooled per host thread.
#include "fiber_stacks.h"

#include <sys/mman.h>

#include <new>
#include <vector>

namespace cudasim {

namespace {

// Mappings are never unmapped: the pool of a host thread lives as long as the thread (the
// block pool's threads and stream workers never end).
struct StackPool {
  std::vector<StackBounds> free;
  unsigned mapped = 0;
};
thread_local StackPool t_pool;

// Successive stacks differ in length by a page and a cache line (a cycle of 16), so that
// their tops, where the threads of a block keep their hot frames, do not all fall in the
// same cache sets as equally spaced, equally long stacks would.
constexpr unsigned kColours = 16;

StackBounds map_stack() {
  const unsigned colour = t_pool.mapped++ % kColours;
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

}  // namespace

boost::context::stack_context take_stack() {
  StackBounds s;
  if (!t_pool.free.empty()) {
    s = t_pool.free.back();
    t_pool.free.pop_back();
  } else {
    s = map_stack();
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
