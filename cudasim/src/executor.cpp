// Kernel execution. The blocks of a grid run on a pool of host threads (the stream's worker
// helps), several at a time, so atomics and races between blocks are real. The threads of
// one block run as cooperative fibers on one host thread: a thread runs until it finishes or
// waits (at __syncthreads or a warp exchange), and the next one starts or resumes. Threads
// that never wait share one fiber and run as a plain loop, so a kernel that does not
// synchronise costs a function call per thread.
//
// Rules checked (a violation fails the launch with an error naming the kernel, the block
// and the threads; the device's error is then sticky, as after a fault on a GPU):
// - __syncthreads() completes when every thread of the block that has not exited waits at
//   it (threads that returned early count as arrived, as on Volta and later GPUs); threads
//   waiting at different __syncthreads() calls are an error, and so is a block in which
//   nothing can make progress (a barrier that some thread never reaches because it waits
//   for a warp exchange, or the reverse);
// - warp exchanges follow PTX's rules (warp.cpp);
// - a memory fault in kernel code (a wild address, a pointer argument the device cannot
//   reach, more stack than a GPU thread may have) is cudaErrorIllegalAddress (faults.h).
//
// Launch checks (synchronous, not sticky, as CUDA's): the block and grid limits and the
// shared memory limits of an H100 (h100.h, function_attributes.h).
//
// Forward progress, as Volta and later GPUs give it (independent thread scheduling, and the
// blocks that fit on the device at once all running): a simulated thread that spins waiting
// for something another thread or block does would otherwise hold its host thread for ever.
// - Preemption: each host thread running a grid's blocks has a CPU-time timer (SIGURG every
//   kTickNs of its CPU). A simulated thread that has run kPatientTicks ticks without waiting
//   while another thread of its block could run is suspended where it is (only in the
//   kernel's own code: not inside the simulator's functions, which hold SimulatorCode, nor
//   in the C and C++ runtime, which may hold locks) and the other runs.
// - Co-residency: when a grid has blocks not yet started and every block it runs has one
//   simulated thread left that runs alone without waiting (stuck, kPatientTicks ticks),
//   the grid gets more host threads, doubling, up to the blocks an H100 holds at once for
//   that launch (threads, blocks and shared memory per multiprocessor). While it has them,
//   stuck threads sleep between short slices of CPU, so that the others get the cores.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csetjmp>
#include <csignal>
#include <cerrno>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include <cudasim/device.h>
#include <cudasim/launch.h>

#include "argument_traps.h"
#include "block.h"
#include "faults.h"
#include "function_attributes.h"
#include "h100.h"
#include "internal.h"
#include "kernel_image.h"
#include "preemption_support.h"

