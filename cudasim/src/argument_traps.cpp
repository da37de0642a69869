#include "argument_traps.h"

#include <csignal>
#include <cstdint>
#include <cstring>

#include "faults.h"
#include "h100.h"
#include "internal.h"

namespace cudasim {

namespace {

// Whether p is the end of an allocation that `device` may reach: a legal pointer to pass,
// as a loop bound or for p[-1].
bool is_end_of_reachable_allocation(int device, const void* p) {
  const char* c = static_cast<const char*>(p);
  const PointerInfo before = find_pointer(c - 1);
  return before.region != Region::Unknown && before.region != Region::Freed && before.base + before.size == c &&
         device_can_access(device, c - 1, 1, nullptr);
}

}  // namespace

std::vector<TrappedArg> trap_unreachable_pointers(const KernelLaunch& l, int device) {
  std::vector<TrappedArg> traps;
  for (const PointerArg& a : l.pointer_args) {
    std::string why;
    if (device_can_access(device, a.value, 0, &why) || is_end_of_reachable_allocation(device, a.value)) continue;
    int slot = 0;
    const void* trap = trap_pointer(a.value, &slot);
    if (!trap) {
      for (const TrappedArg& t : traps) release_trap(t.slot);
      throw AsyncError(cudaErrorIllegalAddress, std::string("kernel '") + l.name + "' argument " +
                                                    std::to_string(a.position) + " points to " + why);
    }
    std::memcpy(a.slot, &trap, sizeof trap);
    traps.push_back({slot, a.position, a.value, why});
  }
  return traps;
}

std::string describe_stack_overflow(const std::string& who) {
  return who + " overflowed its stack: more than " + std::to_string(h100::kLocalBytesPerThread / 1024) +
         " KiB of local memory, the most a thread may use on sm_90";
}

std::string describe_fault(const std::string& who, const std::vector<TrappedArg>& traps) {
  const void* address = t_fault.address;
  int slot = 0;
  std::ptrdiff_t offset = 0;
  if (find_trap(address, &slot, &offset)) {
    for (const TrappedArg& a : traps) {
      if (a.slot != slot) continue;
      offset -= static_cast<std::ptrdiff_t>(reinterpret_cast<uintptr_t>(a.value) & 0xfffu);
      return who + " dereferenced argument " + std::to_string(a.position) + " (" + pointer_text(a.value) +
             (offset ? ", at byte offset " + std::to_string(offset) : std::string()) + "), which points to " + a.why;
    }
  }
  if (in_guard(t_fault.fiber_stack, address)) return describe_stack_overflow(who);
  return who + " accessed " + pointer_text(address) + ", which is not memory the device can reach (" +
         (t_fault.signal == SIGBUS ? "SIGBUS" : "SIGSEGV") + " on the host)";
}

}  // namespace cudasim
