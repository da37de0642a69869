#pragma once
// What the executor's preemption (executor.cpp, "forward progress") needs from the system:
// a per-thread timer that sends SIGURG, and where the C and C++ runtime's code is.
#include <ctime>

#include <signal.h>

namespace cudasim {

// Code where a preempted thread could hold a lock that the next thread on this host thread
// takes: the C and C++ runtime, the dynamic loader, Boost.Context. find_runtime_code finds
// its executable ranges, once, before the first timer starts; in_runtime_code says whether
// a signal context's program counter is in them.
void find_runtime_code();
bool in_runtime_code(const void* context);

// A timer that sends this host thread SIGURG: on its CPU time (the ticks), or on the clock
// (a stuck thread's next look, once crowded: CPU timers expire only at the kernel's
// scheduler tick, which would let a stuck thread spin for milliseconds each time).
struct PreemptionTimer {
  clockid_t clock;
  timer_t id{};
  bool created = false;
  long interval = 0;
  explicit PreemptionTimer(clockid_t c) : clock(c) {}
  ~PreemptionTimer() {
    if (created) timer_delete(id);
  }
  // Every `ns` (0: stop); once only when `repeat` is false.
  void set(long ns, bool repeat = true);
};

}  // namespace cudasim