namespace cudasim {

thread_local uint3 t_thread_idx;
thread_local uint3 t_block_idx;
thread_local dim3 t_block_dim;
thread_local dim3 t_grid_dim;
thread_local unsigned char* t_dynamic_shared = nullptr;
constinit thread_local BlockRun* t_block = nullptr;
constinit thread_local bool t_preemptible = false;

namespace {

namespace ctx = boost::context;

// Where the host thread's own stack is, for AddressSanitizer: every switch between the host
// thread's stack and a fiber's is announced to it (Boost's fcontext fibers do not), or it
// mistakes the other stack for garbage when an exception unwinds.
thread_local StackBounds t_host_stack;      // learned when the first fiber starts
thread_local StackBounds t_last_allocated;  // the stack of the fiber just created

#if defined(__SANITIZE_ADDRESS__)
void before_switch(void** fake_stack, StackBounds to) {
  __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size);
}
void after_switch(void* fake_stack, StackBounds* from) {
  __sanitizer_finish_switch_fiber(fake_stack, from ? &from->bottom : nullptr, from ? &from->size : nullptr);
}
#else
void before_switch(void**, StackBounds) {}
void after_switch(void*, StackBounds*) {}
#endif

struct PoolStackAllocator {
  ctx::stack_context allocate() {
    ctx::stack_context sc = take_stack();
    t_last_allocated = {static_cast<char*>(sc.sp) - sc.size, sc.size};
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept { return_stack({static_cast<char*>(sc.sp) - sc.size, sc.size}); }
};

void release_barrier(BlockRun& b) {
  const SimThread* site = nullptr;
  int first = -1, arrived = 0, true_count = 0;
  for (int j = 0; j < b.n; ++j) {
    SimThread& t = b.threads[static_cast<size_t>(j)];
    if (t.state != State::AtBarrier) continue;
    ++arrived;
    true_count += t.predicate;
    if (first < 0) {
      first = j;
      site = &t;
    } else if (t.barrier_line != site->barrier_line ||
               (t.barrier_file != site->barrier_file && std::strcmp(t.barrier_file, site->barrier_file) != 0)) {
      b.fail("threads wait at different __syncthreads() calls (" + b.thread_name(first) + " and " + b.thread_name(j) +
             ", lines " + std::to_string(site->barrier_line) + " and " + std::to_string(t.barrier_line) + " of " +
             t.barrier_file + "): a barrier in divergent code");
      return;
    }
  }
  uint64_t result = 0;
  switch (site ? site->barrier_kind : BarrierKind::Plain) {
    case BarrierKind::Plain: break;
    case BarrierKind::Count: result = static_cast<uint64_t>(true_count); break;
    case BarrierKind::And: result = true_count == arrived; break;
    case BarrierKind::Or: result = true_count > 0; break;
  }
  b.at_barrier = 0;
  for (int j = 0; j < b.n; ++j) {
    SimThread& t = b.threads[static_cast<size_t>(j)];
    if (t.state != State::AtBarrier) continue;
    t.result = result;
    release(b, j);
  }
}

// Switches and thread starts on this host thread: a tick (preemption) that sees the count
// unchanged knows the running simulated thread has not waited since the last one.
constinit thread_local unsigned long t_switches = 0;

void run_thread(BlockRun& b, int i, StackBounds stack) {
  SimThread& t = b.threads[static_cast<size_t>(i)];
  t.state = State::Running;
  t.stack = stack;
  b.current = i;
  t_thread_idx = t.idx;
  ++t_switches;
  try {
    t_preemptible = true;
    b.launch->run_thread();
    t_preemptible = false;
  } catch (const BlockFailed&) {
    t_preemptible = false;
  } catch (const std::exception& e) {
    t_preemptible = false;
    b.fail(b.thread_name(i) + " threw: " + e.what());
  }
  t.state = State::Exited;
  ++b.exited;
  if (!b.error.empty()) return;
  lane_exited(b, i);
  if (!b.error.empty()) return;
  if (b.at_barrier > 0 && b.at_barrier == b.n - b.exited) release_barrier(b);
}

// The next fiber to run, when there is one: a released thread's, or a new one for the next
// thread that has not started.
bool take_runnable(BlockRun& b, ctx::fiber* f, StackBounds* stack);

// Keeps the continuation of the context that just switched to the running one: the
// scheduler's, or that of the thread that suspended (nothing when that fiber ended).
void keep_continuation(BlockRun& b, ctx::fiber&& c) {
  if (!c) return;
  if (b.switching_from == -1) {
    b.scheduler = std::move(c);
  } else {
    b.threads[static_cast<size_t>(b.switching_from)].fiber = std::move(c);
  }
}

// Switches from the running context to `to`, whose stack is `stack` (the host thread's for
// the scheduler); `from` is the simulated thread that suspends, -1 for the scheduler.
// Returns the continuation of whoever switches back.
ctx::fiber switch_to(BlockRun& b, ctx::fiber&& to, StackBounds stack, int from, bool to_fiber) {
  b.switching_from = from;
  ++t_switches;
  void* fake_stack = nullptr;
  before_switch(&fake_stack, stack);
  t_fault.fiber_stack = stack;
  t_fault.in_fiber = to_fiber;
  ctx::fiber c = std::move(to).resume();
  after_switch(fake_stack, nullptr);
  return c;
}

// A fiber runs threads that have not started until one waits (the fiber then belongs to
// it) or none is left; then it hands the host thread to the next runnable fiber directly,
// or to the scheduler.
ctx::fiber starter(ctx::fiber&& came_from) {
  const StackBounds mine = t_last_allocated;
  BlockRun& b = *t_block;
  after_switch(nullptr, b.switching_from == -1 ? &t_host_stack : nullptr);
  keep_continuation(b, std::move(came_from));
  t_fault.fiber_stack = mine;
  t_fault.in_fiber = true;
  while (b.error.empty() && b.next_unstarted < b.n) run_thread(b, b.next_unstarted++, mine);
  // This fiber ends; whoever runs next receives no continuation from it.
  b.switching_from = -2;
  ctx::fiber next;
  StackBounds stack;
  if (take_runnable(b, &next, &stack)) {
    before_switch(nullptr, stack);
    t_fault.fiber_stack = stack;
    return next;
  }
  before_switch(nullptr, t_host_stack);
  t_fault.in_fiber = false;
  return std::move(b.scheduler);
}

bool take_runnable(BlockRun& b, ctx::fiber* f, StackBounds* stack) {
  if (!b.error.empty()) return false;
  if (!b.ready.empty()) {
    const int j = b.ready.front();
    b.ready.pop_front();
    *f = std::move(b.threads[static_cast<size_t>(j)].fiber);
    *stack = b.threads[static_cast<size_t>(j)].stack;
    return true;
  }
  if (b.next_unstarted < b.n) {
    *f = ctx::fiber(std::allocator_arg, PoolStackAllocator{}, starter);
    *stack = t_last_allocated;
    return true;
  }
  return false;
}

std::string stall_report(const BlockRun& b) {
  int barrier = 0, warp = 0;
  int first_barrier = -1;
  for (int j = 0; j < b.n; ++j) {
    const SimThread& t = b.threads[static_cast<size_t>(j)];
    if (t.state == State::AtBarrier && barrier++ == 0) first_barrier = j;
    if (t.state == State::AtWarp) ++warp;
  }
  std::ostringstream os;
  os << "no thread can make progress: " << barrier << " wait at __syncthreads()";
  if (first_barrier >= 0) os << " (first " << b.thread_name(first_barrier) << ")";
  os << ", " << warp << " wait at a warp exchange";
  const std::string open = describe_open_exchanges(b);
  if (!open.empty()) os << " (" << open << ")";
  os << ", " << b.exited << " of " << b.n << " exited: a barrier or warp exchange not reached by every thread it needs";
  return os.str();
}

// Runs the block's threads until none can run. Kept out of run_block, whose sigsetjmp would
// make the compiler keep this loop's variables in memory.
[[gnu::noinline]] void schedule(BlockRun& b) {
  ctx::fiber f;
  StackBounds stack;
  while (take_runnable(b, &f, &stack)) {
    keep_continuation(b, switch_to(b, std::move(f), stack, -1, true));
    t_fault.in_fiber = false;
  }
}

// Lets each thread that still waits end: a BlockFailed is thrown where it waits (its frames
// unwind normally), then its fiber returns.
[[gnu::noinline]] void unwind_waiting(BlockRun& b) {
  for (SimThread& t : b.threads) {
    if (!t.fiber) continue;
    if (t.preempted) {
      // Suspended inside the preemption signal's handler, in the kernel's own code: resumed,
      // it would go on (a spinning thread for ever), and an exception cannot leave a signal
      // handler. Its fiber is abandoned, as a faulting thread's is, and its stack reused.
      ::new (static_cast<void*>(&t.fiber)) ctx::fiber();
      return_stack(t.stack);
      t.preempted = false;
      continue;
    }
    keep_continuation(b, switch_to(b, std::move(t.fiber), t.stack, -1, true));
    t_fault.in_fiber = false;
  }
}

// Fails the block when one of its fibers gave back an unguarded stack whose canary it had
// overwritten (fiber_stacks.h): the overflow a guard region would have caught at the access.
// Threads that never wait share a fiber, so the last thread on it stands for them.
void report_unguarded_overflows(BlockRun& b) {
  StackBounds s;
  while (take_overflowed_stack(&s)) {
    if (!b.error.empty()) continue;
    int last = -1;
    for (int j = 0; j < b.n; ++j)
      if (b.threads[static_cast<size_t>(j)].stack.bottom == s.bottom) last = j;
    const std::string who =
        last < 0 ? std::string("a thread") : b.thread_name(last) + " (or a thread before it on its fiber)";
    b.fail(describe_stack_overflow(who) + " (found by the canary of an unguarded stack when it ended)",
           cudaErrorIllegalAddress);
  }
}

// Runs one block to the end on this host thread; returns the error ("" when none).
std::string run_block(const KernelLaunch& l, uint3 block_idx, std::vector<unsigned char>& shared,
                      const std::vector<TrappedArg>& traps, cudaError_t* code) {
  BlockRun b;
  b.launch = &l;
  b.block_idx = block_idx;
  const dim3 bd = l.block;
  b.n = static_cast<int>(bd.x * bd.y * bd.z);
  b.threads.resize(static_cast<size_t>(b.n));
  for (int i = 0; i < b.n; ++i) {
    const unsigned u = static_cast<unsigned>(i);
    b.threads[static_cast<size_t>(i)].idx = uint3{u % bd.x, u / bd.x % bd.y, u / (bd.x * bd.y)};
  }
  b.warps.resize(static_cast<size_t>((b.n + kWarp - 1) / kWarp));
  for (size_t w = 0; w < b.warps.size(); ++w) {
    const int lanes = std::min(kWarp, b.n - static_cast<int>(w) * kWarp);
    b.warps[w].exists = lanes == kWarp ? ~0u : (1u << lanes) - 1u;
  }
  if (shared.size() < l.shared_bytes) shared.resize(l.shared_bytes);
  t_block_idx = block_idx;
  t_block_dim = l.block;
  t_grid_dim = l.grid;
  t_dynamic_shared = l.shared_bytes ? shared.data() : nullptr;
  BlockRun* outer = t_block;
  t_block = &b;
  prepare_fault_recovery();
  t_fault.armed = true;
  if (sigsetjmp(t_fault.jump, 0) != 0) {
    // A simulated thread faulted. Its fiber is abandoned where it stood and its stack goes
    // back to the pool. The scheduler's continuation (the state of this host stack when it
    // last switched to a fiber, which the jump here has replaced) is dropped without being
    // destroyed, since destroying it would resume it. The block fails; the other threads
    // unwind below as after any failure.
    finish_fault_recovery();
    t_preemptible = false;  // the jump left the kernel's code without passing run_thread
    ::new (static_cast<void*>(&b.scheduler)) ctx::fiber();
    return_stack(t_fault.fiber_stack);
    b.fail(describe_fault(b.current >= 0 ? b.thread_name(b.current) : std::string("a thread"), traps),
           cudaErrorIllegalAddress);
    if (b.current >= 0) {
      b.threads[static_cast<size_t>(b.current)].state = State::Exited;
      ++b.exited;
    }
  }
  schedule(b);
  if (b.error.empty() && b.exited < b.n) b.fail(stall_report(b));
  unwind_waiting(b);
  report_unguarded_overflows(b);
  t_fault.armed = false;
  t_block = outer;
  *code = b.code;
  return b.error;
}

// --- forward progress (see the top of the file) ---------------------------------------------

#if defined(__SANITIZE_ADDRESS__) || !(defined(__x86_64__) || defined(__aarch64__))
// AddressSanitizer would need every switch from the handler announced, and the interrupted
// instruction is read per architecture: without them, no preemption (and no co-residency).
constexpr bool kPreemption = false;
#else
constexpr bool kPreemption = true;
#endif

constexpr long kTickNs = 20'000'000;        // CPU time between ticks while running blocks
constexpr long kCrowdedTickNs = 2'000'000;  // the same for a grid that was given more host threads
constexpr int kPatientTicks = 5;            // a thread runs this long before another gets a turn
constexpr long kStuckSliceNs = 100'000;     // what a stuck thread runs between sleeps, once crowded
constexpr long kLongestSleepUs = 32'000;

struct Grid;
// The grid whose blocks this host thread runs (nullptr between grids).
constinit thread_local Grid* t_grid = nullptr;

// One grid being executed: blocks are claimed one at a time by whoever helps.
struct Grid {
  const KernelLaunch* launch = nullptr;
  int device = 0;
  const std::vector<TrappedArg>* traps = nullptr;
  uint64_t total = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::condition_variable all_finished;
  std::string error;
  cudaError_t code = cudaErrorLaunchFailure;
  // Co-residency: the blocks an H100 runs at once for this launch, the blocks running now,
  // how many of those have a thread stuck, and whether host threads were added for it.
  int resident_limit = 1;
  std::atomic<int> running{0};
  std::atomic<int> stuck{0};
  std::atomic<bool> crowded{false};
  std::atomic<int> starting{0};  // host threads added and not yet running

