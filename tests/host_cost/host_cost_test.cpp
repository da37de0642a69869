// The host cost of a small op, counted instead of timed (issue 20, cause 5): the heap
// allocations and mutex acquisitions one call makes on the calling thread, on the CPU and
// on CUDA (the simulator in CI: the same host code as on a GPU). The bounds are what the
// op needs today; a change that adds an allocation or a lock to the path fails here.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>

#include <wick/tensor/cuda.h>
#include <wick/wick.h>

#include "tests/host_cost/host_cost.h"

namespace {
thread_local bool t_counting = false;
thread_local long t_allocs = 0;
thread_local long t_locks = 0;
}  // namespace

void* operator new(std::size_t n) {
  if (t_counting) ++t_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (t_counting) ++t_allocs;
  const std::size_t align = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

extern "C" int __real_pthread_mutex_lock(pthread_mutex_t* m);
extern "C" int __wrap_pthread_mutex_lock(pthread_mutex_t* m) {
  if (t_counting) ++t_locks;
  return __real_pthread_mutex_lock(m);
}

namespace wick::test {

Cost cost_of(const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  t_allocs = t_locks = 0;
  t_counting = true;
  f();
  t_counting = false;
  return {t_allocs, t_locks};
}

void report(const char* what, Cost c) { std::printf("%-40s %3ld heap allocations, %3ld mutex locks\n", what, c.allocs, c.locks); }

namespace {

// The bounds: what each op costs now (a tensor's Storage is the one allocation on the CPU;
// under the simulator the CUDA counts include its own launch bookkeeping, which
// HostCost.TheSimulatorsOwnLaunch counts alone). Before issue 20: 22 and 33 allocations.
constexpr long kCpuAddAllocs = 1, kCpuAddLocks = 2;
constexpr long kCudaAddAllocs = 8, kCudaAddLocks = 8;

TEST(HostCost, CountsWhatItShouldCount) {
  // The counters work: a vector allocates once, a mutex locks once.
  const Cost c = cost_of([] {
    std::vector<int> v(10);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
  });
  EXPECT_EQ(c.allocs, 1);
  EXPECT_EQ(c.locks, 1);
}

TEST(HostCost, SmallCpuOps) {
  const Tensor a = randn({1024}), b = randn({1024});
  const Cost add_cost = cost_of([&] { Tensor c = add(a, b); });
  const Cost sum_cost = cost_of([&] { Tensor c = sum(a); });
  report("cpu add of 1024 floats", add_cost);
  report("cpu sum of 1024 floats", sum_cost);
  EXPECT_LE(add_cost.allocs, kCpuAddAllocs);
  EXPECT_LE(add_cost.locks, kCpuAddLocks);
}

TEST(HostCost, SmallCudaOps) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Tensor a = randn({1024}).cuda(), b = randn({1024}).cuda();
  const Cost add_cost = cost_of([&] { Tensor c = add(a, b); });
  const Cost sum_cost = cost_of([&] { Tensor c = sum(a); });
  report("cuda add of 1024 floats", add_cost);
  report("cuda sum of 1024 floats", sum_cost);
  cuda::synchronize();
  EXPECT_LE(add_cost.allocs, kCudaAddAllocs);
  EXPECT_LE(add_cost.locks, kCudaAddLocks);
}

}  // namespace
}  // namespace wick::test
