#pragma once
// Memory faults in kernel code become CUDA errors instead of ending the process. A GPU that
// touches an address it may not reports cudaErrorIllegalAddress (sticky) and the program
// goes on; here such an access is a SIGSEGV or SIGBUS on the host thread running the block.
// While a simulated thread runs, a handler (on an alternate signal stack, since the fault
// may be a stack overflow) jumps back to the block's scheduler, which fails the block with a
// description of the address: a wild address, the guard region below a thread's stack, or a
// pointer argument the device could not reach (see trap_pointer).
//
// Faults anywhere else (host code, the simulator's scheduler) go to the handler that was
// installed before, or end the process as usual. Under AddressSanitizer, which reports bad
// accesses itself, no handler is installed.
#include <csetjmp>
#include <cstddef>
#include <cstdint>

#include "fiber_stacks.h"

namespace cudasim {

// Zero-initialised, so that other files reach it without a TLS initialisation call.
struct FaultState {
  sigjmp_buf jump;          // the scheduler's recovery point (run_block)
  bool armed;               // a recovery point is set on this host thread
  bool in_fiber;            // a simulated thread runs on this host thread now
  StackBounds fiber_stack;  // the stack of that thread's fiber
  int signal;               // set by the handler
  const void* address;
};
extern constinit thread_local FaultState t_fault;

// Whether faults in kernel code are turned into errors in this build.
bool fault_recovery_available();

// Installs the handler (once per process) and this host thread's alternate signal stack.
void prepare_fault_recovery();

// After the jump back to the recovery point: unblocks the signals the handler left blocked.
void finish_fault_recovery();

// Pointer arguments that the device cannot reach (host memory, freed memory, another
// device's memory without peer access) are legal to pass and fault only when dereferenced.
// The launch's copy of such an argument is replaced by an address in a reserved,
// inaccessible region (the same offset within a 4 KiB page, so alignment is kept), one slot
// per argument, so that a fault there names the argument. Returns nullptr when no slot is
// free or the region could not be reserved.
const void* trap_pointer(const void* value, int* slot);
void release_trap(int slot);

// The slot whose region holds `address` and the byte offset from its trapped pointer;
// false when `address` is in no slot.
bool find_trap(const void* address, int* slot, std::ptrdiff_t* offset);

}  // namespace cudasim