  // Runs blocks until none is left; returns whether it ran any.
  bool help();

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    all_finished.wait(lock, [&] { return finished.load() >= total; });
  }
};

thread_local PreemptionTimer t_timer(CLOCK_THREAD_CPUTIME_ID);
thread_local PreemptionTimer t_wake(CLOCK_MONOTONIC);

// What a tick found last on this host thread.
constinit thread_local unsigned long t_seen_switches = 0;
constinit thread_local int t_idle_ticks = 0;  // ticks without a switch
constinit thread_local bool t_counted_stuck = false;
constinit thread_local long t_sleep_us = 0;

void no_longer_stuck() {
  if (t_counted_stuck && t_grid) t_grid->stuck.fetch_sub(1);
  t_counted_stuck = false;
  t_sleep_us = 0;
}

// Suspends the running simulated thread, from the signal handler, as if it waited, and runs
// another of its block; returns when it is resumed.
void yield_from_handler(BlockRun& b) {
  ctx::fiber next;
  StackBounds stack;
  if (!take_runnable(b, &next, &stack)) return;
  // The signal stays blocked until the handler returns; the fibers that run meanwhile must
  // be preemptible too.
  sigset_t urg;
  sigemptyset(&urg);
  sigaddset(&urg, SIGURG);
  pthread_sigmask(SIG_UNBLOCK, &urg, nullptr);
  const int i = b.current;
  SimThread& me = b.threads[static_cast<size_t>(i)];
  me.state = State::Ready;
  me.preempted = true;
  b.ready.push_back(i);
  t_preemptible = false;
  keep_continuation(b, switch_to(b, std::move(next), stack, i, true));
  t_fault.fiber_stack = me.stack;
  t_fault.in_fiber = true;
  b.current = i;
  t_thread_idx = me.idx;
  me.preempted = false;
  me.state = State::Running;
  t_seen_switches = t_switches;
  t_idle_ticks = 0;
  t_preemptible = true;
}

void on_tick(void* context) {
  if (t_switches != t_seen_switches) {
    t_seen_switches = t_switches;
    t_idle_ticks = 0;
    no_longer_stuck();
    return;
  }
  ++t_idle_ticks;
  BlockRun* b = t_block;
  Grid* g = t_grid;
  if (!b || !g || !t_preemptible || !t_fault.in_fiber || !b->error.empty() || in_runtime_code(context)) return;
  const bool crowded = g->crowded.load(std::memory_order_relaxed);
  if (t_idle_ticks < (crowded ? 1 : kPatientTicks)) return;
  if (!b->ready.empty() || b->next_unstarted < b->n) {
    yield_from_handler(*b);
    return;
  }
  // Alone in its block and not waiting: stuck, or a long computation; only other blocks can help.
  if (!t_counted_stuck) {
    t_counted_stuck = true;
    g->stuck.fetch_add(1);
  }
  if (crowded) {
    // Other host threads run blocks too: give them the cores, and look again soon.
    t_sleep_us = std::min(std::max(2 * t_sleep_us, 500L), kLongestSleepUs);
    timespec pause{t_sleep_us / 1'000'000, (t_sleep_us % 1'000'000) * 1000};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
    t_wake.set(kStuckSliceNs, false);
  }
}

struct sigaction g_previous_urg;

void on_preemption_signal(int sig, siginfo_t* info, void* context) {
  if (info->si_code != SI_TIMER) {  // not ours: whoever handled SIGURG before
    if (g_previous_urg.sa_flags & SA_SIGINFO) {
      if (g_previous_urg.sa_sigaction) g_previous_urg.sa_sigaction(sig, info, context);
    } else if (g_previous_urg.sa_handler != SIG_DFL && g_previous_urg.sa_handler != SIG_IGN) {
      g_previous_urg.sa_handler(sig);
    }
    return;
  }
  const int saved = errno;
  on_tick(context);
  errno = saved;
}

void install_preemption() {
  find_runtime_code();
  struct sigaction sa {};
  sa.sa_sigaction = on_preemption_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGURG, &sa, &g_previous_urg);
}

