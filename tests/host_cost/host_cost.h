#pragma once
// Counting what a call costs the host (host_cost_test.cpp replaces operator new and wraps
// pthread_mutex_lock for the whole test binary).
#include <functional>

namespace wick::test {

struct Cost {
  long allocs, locks;
};

// What one call of f costs on the calling thread, after warm-up calls (caches filled,
// handles made).
Cost cost_of(const std::function<void()>& f);
void report(const char* what, Cost c);

}  // namespace wick::test
