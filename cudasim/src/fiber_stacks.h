#pragma once
// The stacks the simulated threads run on. A GPU thread may use 512 KiB of local memory on
// sm_90, so each stack holds that much (plus room for the simulator's own frames), with a
// guard region below it that faults when a thread uses more: the fault is reported as the
// thread's error (faults.cpp) instead of overwriting a neighbour. Guarded stacks are pooled
// across host threads; only while more fibers are live than the process may map guarded
// stacks for do new ones come without a guard, and those carry a canary instead
// (fiber_stacks.cpp).
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
// What every stack gives its fiber before the canary of an unguarded one begins.
inline constexpr size_t kCanaryBytes = 32 * 1024;

// A stack for a new fiber on this host thread, and its return once the fiber ended or was
// abandoned (on the same host thread). Returning an unguarded stack checks its canary.
boost::context::stack_context take_stack();
void return_stack(const StackBounds& stack);

// Whether `address` lies in the guard region below `stack`.
bool in_guard(const StackBounds& stack, const void* address);

// The stack whose canary a return on this host thread found overwritten since the last
// call (the canary is restored): true once per such stack, so that the block that ran on it
// fails with a stack overflow.
bool take_overflowed_stack(StackBounds* stack);

}  // namespace cudasim