bool Grid::help() {
  thread_local std::vector<unsigned char> shared;
  bool ran = false;
  t_grid = this;
  if (kPreemption) t_timer.set(crowded.load() ? kCrowdedTickNs : kTickNs);
  for (;;) {
    const uint64_t k = next.fetch_add(1);
    if (k >= total) break;
    ran = true;
    if (!failed.load()) {
      const dim3 g = launch->grid;
      const uint3 idx{static_cast<unsigned>(k % g.x), static_cast<unsigned>(k / g.x % g.y),
                      static_cast<unsigned>(k / (uint64_t{g.x} * g.y))};
      cudaError_t c = cudaSuccess;
      running.fetch_add(1);
      // The grid's first block learns which device functions' __shared__ variables a kernel
      // uses (kernel_image.h), the first time the kernel runs.
      SharedUseProbe probe;
      const bool probing = k == 0 && probe.begin(launch->function);
      std::string e = run_block(*launch, idx, shared, *traps, &c);
      if (probing && probe.end() > 0 && e.empty())
        e = shared_memory_refusal(launch->name, device, launch->function, launch->shared_bytes, &c);
      no_longer_stuck();
      running.fetch_sub(1);
      if (!e.empty()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (error.empty()) {
          error = std::move(e);
          code = c;
        }
        failed = true;
      }
    }
    if (finished.fetch_add(1) + 1 == total) {
      std::lock_guard<std::mutex> lock(mutex);
      all_finished.notify_all();
    }
  }
  if (kPreemption) {
    t_timer.set(0);
    if (t_wake.created) t_wake.set(0, false);
  }
  t_grid = nullptr;
  return ran;
}

