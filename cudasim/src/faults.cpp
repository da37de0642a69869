// Memory faults in kernel code as CUDA errors (faults.h).
#include "faults.h"

#include <cudasim/cudasim.h>

#include <signal.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define CUDASIM_FAULT_HANDLER 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDASIM_FAULT_HANDLER 0
#endif
#endif
#ifndef CUDASIM_FAULT_HANDLER
#define CUDASIM_FAULT_HANDLER 1
#endif

namespace cudasim {

constinit thread_local FaultState t_fault{};

namespace {

struct sigaction g_previous_segv;
struct sigaction g_previous_bus;

void pass_on(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = sig == SIGSEGV ? g_previous_segv : g_previous_bus;
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  } else {
    // Returning re-executes the access, which now takes the default action.
    sigaction(sig, &previous, nullptr);
  }
}

void on_fault(int sig, siginfo_t* info, void* context) {
  if (!t_fault.armed || !t_fault.in_fiber) {
    pass_on(sig, info, context);
    return;
  }
  t_fault.signal = sig;
  t_fault.address = info->si_addr;
  t_fault.in_fiber = false;
  siglongjmp(t_fault.jump, 1);
}

void install_handler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  // The preemption signal (executor.cpp) must not switch fibers inside the fault handler,
  // which runs on the host thread's alternate stack.
  sigaddset(&sa.sa_mask, SIGURG);
  sigaction(SIGSEGV, &sa, &g_previous_segv);
  sigaction(SIGBUS, &sa, &g_previous_bus);
}

// --- trapped pointer arguments ------------------------------------------------------------

constexpr int kTrapSlots = 64;
constexpr size_t kTrapSlotBytes = size_t{1} << 30;  // a trapped pointer may be indexed +-512 MiB

struct Traps {
  std::mutex mutex;
  char* base = nullptr;
  bool tried = false;
  std::vector<int> free;
};

Traps& traps() {
  static Traps* t = new Traps;  // stream workers may use it during static destruction
  return *t;
}

}  // namespace

bool fault_recovery_available() { return CUDASIM_FAULT_HANDLER != 0; }

extern "C" int cudasimCatchesKernelFaults(void) { return CUDASIM_FAULT_HANDLER; }

void prepare_fault_recovery() {
  if (!CUDASIM_FAULT_HANDLER) return;
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  thread_local bool has_stack = false;
  if (!has_stack) {
    // The handler must not run on the stack that overflowed.
    constexpr size_t kBytes = 64 * 1024;
    stack_t ss;
    ss.ss_sp = std::malloc(kBytes);  // kept for the thread's life
    ss.ss_size = kBytes;
    ss.ss_flags = 0;
    if (ss.ss_sp && sigaltstack(&ss, nullptr) == 0) has_stack = true;
  }
}

void finish_fault_recovery() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGSEGV);
  sigaddset(&set, SIGBUS);
  sigaddset(&set, SIGURG);  // blocked by the fault handler (sa_mask) against preemption
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

const void* trap_pointer(const void* value, int* slot) {
  Traps& t = traps();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (!t.tried) {
    t.tried = true;
    void* p = mmap(nullptr, kTrapSlots * kTrapSlotBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      t.base = static_cast<char*>(p);
      for (int s = kTrapSlots - 1; s >= 0; --s) t.free.push_back(s);
    }
  }
  if (!CUDASIM_FAULT_HANDLER || !t.base || t.free.empty()) return nullptr;
  *slot = t.free.back();
  t.free.pop_back();
  const auto page_offset = reinterpret_cast<uintptr_t>(value) & 0xfffu;
  return t.base + static_cast<size_t>(*slot) * kTrapSlotBytes + kTrapSlotBytes / 2 + page_offset;
}

void release_trap(int slot) {
  Traps& t = traps();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.free.push_back(slot);
}

bool find_trap(const void* address, int* slot, std::ptrdiff_t* offset) {
  Traps& t = traps();
  std::lock_guard<std::mutex> lock(t.mutex);
  const char* a = static_cast<const char*>(address);
  if (!t.base || a < t.base || a >= t.base + kTrapSlots * kTrapSlotBytes) return false;
  const size_t from_base = static_cast<size_t>(a - t.base);
  *slot = static_cast<int>(from_base / kTrapSlotBytes);
  // The trapped pointer sits in the middle of its slot; its page offset is not known here,
  // so the offset is measured from the slot's middle page and corrected by the caller.
  *offset = static_cast<std::ptrdiff_t>(from_base % kTrapSlotBytes) - static_cast<std::ptrdiff_t>(kTrapSlotBytes / 2);
  return true;
}

}  // namespace cudasim
