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
// - a warp exchange completes when every lane named in its mask arrives with the same mask
//   and operation; the calling lane must be in the mask, and a lane that has exited, does
//   not exist or is read without being in the mask is an error.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include <cudasim/device.h>
#include <cudasim/launch.h>

#include "internal.h"

namespace cudasim {

thread_local uint3 t_thread_idx;
thread_local uint3 t_block_idx;
thread_local dim3 t_block_dim;
thread_local dim3 t_grid_dim;
thread_local unsigned char* t_dynamic_shared = nullptr;

namespace {

namespace ctx = boost::context;

constexpr int kWarp = 32;
constexpr size_t kStackBytes = 256 * 1024;  // reserved, not touched: kernels use little stack
constexpr size_t kMaxSharedBytes = 48 * 1024;  // the default limit per block on an H100

// Fiber stacks are recycled per host thread: a block creates one fiber per thread that
// waits, and blocks come by the thousand.
struct StackPool {
  std::vector<void*> free;
  ~StackPool() {
    for (void* p : free) std::free(p);
  }
  ctx::stack_context allocate() {
    void* p = nullptr;
    if (!free.empty()) {
      p = free.back();
      free.pop_back();
    } else {
      p = std::malloc(kStackBytes);
      if (!p) throw std::bad_alloc();
    }
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = static_cast<char*>(p) + kStackBytes;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) { free.push_back(static_cast<char*>(sc.sp) - sc.size); }
};
thread_local StackPool t_stacks;

// Where a fiber's stack lies, for AddressSanitizer: every switch between the host thread's
// stack and a fiber's is announced to it (Boost's fcontext fibers do not), or it mistakes
// the other stack for garbage when an exception unwinds.
struct StackBounds {
  const void* bottom = nullptr;
  size_t size = 0;
};
thread_local StackBounds t_host_stack;      // learned when the first fiber starts
thread_local StackBounds t_last_allocated;  // the stack of the fiber just created

#if defined(__SANITIZE_ADDRESS__)
void before_switch(void** fake_stack, StackBounds to) { __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size); }
void after_switch(void* fake_stack, StackBounds* from) {
  __sanitizer_finish_switch_fiber(fake_stack, from ? &from->bottom : nullptr, from ? &from->size : nullptr);
}
#else
void before_switch(void**, StackBounds) {}
void after_switch(void*, StackBounds*) {}
#endif

struct PoolStackAllocator {
  ctx::stack_context allocate() {
    ctx::stack_context sc = t_stacks.allocate();
    t_last_allocated = {static_cast<char*>(sc.sp) - sc.size, sc.size};
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept { t_stacks.deallocate(sc); }
};

// Thrown into a simulated thread to end it when its block has failed.
struct BlockFailed {};

enum class State { Unstarted, Running, Ready, AtBarrier, AtWarp, Exited };

struct SimThread {
  State state = State::Unstarted;
  uint3 idx{};
  ctx::fiber fiber;     // while suspended
  StackBounds stack{};  // that fiber's stack
  const char* barrier_file = nullptr;
  unsigned barrier_line = 0;
  WarpOp op = WarpOp::Sync;
  unsigned mask = 0;
  uint64_t value = 0;
  int arg = 0;
  int width = kWarp;
  uint64_t result = 0;
};

const char* op_name(WarpOp op) {
  switch (op) {
    case WarpOp::Index: return "__shfl_sync";
    case WarpOp::Up: return "__shfl_up_sync";
    case WarpOp::Down: return "__shfl_down_sync";
    case WarpOp::Xor: return "__shfl_xor_sync";
    case WarpOp::Ballot: return "__ballot_sync";
    case WarpOp::All: return "__all_sync";
    case WarpOp::Any: return "__any_sync";
    case WarpOp::Sync: return "__syncwarp";
  }
  return "?";
}

std::string coords(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

struct BlockRun {
  const KernelLaunch* launch = nullptr;
  uint3 block_idx{};
  int n = 0;
  std::vector<SimThread> threads;
  int next_unstarted = 0;
  int exited = 0;
  int at_barrier = 0;
  std::vector<uint32_t> warp_arrived;  // lanes waiting at a warp exchange, per warp
  std::deque<int> ready;               // released threads to resume
  ctx::fiber scheduler;                // the scheduler's continuation while a fiber runs
  StackBounds running_stack{};         // the stack of the fiber the scheduler resumed
  int current = -1;
  std::string error;

  void fail(const std::string& what) {
    if (error.empty())
      error = "kernel '" + std::string(launch->name) + "' block " + coords(block_idx) + ": " + what;
  }
  std::string thread_name(int i) const { return "thread " + coords(threads[static_cast<size_t>(i)].idx); }
};

thread_local BlockRun* t_block = nullptr;

BlockRun& current_block(const char* what) {
  if (!t_block) {
    std::fprintf(stderr, "cudasim: %s called outside a kernel\n", what);
    std::abort();
  }
  return *t_block;
}

// Switches from the running simulated thread to the scheduler; returns when resumed.
void suspend(BlockRun& b, int i) {
  void* fake_stack = nullptr;
  before_switch(&fake_stack, t_host_stack);
  b.scheduler = std::move(b.scheduler).resume();
  after_switch(fake_stack, &t_host_stack);
  b.current = i;
  t_thread_idx = b.threads[static_cast<size_t>(i)].idx;
  if (!b.error.empty()) throw BlockFailed{};
}

void release_barrier(BlockRun& b) {
  const SimThread* site = nullptr;
  int first = -1;
  for (int j = 0; j < b.n; ++j) {
    SimThread& t = b.threads[static_cast<size_t>(j)];
    if (t.state != State::AtBarrier) continue;
    if (first < 0) {
      first = j;
      site = &t;
    } else if (t.barrier_line != site->barrier_line || std::strcmp(t.barrier_file, site->barrier_file) != 0) {
      b.fail("threads wait at different __syncthreads() calls (" + b.thread_name(first) + " and " + b.thread_name(j) +
             ", lines " + std::to_string(site->barrier_line) + " and " + std::to_string(t.barrier_line) +
             " of " + t.barrier_file + "): a barrier in divergent code");
      return;
    }
  }
  b.at_barrier = 0;
  for (int j = 0; j < b.n; ++j) {
    SimThread& t = b.threads[static_cast<size_t>(j)];
    if (t.state != State::AtBarrier) continue;
    if (j == b.current) {
      t.state = State::Running;
    } else {
      t.state = State::Ready;
      b.ready.push_back(j);
    }
  }
}

// The lanes that warp exchanges of warp w wait for but that have exited.
void check_exited_lane(BlockRun& b, int i) {
  const int w = i / kWarp, lane = i % kWarp;
  const uint32_t waiting = b.warp_arrived[static_cast<size_t>(w)];
  for (int l = 0; l < kWarp; ++l) {
    if (!(waiting >> l & 1u)) continue;
    const SimThread& t = b.threads[static_cast<size_t>(w * kWarp + l)];
    if (t.mask >> lane & 1u) {
      b.fail(b.thread_name(i) + " exited while " + b.thread_name(w * kWarp + l) + " waits for it in " + op_name(t.op) +
             " (mask 0x" + [&] {
               std::ostringstream os;
               os << std::hex << t.mask;
               return os.str();
             }() + ")");
      return;
    }
  }
}

void run_thread(BlockRun& b, int i) {
  SimThread& t = b.threads[static_cast<size_t>(i)];
  t.state = State::Running;
  b.current = i;
  t_thread_idx = t.idx;
  try {
    b.launch->run_thread();
  } catch (const BlockFailed&) {
  } catch (const std::exception& e) {
    b.fail(b.thread_name(i) + " threw: " + e.what());
  }
  t.state = State::Exited;
  ++b.exited;
  if (!b.error.empty()) return;
  check_exited_lane(b, i);
  if (b.at_barrier > 0 && b.at_barrier == b.n - b.exited) release_barrier(b);
}

ctx::fiber starter(ctx::fiber&& scheduler) {
  after_switch(nullptr, &t_host_stack);
  BlockRun& b = *t_block;
  b.scheduler = std::move(scheduler);
  while (b.error.empty() && b.next_unstarted < b.n) run_thread(b, b.next_unstarted++);
  before_switch(nullptr, t_host_stack);  // this fiber ends
  return std::move(b.scheduler);
}

std::string stall_report(const BlockRun& b) {
  int barrier = 0, warp = 0;
  int first_barrier = -1, first_warp = -1;
  for (int j = 0; j < b.n; ++j) {
    const SimThread& t = b.threads[static_cast<size_t>(j)];
    if (t.state == State::AtBarrier && barrier++ == 0) first_barrier = j;
    if (t.state == State::AtWarp && warp++ == 0) first_warp = j;
  }
  std::ostringstream os;
  os << "no thread can make progress: " << barrier << " wait at __syncthreads()";
  if (first_barrier >= 0) os << " (first " << b.thread_name(first_barrier) << ")";
  os << ", " << warp << " wait at a warp exchange";
  if (first_warp >= 0) {
    const SimThread& t = b.threads[static_cast<size_t>(first_warp)];
    os << " (first " << b.thread_name(first_warp) << " in " << op_name(t.op) << " with mask 0x" << std::hex << t.mask
       << std::dec << ")";
  }
  os << ", " << b.exited << " of " << b.n << " exited: a barrier or warp exchange not reached by every thread it needs";
  return os.str();
}

// Switches to fiber f (whose stack is `stack`) until it waits or ends; a fiber that waits
// is kept by the thread it runs.
void resume(BlockRun& b, ctx::fiber f, StackBounds stack) {
  b.current = -1;
  void* fake_stack = nullptr;
  before_switch(&fake_stack, stack);
  f = std::move(f).resume();
  after_switch(fake_stack, nullptr);
  if (f) {
    SimThread& t = b.threads[static_cast<size_t>(b.current)];
    t.fiber = std::move(f);
    t.stack = stack;
  }
}

// Runs one block to the end on this host thread; returns the error ("" when none).
std::string run_block(const KernelLaunch& l, uint3 block_idx, std::vector<unsigned char>& shared) {
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
  b.warp_arrived.assign(static_cast<size_t>((b.n + kWarp - 1) / kWarp), 0);
  if (shared.size() < l.shared_bytes) shared.resize(l.shared_bytes);
  t_block_idx = block_idx;
  t_block_dim = l.block;
  t_grid_dim = l.grid;
  t_dynamic_shared = l.shared_bytes ? shared.data() : nullptr;
  BlockRun* outer = t_block;
  t_block = &b;
  for (;;) {
    ctx::fiber f;
    StackBounds stack;
    if (!b.ready.empty() && b.error.empty()) {
      const int j = b.ready.front();
      b.ready.pop_front();
      f = std::move(b.threads[static_cast<size_t>(j)].fiber);
      stack = b.threads[static_cast<size_t>(j)].stack;
    } else if (b.next_unstarted < b.n && b.error.empty()) {
      f = ctx::fiber(std::allocator_arg, PoolStackAllocator{}, starter);
      stack = t_last_allocated;
    } else {
      break;
    }
    resume(b, std::move(f), stack);
  }
  if (b.error.empty() && b.exited < b.n) b.fail(stall_report(b));
  // The threads still waiting end by a BlockFailed thrown where they wait (their frames
  // unwind normally), each fiber then returns.
  for (SimThread& t : b.threads)
    if (t.fiber) resume(b, std::move(t.fiber), t.stack);
  t_block = outer;
  return b.error;
}

// One grid being executed: blocks are claimed one at a time by whoever helps.
struct Grid {
  const KernelLaunch* launch = nullptr;
  uint64_t total = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::condition_variable all_finished;
  std::string error;

  // Runs blocks until none is left; returns whether it ran any.
  bool help() {
    thread_local std::vector<unsigned char> shared;
    bool ran = false;
    for (;;) {
      const uint64_t k = next.fetch_add(1);
      if (k >= total) return ran;
      ran = true;
      if (!failed.load()) {
        const dim3 g = launch->grid;
        const uint3 idx{static_cast<unsigned>(k % g.x), static_cast<unsigned>(k / g.x % g.y),
                        static_cast<unsigned>(k / (uint64_t{g.x} * g.y))};
        std::string e = run_block(*launch, idx, shared);
        if (!e.empty()) {
          std::lock_guard<std::mutex> lock(mutex);
          if (error.empty()) error = std::move(e);
          failed = true;
        }
      }
      if (finished.fetch_add(1) + 1 == total) {
        std::lock_guard<std::mutex> lock(mutex);
        all_finished.notify_all();
      }
    }
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    all_finished.wait(lock, [&] { return finished.load() >= total; });
  }
};

// The host threads that run blocks: as many as the machine has cores (CUDASIM_THREADS).
class BlockPool {
 public:
  BlockPool() {
    int n = static_cast<int>(std::thread::hardware_concurrency());
    if (const char* env = std::getenv("CUDASIM_THREADS")) n = std::atoi(env);
    n = std::clamp(n, 1, 64) - 1;  // the stream's worker that launches a grid helps too
    for (int i = 0; i < n; ++i) std::thread([this] { work(); }).detach();
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

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<Grid>> grids_;
};

BlockPool& block_pool() {
  static BlockPool* pool = new BlockPool;  // its threads are detached and never end
  return *pool;
}

std::string dims(dim3 d) { return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")"; }

}  // namespace

void syncthreads(const char* file, unsigned line) {
  BlockRun& b = current_block("__syncthreads");
  const int i = b.current;
  SimThread& t = b.threads[static_cast<size_t>(i)];
  t.state = State::AtBarrier;
  t.barrier_file = file;
  t.barrier_line = line;
  ++b.at_barrier;
  if (b.at_barrier == b.n - b.exited) {
    release_barrier(b);
    if (!b.error.empty()) throw BlockFailed{};
    return;
  }
  suspend(b, i);
}

uint64_t warp_exchange(WarpOp op, unsigned mask, uint64_t value, int arg, int width) {
  BlockRun& b = current_block(op_name(op));
  const int i = b.current, w = i / kWarp, lane = i % kWarp;
  auto hex = [](unsigned m) {
    std::ostringstream os;
    os << "0x" << std::hex << m;
    return os.str();
  };
  const std::string call = std::string(op_name(op)) + "(mask " + hex(mask) + ")";
  if (width < 1 || width > kWarp || (width & (width - 1)) != 0) {
    b.fail(b.thread_name(i) + ": " + call + " with width " + std::to_string(width) + ", not a power of two up to 32");
    throw BlockFailed{};
  }
  if (!(mask >> lane & 1u)) {
    b.fail(b.thread_name(i) + " (lane " + std::to_string(lane) + ") calls " + call + " without being in its mask");
    throw BlockFailed{};
  }
  for (int l = 0; l < kWarp; ++l) {
    if (!(mask >> l & 1u)) continue;
    const int j = w * kWarp + l;
    if (j >= b.n) {
      b.fail(b.thread_name(i) + ": " + call + " names lane " + std::to_string(l) + ", which the block does not have");
      throw BlockFailed{};
    }
    if (b.threads[static_cast<size_t>(j)].state == State::Exited) {
      b.fail(b.thread_name(i) + ": " + call + " names lane " + std::to_string(l) + ", which has exited");
      throw BlockFailed{};
    }
  }
  SimThread& me = b.threads[static_cast<size_t>(i)];
  me.state = State::AtWarp;
  me.op = op;
  me.mask = mask;
  me.value = value;
  me.arg = arg;
  me.width = width;
  uint32_t& arrived = b.warp_arrived[static_cast<size_t>(w)];
  arrived |= 1u << lane;
  if ((arrived & mask) != mask) {
    suspend(b, i);
    return me.result;
  }
  // Every lane is here: check that they agree, then exchange.
  uint64_t vote_or = 0, vote_and = 1, ballot = 0;
  for (int l = 0; l < kWarp; ++l) {
    if (!(mask >> l & 1u)) continue;
    const SimThread& t = b.threads[static_cast<size_t>(w * kWarp + l)];
    if (t.op != op || t.mask != mask) {
      b.fail(b.thread_name(i) + " and lane " + std::to_string(l) + " meet in different warp exchanges: " + call + " and " +
             op_name(t.op) + "(mask " + hex(t.mask) + ")");
      throw BlockFailed{};
    }
    vote_or |= t.value != 0;
    vote_and &= t.value != 0;
    if (t.value) ballot |= uint64_t{1} << l;
  }
  for (int l = 0; l < kWarp; ++l) {
    if (!(mask >> l & 1u)) continue;
    SimThread& t = b.threads[static_cast<size_t>(w * kWarp + l)];
    const int segment = l & ~(width - 1);
    int src = l;
    switch (op) {
      case WarpOp::Index: src = segment + (t.arg & (width - 1)); break;
      case WarpOp::Up: src = l - t.arg >= segment ? l - t.arg : l; break;
      case WarpOp::Down: src = (l & (width - 1)) + t.arg < width ? l + t.arg : l; break;
      case WarpOp::Xor: {
        const int x = l ^ t.arg;
        src = (x >= kWarp || (x & ~(width - 1)) > segment) ? l : x;
        break;
      }
      default: break;
    }
    switch (op) {
      case WarpOp::Ballot: t.result = ballot; break;
      case WarpOp::All: t.result = vote_and; break;
      case WarpOp::Any: t.result = vote_or; break;
      case WarpOp::Sync: t.result = 0; break;
      default:
        if (!(mask >> src & 1u)) {
          b.fail("lane " + std::to_string(l) + " of warp " + std::to_string(w) + " reads lane " + std::to_string(src) +
                 " in " + call + ", which is not in the mask");
          throw BlockFailed{};
        }
        t.result = b.threads[static_cast<size_t>(w * kWarp + src)].value;
    }
  }
  arrived &= ~mask;
  for (int l = 0; l < kWarp; ++l) {
    if (!(mask >> l & 1u)) continue;
    const int j = w * kWarp + l;
    if (j == i) {
      me.state = State::Running;
    } else {
      b.threads[static_cast<size_t>(j)].state = State::Ready;
      b.ready.push_back(j);
    }
  }
  return me.result;
}

namespace {
std::atomic<unsigned long long> g_kernel_launches{0};
std::atomic<bool> g_execute_kernels{true};
}  // namespace

cudaError_t launch_kernel(KernelLaunch l) {
  const int device = current_device();
  if (cudaError_t e = sticky_error(device)) return record_error(e);
  const std::string name = std::string("kernel '") + l.name + "'";
  const uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
  if (threads == 0 || threads > 1024 || l.block.x > 1024 || l.block.y > 1024 || l.block.z > 64)
    return record_error(cudaErrorInvalidConfiguration, name + ": block " + dims(l.block) + " (at most 1024 threads, z <= 64)");
  if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0 || l.grid.x > 2147483647u || l.grid.y > 65535 || l.grid.z > 65535)
    return record_error(cudaErrorInvalidConfiguration, name + ": grid " + dims(l.grid) + " (y and z at most 65535)");
  if (l.shared_bytes > kMaxSharedBytes)
    return record_error(cudaErrorInvalidConfiguration,
                        name + ": " + std::to_string(l.shared_bytes) + " bytes of dynamic shared memory (at most 48 KiB)");
  Stream* s = find_stream(l.stream);
  if (!s) return record_error(cudaErrorInvalidResourceHandle, name + ": not a live stream");
  const int run_device = stream_device(s);
  g_kernel_launches.fetch_add(1, std::memory_order_relaxed);
  if (!g_execute_kernels.load(std::memory_order_relaxed)) return cudaSuccess;
  auto launch = std::make_shared<KernelLaunch>(std::move(l));
  enqueue(s, name, [launch, run_device] {
    for (const auto& [position, p] : launch->pointer_args) {
      std::string why;
      if (!device_can_access(run_device, p, 0, &why))
        throw AsyncError(cudaErrorIllegalAddress, std::string("kernel '") + launch->name + "' argument " +
                                                      std::to_string(position) + " points to " + why);
    }
    auto g = std::make_shared<Grid>();
    g->launch = launch.get();
    g->total = uint64_t{launch->grid.x} * launch->grid.y * launch->grid.z;
    block_pool().run(g);
    if (g->failed) throw AsyncError(cudaErrorLaunchFailure, g->error);
  });
  return cudaSuccess;
}

}  // namespace cudasim

extern "C" unsigned long long cudasimKernelLaunches(void) {
  return cudasim::g_kernel_launches.load(std::memory_order_relaxed);
}

extern "C" void cudasimSetKernelExecution(int run) { cudasim::g_execute_kernels.store(run != 0); }