// The blocks of this launch an H100 holds at once: per multiprocessor, at most 32 blocks,
// 2048 threads (in whole warps) and 228 KiB of shared memory (1 KiB reserved per block).
int resident_blocks(const KernelLaunch& l, size_t static_shared) {
  const uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
  const uint64_t warps = (threads + h100::kWarpSize - 1) / h100::kWarpSize;
  uint64_t per_sm = h100::kMaxBlocksPerMultiprocessor;
  per_sm = std::min<uint64_t>(per_sm, h100::kMaxThreadsPerMultiprocessor / (warps * h100::kWarpSize));
  const uint64_t shared = static_shared + l.shared_bytes;
  if (shared > 0)
    per_sm = std::min<uint64_t>(per_sm, h100::kSharedPerMultiprocessor / (shared + h100::kReservedSharedPerBlock));
  return static_cast<int>(std::max<uint64_t>(per_sm, 1) * h100::kMultiprocessors);
}

// The host threads that run blocks: as many as the machine has cores (CUDASIM_THREADS),
// and more for a grid whose blocks wait for blocks that have not started (co-residency).
class BlockPool {
 public:
  BlockPool() {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("CUDASIM_THREADS")) n = std::atoi(env);
    n = std::clamp(n, 1, 64) - 1;  // the stream's worker that launches a grid helps too
    for (int i = 0; i < n; ++i) std::thread([this] { work(); }).detach();
    if (kPreemption) {
      install_preemption();
      std::thread([this] { watch(); }).detach();
    }
  }

  void run(const std::shared_ptr<Grid>& g) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      grids_.push_back(g);
    }
    wake_.notify_all();
    g->help();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      grids_.erase(std::find(grids_.begin(), grids_.end(), g));
    }
    g->wait();  // blocks claimed by pool threads may still run
  }

 private:
  void work() {
    for (;;) {
      std::shared_ptr<Grid> g;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] {
          for (auto& c : grids_)
            if (c->next.load() < c->total) return true;
          return false;
        });
        for (auto& c : grids_)
          if (c->next.load() < c->total) g = c;
      }
      // Blocks are claimed without the lock, so the grid seen above may be taken already.
      if (g) g->help();
    }
  }

  // Every tick of wall time: a grid with blocks not started whose running blocks are all
  // stuck gets as many more host threads as it runs blocks, up to its resident limit. They
  // end when the grid has no block left to start.
  void watch() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(kTickNs));
      std::lock_guard<std::mutex> lock(mutex_);
      for (const std::shared_ptr<Grid>& g : grids_) {
        const int running = g->running.load();
        if (g->next.load() >= g->total || running == 0 || g->stuck.load() < running || g->starting.load() > 0) continue;
        const int more = std::min(running, g->resident_limit - running);
        if (more <= 0) continue;
        g->crowded = true;
        for (int i = 0; i < more; ++i) {
          g->starting.fetch_add(1);
          try {
            std::thread([g] {
              g->starting.fetch_sub(1);
              g->help();
            }).detach();
          } catch (const std::system_error&) {  // no more threads to be had: the grid runs with what it has
            g->starting.fetch_sub(1);
            break;
          }
        }
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<Grid>> grids_;
};

