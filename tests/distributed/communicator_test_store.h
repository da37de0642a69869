#pragma once
// Test helpers for the communicator tests: the in-process store shared by threads and a
// runner that gives each of N threads its own rank.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <wick/distributed/in_process_store.h>
#include <wick/tensor/error.h>

namespace wick::distributed::test {

// The store of ranks that are threads of one process.
using MapStore = InProcessStore;

// Runs body(rank) on `size` threads and rethrows the first exception any of them threw.
inline void run_ranks(int size, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace wick::distributed::test
