#pragma once
// The stacks the simulated threads run on. A GPU thread may use 512 KiB of local memory on
// sm_90, so each stack holds that much (plus room for the simulator's own frames), with a
// guard region below it that faults when a thread uses more: the fault is reported as the
// thread's error (faults.cpp) instead of overwriting a neighbour. (Beyond some thousands of
// stacks in the process, new ones come without a guard: fiber_stacks.cpp.)
#include <cstddef>

#include <boost/context/stack_context.hpp>

namespace cudasim {

// Where a fiber's stack lies: [bottom, bottom + size).
struct StackBounds {
  const void* bottom;
  size_t size;
};

inline constexpr size_t kFiberStackBytes = (512 + 64) * 1024;
inline constexpr size_t kFiberGuardBytes = 1024 * 1024;

// A stack from this host thread's pool (created on first need, kept for reuse: blocks come
// by the thousand and each waiting thread needs one).
boost::context::stack_context take_stack();
void return_stack(const StackBounds& stack);

// Whether `address` lies in the guard region below `stack`.
bool in_guard(const StackBounds& stack, const void* address);

}  // namespace cudasim
