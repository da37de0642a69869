#pragma once
// Pointer arguments a kernel's device cannot reach: each is replaced for the launch by a trap
// address (faults.h), so that the fault it causes, if the kernel dereferences it, names the
// argument and why it is out of reach, as cudaErrorIllegalAddress.
#include <string>
#include <vector>

#include <cudasim/launch.h>

namespace cudasim {

// A pointer argument replaced by a trap address (faults.h) for this launch.
struct TrappedArg {
  int slot = 0;
  int position = 0;
  const void* value = nullptr;
  std::string why;
};

// Replaces each pointer argument of `l` that `device` cannot reach by a trap address; throws
// the launch's error at once when none can be had. The caller releases the traps' slots.
std::vector<TrappedArg> trap_unreachable_pointers(const KernelLaunch& l, int device);

// What the memory fault this host thread caught (faults.h: t_fault) means, in words, for
// simulated thread `who`: a trapped argument, a stack overflow or a wild address.
std::string describe_fault(const std::string& who, const std::vector<TrappedArg>& traps);

// "`who` overflowed its stack: ...", how a stack overflow is reported.
std::string describe_stack_overflow(const std::string& who);

}  // namespace cudasim
