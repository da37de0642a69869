#pragma once
// One block being run: its simulated threads, their fibers and what each waits for. Shared
// by the executor (scheduling, barriers, faults) and the warp exchanges (warp.cpp); not seen
// outside the simulator's sources.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <boost/context/fiber.hpp>

#include <cudasim/device.h>
#include <cudasim/launch.h>

#include "fiber_stacks.h"

namespace cudasim {

constexpr int kWarp = 32;

// A cp.async that a simulated thread has issued and not yet completed (tensor_core.cpp).
struct AsyncCopy {
  void* dst;
  const void* src;
  int copy_bytes;
  int src_bytes;  // the rest of copy_bytes is zero-filled
};

// One lane's deposit in a warp gather (warp_gather): a tensor-core instruction's operands.
struct GatherRecord {
  alignas(16) unsigned char bytes[48];
};

enum class State : uint8_t { Unstarted, Running, Ready, AtBarrier, AtWarp, Exited };

struct SimThread {
  State state = State::Unstarted;
  uint3 idx{};
  boost::context::fiber fiber;  // while suspended
  StackBounds stack{};          // that fiber's stack
  // at a barrier
  const char* barrier_file = nullptr;
  unsigned barrier_line = 0;
  BarrierKind barrier_kind = BarrierKind::Plain;
  int predicate = 0;
  // at a warp exchange
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0;
  uint64_t value = 0;
  int arg = 0;
  int width = kWarp;
  uint64_t result = 0;  // of the barrier or exchange, read when released
  bool preempted = false;  // suspended by preemption (executor.cpp) in its own code, not where it waits
  // cp.async state, per simulated thread as in PTX: copies in issue order, the committed
  // ones first (async_groups: the size of each committed group, oldest first).
  std::vector<AsyncCopy> async_copies;
  std::vector<uint32_t> async_groups;
};

// A warp exchange some lanes wait in: its kind, its mask and who has arrived.
struct OpenExchange {
  WarpOp op;
  uint32_t mask;
  uint32_t arrived;
};

struct WarpState {
  uint32_t exists = 0;  // lanes the block has (a last, partial warp has fewer)
  uint32_t exited = 0;
  std::vector<OpenExchange> open;
  // Gathers (sized at the warp's first): lanes deposit into gather_in; completing the gather
  // swaps it with gather_out, which the lanes then read. The next gather completes only once
  // all 32 lanes have arrived at it, so gather_out outlives every lane's reading.
  std::vector<GatherRecord> gather_in, gather_out;
  uint32_t live() const { return exists & ~exited; }
};

// Thrown into a simulated thread to end it when its block has failed.
struct BlockFailed {};

struct BlockRun {
  const KernelLaunch* launch = nullptr;
  uint3 block_idx{};
  int n = 0;
  std::vector<SimThread> threads;
  std::vector<WarpState> warps;
  int next_unstarted = 0;
  int exited = 0;
  int at_barrier = 0;
  std::deque<int> ready;           // released threads to resume
  boost::context::fiber scheduler;  // the scheduler's continuation while fibers run
  int current = -1;
  int switching_from = -1;  // the thread whose fiber switches away; -1 the scheduler, -2 a fiber that ended
  std::string error;
  cudaError_t code = cudaErrorLaunchFailure;  // what the block's error makes the device's sticky error

  void fail(const std::string& what, cudaError_t c = cudaErrorLaunchFailure) {
    if (error.empty()) {
      error = "kernel '" + std::string(launch->name) + "' block " + coords(block_idx) + ": " + what;
      code = c;
    }
  }
  // Fails the block and ends the calling simulated thread.
  [[noreturn]] void fail_now(const std::string& what, cudaError_t c = cudaErrorLaunchFailure) {
    fail(what, c);
    throw BlockFailed{};
  }
  std::string thread_name(int i) const { return "thread " + coords(threads[static_cast<size_t>(i)].idx); }
  static std::string coords(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
  }
};

// The block running on this host thread (nullptr outside kernels).
extern constinit thread_local BlockRun* t_block;

// Whether this host thread runs a kernel's own code, where a simulated thread may be
// preempted (executor.cpp): true from the kernel's entry to its return, false inside the
// simulator's functions that kernels call, which change the block's state.
extern constinit thread_local bool t_preemptible;

// Held by each simulator function a kernel calls (barriers, warp exchanges, tensor-core
// instructions): no preemption until it returns to the kernel's code.
class SimulatorCode {
 public:
  SimulatorCode() : was_(t_preemptible) { t_preemptible = false; }
  ~SimulatorCode() { t_preemptible = was_; }
  SimulatorCode(const SimulatorCode&) = delete;
  SimulatorCode& operator=(const SimulatorCode&) = delete;

 private:
  bool was_;
};

[[noreturn]] void called_outside_a_kernel(const char* what);

inline BlockRun& current_block(const char* what) {
  if (!t_block) called_outside_a_kernel(what);
  return *t_block;
}

// Suspends simulated thread i (the running one) until released; throws BlockFailed when
// the block failed meanwhile.
void suspend(BlockRun& b, int i);

// Makes a waiting thread runnable again (the running thread just carries on).
inline void release(BlockRun& b, int i) {
  SimThread& t = b.threads[static_cast<size_t>(i)];
  if (i == b.current) {
    t.state = State::Running;
  } else {
    t.state = State::Ready;
    b.ready.push_back(i);
  }
}

// warp.cpp: the running thread's part in a warp-collective instruction of all 32 lanes
// (.sync.aligned: mma, ldmatrix). Deposits `bytes` (at most sizeof(GatherRecord)) of
// `record` and returns, once every lane of the warp has arrived at `op`, the 32 lanes'
// records by lane, valid until the caller's next gather. A warp with fewer than 32 threads,
// or lanes that exit instead of arriving, fail the block.
const GatherRecord* warp_gather(WarpOp op, const void* record, size_t bytes);
// warp.cpp: a lane has exited, so exchanges that waited for it may complete.
void lane_exited(BlockRun& b, int i);
// warp.cpp: the exchanges still open, for the report of a block that cannot progress.
std::string describe_open_exchanges(const BlockRun& b);

}  // namespace cudasim
