#pragma once
// Multi-threading for CPU kernels: OpenMP underneath, with exceptions carried out of the
// parallel region (an exception must not cross an OpenMP boundary).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>

namespace wick::cpu {

// Calls f(begin, end) on disjoint ranges covering [begin, end), in parallel when the range
// is larger than `grain` elements. Nested calls run serially.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int max_threads = omp_get_max_threads();
  if (n <= grain || max_threads == 1 || omp_in_parallel()) {
    f(begin, end);
    return;
  }
  int nt = static_cast<int>(std::min<int64_t>(max_threads, (n + grain - 1) / grain));
  std::exception_ptr error;
#pragma omp parallel num_threads(nt)
  {
    int tid = omp_get_thread_num();
    int threads = omp_get_num_threads();
    int64_t chunk = (n + threads - 1) / threads;
    int64_t b = begin + tid * chunk;
    int64_t e = std::min(end, b + chunk);
    if (b < e) {
      try {
        f(b, e);
      } catch (...) {
#pragma omp critical(wick_parallel_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// Elements per thread below which threading costs more than it saves, for cheap ops.
inline constexpr int64_t kElementwiseGrain = 32768;

}  // namespace wick::cpu