BlockPool& block_pool() {
  static BlockPool* pool = new BlockPool;  // its threads are detached and never end
  return *pool;
}

std::string dims(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

}  // namespace

void called_outside_a_kernel(const char* what) {
  std::fprintf(stderr, "cudasim: %s called outside a kernel\n", what);
  std::abort();
}

// Hands the host thread from simulated thread i to the next runnable fiber directly (one
// switch, not two through the scheduler), or to the scheduler when none can run; returns
// when i is resumed.
void suspend(BlockRun& b, int i) {
  SimThread& me = b.threads[static_cast<size_t>(i)];
  ctx::fiber next;
  StackBounds stack;
  ctx::fiber came_from = take_runnable(b, &next, &stack) ? switch_to(b, std::move(next), stack, i, true)
                                                         : switch_to(b, std::move(b.scheduler), t_host_stack, i, false);
  keep_continuation(b, std::move(came_from));
  t_fault.fiber_stack = me.stack;
  t_fault.in_fiber = true;
  b.current = i;
  t_thread_idx = me.idx;
  if (!b.error.empty()) throw BlockFailed{};
}

int syncthreads(const char* file, unsigned line, BarrierKind kind, int predicate) {
  const SimulatorCode simulator_code;
  BlockRun& b = current_block("__syncthreads");
  const int i = b.current;
  SimThread& t = b.threads[static_cast<size_t>(i)];
  t.state = State::AtBarrier;
  t.barrier_file = file;
  t.barrier_line = line;
  t.barrier_kind = kind;
  t.predicate = predicate != 0;
  ++b.at_barrier;
  if (b.at_barrier == b.n - b.exited) {
    release_barrier(b);
    if (!b.error.empty()) throw BlockFailed{};
    return static_cast<int>(t.result);
  }
  suspend(b, i);
  return static_cast<int>(t.result);
}

