#pragma once
// The threads CPU kernels run on. OpenMP's (libgomp's) idle threads spin for milliseconds
// before they sleep, and its barriers spin too: on a machine where other processes also
// want the cores, a spinning thread takes the time slice the thread with the work needs,
// and a training step of the MNIST MLP ran 10x slower than with OMP_WAIT_POLICY=passive.
// That policy can only be set before libgomp loads, so the kernels use this pool instead:
// its threads spin for a few tens of microseconds (enough to catch the next op of a
// training step) and then sleep on a futex.
//
// The pool has omp_get_max_threads() (OMP_NUM_THREADS) threads, or more once set_num_threads
// (wick/tensor/threads.h) asks for more.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace wick::cpu {

class ThreadPool {
 public:
  // A pool of `threads` threads in all: the caller of run() and threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(context, i) for every i in [0, n) and returns when all have
  // returned. Indices are claimed one at a time by the caller and by the workers that wake
  // in time, so a worker the scheduler has not run yet delays nothing: the caller takes its
  // share. Returns false without running anything when the pool cannot take the call
  // (another thread is using it, this is a task of the pool already, or a child process
  // after fork); the caller then does the work itself. Tasks must not throw.
  using Task = void (*)(void* context, int index);
  bool run(int n, Task task, void* context);

  // True on a thread that is running a task of a pool (nested work runs serially).
  static bool in_task();

 private:
  void worker_loop();
  void claim_and_run(Task task, void* context, int count);

  std::vector<std::thread> workers_;
  int owner_;  // the process that started the workers (a child after fork has none)
  std::mutex busy_;                      // held by the caller of run() for the whole call
  std::mutex call_;                      // guards the description of the call below
  std::atomic<uint32_t> generation_{0};  // bumped (under call_) once per run()
  std::atomic<bool> stop_{false};
  // The current call; workers join it (under call_) only while it is open.
  Task task_ = nullptr;
  void* context_ = nullptr;
  int count_ = 0;
  bool open_ = false;
  std::atomic<int> next_{0};        // the next unclaimed index
  std::atomic<uint32_t> pending_{0};  // indices not finished yet
  std::atomic<uint32_t> joined_{0};   // workers inside the current call
};

// The process's pool for CPU kernels, started on first use; replaced by a larger one when
// set_num_threads asks for more threads than it has.
ThreadPool& cpu_thread_pool();

}  // namespace wick::cpu
