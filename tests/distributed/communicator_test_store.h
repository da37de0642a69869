#pragma once
// Test helpers for the communicator tests (Gloo and NCCL alike): the in-process store shared
// by threads, a runner that gives each of N threads its own rank, each rank's input and the
// float64 reference of a reduction over the ranks.
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
#include <algorithm>

#include "tests/support/reference.h"

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/comm/in_process_store.h>
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

// Rank r's input (on the CPU): random values that keep sums of 3 ranks exact for the
// integer dtypes.
inline Tensor rank_input(int rank, const Shape& shape, DType dtype, uint64_t salt) {
  const bool small = dtype == DType::UInt8;
  return wick::test::random(shape, dtype, 1000 * salt + 17 * rank + 1, small ? 0 : -50, small ? 60 : 50);
}

// The reduction over `size` ranks of rank_input, in float64.
inline std::vector<double> reduce_reference(int size, const Shape& shape, DType dtype, uint64_t salt, ReduceOp op) {
  std::vector<double> out = wick::test::values(rank_input(0, shape, dtype, salt));
  for (int r = 1; r < size; ++r) {
    std::vector<double> v = wick::test::values(rank_input(r, shape, dtype, salt));
    for (size_t i = 0; i < out.size(); ++i) {
      if (op == ReduceOp::Max) out[i] = std::max(out[i], v[i]);
      else if (op == ReduceOp::Min) out[i] = std::min(out[i], v[i]);
      else out[i] += v[i];
    }
  }
  if (op == ReduceOp::Mean)
    for (double& x : out) x /= static_cast<double>(size);
  return out;
}

}  // namespace wick::distributed::test