namespace {
std::atomic<unsigned long long> g_kernel_launches{0};
thread_local const char* t_last_launch_name = "";
std::atomic<bool> g_execute_kernels{true};
std::atomic<unsigned long long> g_host_synchronizations{0};
}  // namespace

void count_host_synchronization() { g_host_synchronizations.fetch_add(1, std::memory_order_relaxed); }

cudaError_t launch_kernel(KernelLaunch l) {
  const int device = current_device();
  if (cudaError_t e = sticky_error(device)) return record_error(e);
  // Built only for an error: a launch's bookkeeping must not cost more for a longer name
  // (tests/host_cost counts the heap allocations of a launch).
  const auto name = [&l] { return std::string("kernel '") + l.name + "'"; };
  const uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
  if (threads == 0 || threads > h100::kMaxThreadsPerBlock || l.block.x > unsigned(h100::kMaxBlockDim[0]) ||
      l.block.y > unsigned(h100::kMaxBlockDim[1]) || l.block.z > unsigned(h100::kMaxBlockDim[2]))
    return record_error(cudaErrorInvalidConfiguration,
                        name() + ": block " + dims(l.block) + " (at most 1024 threads, z <= 64)");
  if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0 || l.grid.x > unsigned(h100::kMaxGridDim[0]) ||
      l.grid.y > unsigned(h100::kMaxGridDim[1]) || l.grid.z > unsigned(h100::kMaxGridDim[2]))
    return record_error(cudaErrorInvalidConfiguration, name() + ": grid " + dims(l.grid) + " (y and z at most 65535)");
  cudaError_t shared_code = cudaSuccess;
  if (std::string why = shared_memory_refusal(l.name, device, l.function, l.shared_bytes, &shared_code); !why.empty())
    return record_error(shared_code, why);
  Stream* s = find_stream(l.stream);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, name() + ": not a live stream");
  const int run_device = stream_device(s);
  if (cudaError_t e = capture_invalidated(l.name, s)) return e;
  g_kernel_launches.fetch_add(1, std::memory_order_relaxed);
  t_last_launch_name = l.name;
  if (!g_execute_kernels.load(std::memory_order_relaxed)) return cudaSuccess;
  const void* function = l.function;
  auto launch = std::make_shared<KernelLaunch>(std::move(l));
  // The queue's description is short (no allocation); a failure names the kernel itself.
  // The work runs again at each launch of a graph that captured it.
  enqueue_node(
      s, "a kernel",
      [launch, run_device] {
        try {
          const std::vector<TrappedArg> traps = trap_unreachable_pointers(*launch, run_device);
          auto g = std::make_shared<Grid>();
          g->launch = launch.get();
          g->device = run_device;
          g->traps = &traps;
          g->total = uint64_t{launch->grid.x} * launch->grid.y * launch->grid.z;
          g->resident_limit = resident_blocks(*launch, shared_limits(run_device, launch->function).static_bytes);
          block_pool().run(g);
          for (const TrappedArg& t : traps) release_trap(t.slot);
          if (g->failed) throw AsyncError(g->code, g->error);
          const std::string overwritten =
              check_kernel_guards(run_device, launch->name, launch->pointer_args.data(), launch->pointer_args.size());
          if (!overwritten.empty()) throw AsyncError(cudaErrorIllegalAddress, overwritten);
        } catch (const AsyncError&) {
          throw;
        } catch (const std::exception& e) {
          throw std::runtime_error(std::string("kernel '") + launch->name + "': " + e.what());
        }
      },
      function);
  return cudaSuccess;
}

}  // namespace cudasim

extern "C" unsigned long long cudasimKernelLaunches(void) {
  return cudasim::g_kernel_launches.load(std::memory_order_relaxed);
}

extern "C" const char* cudasimLastLaunchName(void) { return cudasim::t_last_launch_name; }

extern "C" unsigned long long cudasimHostSynchronizations(void) {
  return cudasim::g_host_synchronizations.load(std::memory_order_relaxed);
}

extern "C" void cudasimSetKernelExecution(int run) { cudasim::g_execute_kernels.store(run != 0); }
