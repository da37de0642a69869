#pragma once
// Deadlines for the waits of stores, the control channel and its sockets: a point on the
// steady clock, computed once so that a wait in several steps never waits longer in total.
#include <chrono>

namespace wick::distributed {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// "No deadline": only used by threads that another thread wakes by shutting the socket down.
inline constexpr Deadline kNoDeadline = Deadline::max();

// Deadline `timeout` from now, saturating instead of overflowing for huge timeouts.
inline Deadline deadline_after(std::chrono::milliseconds timeout) {
  auto now = Clock::now();
  if (timeout.count() < 0) return now;
  if (timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(kNoDeadline - now)) return kNoDeadline;
  return now + timeout;
}

}  // namespace wick::distributed
