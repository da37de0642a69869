// Forward progress as on Volta and later GPUs: a thread that spins waiting for another
// thread of its block, or for another block that is resident at the same time, completes,
// whatever the number of host threads. Each case runs in a child process (a death test
// re-run of this binary, so CUDASIM_THREADS takes effect there) under an alarm: a
// regression fails the test after the limit instead of hanging the suite.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernel_test_support.h"

namespace {

using namespace cudasim_tests;

#if defined(__SANITIZE_ADDRESS__)
#define SKIP_WITHOUT_PREEMPTION() GTEST_SKIP() << "the simulator does not preempt simulated threads under AddressSanitizer"
#else
#define SKIP_WITHOUT_PREEMPTION() (void)0
#endif

// Runs `body` in a fresh child process with CUDASIM_THREADS set as given (0: unset) and
// `seconds` to finish in; the child exits 0 when every check in `body` held.
template <class F>
void in_child_within(int seconds, int threads, F body) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (threads > 0) ::setenv("CUDASIM_THREADS", std::to_string(threads).c_str(), 1);
        ::alarm(static_cast<unsigned>(seconds));  // SIGALRM ends a hung child
        const bool ok = body();
        std::fflush(stdout);
        std::_Exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Thread 0 waits for a flag that the block's last thread sets: with the block's threads
// run one after another until one waits, thread 0 held the host thread for ever.
__global__ void wait_for_a_later_thread(volatile int* flag, int* seen) {
  if (threadIdx.x == 0) {
    while (*flag == 0) {
    }
    seen[0] = 1;
  }
  if (threadIdx.x == blockDim.x - 1) *flag = 1;
}

TEST(ForwardProgress, AThreadSpinningOnAFlagThatALaterThreadOfItsBlockSets) {
  SKIP_WITHOUT_PREEMPTION();
  in_child_within(60, 0, [] {
    DeviceBuffer<int> flag(1), seen(1);
    flag.write({0});
    seen.write({0});
    if (launch(wait_for_a_later_thread, 1, 256, 0, static_cast<volatile int*>(flag.ptr), seen.ptr) != cudaSuccess) return false;
    if (cudaDeviceSynchronize() != cudaSuccess) return false;
    return seen.read()[0] == 1;
  });
}

// Block b waits for block b + 1 (the last one goes first), so every block but the last
// spins until all the later ones have run: legal on a GPU when all of them are resident
// at once, which 264 blocks of 1024 threads are on an H100 (2 per multiprocessor).
__global__ void wait_for_the_next_block(volatile int* done, int* order, int* counter) {
  if (threadIdx.x != 0) return;
  const unsigned b = blockIdx.x;
  if (b + 1 < gridDim.x)
    while (done[b + 1] == 0) {
    }
  order[b] = atomicAdd(counter, 1);
  __threadfence();
  done[b] = 1;
}

bool chain_completes(int blocks, int threads_per_block) {
  DeviceBuffer<int> done(static_cast<size_t>(blocks)), order(static_cast<size_t>(blocks)), counter(1);
  done.write(std::vector<int>(static_cast<size_t>(blocks), 0));
  counter.write({0});
  if (launch(wait_for_the_next_block, blocks, threads_per_block, 0, static_cast<volatile int*>(done.ptr), order.ptr,
             counter.ptr) != cudaSuccess)
    return false;
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("%s\n", cudasimLastErrorDetail());
    return false;
  }
  const std::vector<int> h = order.read();
  for (int b = 0; b < blocks; ++b)
    if (h[static_cast<size_t>(b)] != blocks - 1 - b) return false;
  return true;
}

TEST(ForwardProgress, AChainOf264ResidentBlocksEachWaitingForTheNext) {
  SKIP_WITHOUT_PREEMPTION();
  // About 7 s on an idle 2-core VM; 300 s leaves room for a CI machine running other suites
  // beside it (a hang still fails, later).
  in_child_within(300, 0, [] { return chain_completes(264, 1024); });
}

TEST(ForwardProgress, TwoBlocksOnOneHostThread) {
  SKIP_WITHOUT_PREEMPTION();
  in_child_within(60, 1, [] { return chain_completes(2, 32); });
}

}  // namespace
