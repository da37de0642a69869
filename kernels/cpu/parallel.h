#pragma once
// Multi-threading for CPU kernels: ranges are cut over the threads of cpu_thread_pool()
// (see thread_pool.h for why not OpenMP's), with exceptions carried back to the caller.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <type_traits>

#include "kernels/cpu/thread_pool.h"

namespace wick::cpu {

// Threads a kernel may use: set_num_threads's (wick/tensor/threads.h), OMP_NUM_THREADS by default.
int cpu_threads();

inline constexpr int kChunksPerThread = 4;

// Calls f(begin, end) on disjoint ranges covering [begin, end), in parallel when the range
// is larger than `grain` elements. Nested calls (and calls while another thread holds the
// pool) run serially on the calling thread.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  if (n <= grain || ThreadPool::in_task()) {
    f(begin, end);
    return;
  }
  const int max_threads = cpu_threads();
  const int64_t pieces = (n + grain - 1) / std::max<int64_t>(grain, 1);
  if (max_threads <= 1 || pieces <= 1) {
    f(begin, end);
    return;
  }
  // A few chunks per thread: threads claim them as they come, so a thread the scheduler
  // runs late (a busy machine) still takes a share instead of leaving all to the others.
  const int chunks = static_cast<int>(std::min<int64_t>(pieces, int64_t{kChunksPerThread} * max_threads));
  struct Call {
    std::remove_reference_t<F>* f;
    int64_t begin, end, chunk;
    std::mutex error_mutex;
    std::exception_ptr error;
  } call{&f, begin, end, (n + chunks - 1) / chunks, {}, {}};
  auto task = [](void* context, int index) {
    Call& c = *static_cast<Call*>(context);
    const int64_t b = c.begin + index * c.chunk, e = std::min(c.end, b + c.chunk);
    if (b >= e) return;
    try {
      (*c.f)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(c.error_mutex);
      if (!c.error) c.error = std::current_exception();
    }
  };
  if (!cpu_thread_pool().run(chunks, task, &call)) {
    f(begin, end);
    return;
  }
  if (call.error) std::rethrow_exception(call.error);
}

// Elements per thread below which threading costs more than it saves, for cheap ops.
inline constexpr int64_t kElementwiseGrain = 32768;

}  // namespace wick::cpu
