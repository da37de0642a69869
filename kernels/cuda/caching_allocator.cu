// The CUDA caching allocator (see caching_allocator.h for the policy) and the memory
// statistics of wick/tensor/cuda.h.
#include <wick/tensor/cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"

namespace wick::cuda_kernels {

namespace {

constexpr size_t kRound = 512;                  // every block is a multiple of this
constexpr size_t kSmallSize = size_t{1} << 20;  // requests up to this come from small segments
constexpr size_t kSmallSegment = size_t{2} << 20;
constexpr size_t kLargeRound = size_t{2} << 20;
constexpr size_t kMaxRequest = size_t{1} << 60;  // beyond this the rounding could overflow
constexpr size_t kGuardBytes = 256;
constexpr unsigned char kGuardByte = 0xA5;

std::atomic<bool> g_checks{false};
std::atomic<size_t> g_check_failures{0};

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// A stream that used a block besides the one that allocated it (record_stream).
struct StreamUse {
  uint64_t id = 0;
  cudaStream_t stream = nullptr;
  int device = 0;
};

struct Block {
  int device = 0;
  uint64_t stream_id = 0;         // cuda::Stream::id of the stream it belongs to (never reused)
  cudaStream_t stream = nullptr;  // that stream's handle, valid while stream_alive(stream_id)
  size_t size = 0;
  char* ptr = nullptr;
  bool small = false;  // which pool it returns to
  bool allocated = false;
  Block* prev = nullptr;  // neighbours within the same segment
  Block* next = nullptr;
  size_t requested = 0;              // bytes the caller asked for (the guard zone follows them)
  bool checked = false;              // filled and guarded (allocation checks were on)
  std::vector<StreamUse> uses;       // other streams that used it (record_stream)
  std::vector<cudaEvent_t> pending;  // freed: reusable once these events have completed
};

// A CUDA graph's private pool (cuda::Graph): allocations made on the capturing stream while
// it captures get the pool's id where a stream id goes, so that only the capture reuses
// them; ids from here up are never cuda::Stream ids.
constexpr uint64_t kFirstGraphPool = uint64_t{1} << 63;
struct GraphCapture {
  int device = 0;
  uint64_t stream_id = 0;  // the capturing stream
  uint64_t pool = 0;
};
struct HeldBlocks {
  uint64_t pool = 0;
  std::vector<Block*> blocks;  // eager memory freed during the pool's capture
};

// Free lists ordered by (stream, size, address): lower_bound finds the best fit on a stream.
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream_id != b->stream_id) return a->stream_id < b->stream_id;
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};
using Pool = std::set<Block*, BlockLess>;

// Small blocks freed lately, kept whole (not merged into the pool) for the next request of
// the same size on the same stream: a training step asks for the same sizes again and
// again, and taking a block from here costs no search, split, merge or node allocation (the
// host cost of a small op). At most kRecent per device; the oldest goes to the pool when
// full, and all of them before the cache is emptied or memory runs out.
constexpr size_t kRecent = 16;

struct DeviceState {
  Pool small, large;
  std::vector<Block*> pending;  // freed while other streams may still use them
  Block* recent[kRecent] = {};  // oldest first
  size_t recent_count = 0;
  cuda::MemoryStats stats;
};

// Live blocks by address: open addressing with linear probing in a table that only grows,
// so allocating and freeing a block allocates nothing here (std::unordered_map made a node
// per block).
class LiveBlocks {
 public:
  void insert(void* p, Block* b) {
    if (2 * (count_ + tombstones_ + 1) > slots_.size()) rehash(std::max<size_t>(64, 4 * (count_ + 1)));
    size_t i = slot_of(p);
    while (slots_[i].key && slots_[i].key != kTombstone) i = (i + 1) & (slots_.size() - 1);
    if (slots_[i].key == kTombstone) --tombstones_;
    slots_[i] = {p, b};
    ++count_;
  }
  // The block at p, removed from the table; null when p is not live here.
  Block* take(void* p) {
    if (slots_.empty()) return nullptr;
    for (size_t i = slot_of(p);; i = (i + 1) & (slots_.size() - 1)) {
      if (!slots_[i].key) return nullptr;
      if (slots_[i].key == p) {
        Block* b = slots_[i].block;
        slots_[i] = {kTombstone, nullptr};
        --count_;
        ++tombstones_;
        return b;
      }
    }
  }
  Block* find(void* p) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = slot_of(p);; i = (i + 1) & (slots_.size() - 1)) {
      if (!slots_[i].key) return nullptr;
      if (slots_[i].key == p) return slots_[i].block;
    }
  }

 private:
  struct Slot {
    void* key = nullptr;
    Block* block = nullptr;
  };
  static inline void* const kTombstone = reinterpret_cast<void*>(uintptr_t{1});
  size_t slot_of(void* p) const {
    // Blocks are 512-byte aligned: drop the low bits, then mix (Fibonacci hashing).
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 9) * 0x9E3779B97F4A7C15ull >> 7) &
           (slots_.size() - 1);
  }
  void rehash(size_t want) {
    size_t n = 64;
    while (n < want) n *= 2;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    count_ = tombstones_ = 0;
    for (const Slot& s : old)
      if (s.key && s.key != kTombstone) insert(s.key, s.block);
  }
  std::vector<Slot> slots_;  // a power of two in size
  size_t count_ = 0, tombstones_ = 0;
};

std::string human_bytes(size_t n) {
  char buf[64];
  if (n >= (size_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1 << 30));
  else if (n >= (size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(n) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%zu bytes", n);
  return buf;
}

class CachingAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    WICK_CHECK(device.is_cuda(), "cuda allocator: asked for memory on ", device);
    if (nbytes == 0) return DataPtr(nullptr, &noop);
    const int dev = resolve_device("cuda allocator", device.index);
    const bool checks = g_checks.load();
    TensorDeviceGuard guard(dev);
    cudaStream_t stream = stream_for(dev);
    uint64_t stream_id = stream_id_for(dev);
    Block* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      DeviceState& st = state(dev);
      if (nbytes > kMaxRequest) throw_oom(dev, nbytes, st, "request too large");
      const GraphCapture* capture = capture_on(dev);
      if (capture && capture->stream_id == stream_id) stream_id = capture->pool;
      // cudaEventQuery is an unsafe call during capture (PyTorch defers it too).
      if (!capture) process_pending(st, false);
      const size_t size = round_up(nbytes + (checks ? kGuardBytes : 0), kRound);
      const bool small = size <= kSmallSize;
      Pool& pool = small ? st.small : st.large;
      block = small ? take_recent(st, stream_id, size) : nullptr;
      if (!block) {
        Block key;
        key.stream_id = stream_id;
        key.size = size;
        auto it = pool.lower_bound(&key);
        if (it != pool.end() && (*it)->stream_id == stream_id) {
          block = *it;
          pool.erase(it);
        } else {
          block = new_segment(dev, stream, stream_id, small ? kSmallSegment : round_up(size, kLargeRound), small,
                              nbytes, st);
        }
        split(block, size, pool);
      }
      block->allocated = true;
      block->requested = nbytes;
      block->checked = checks;
      st.stats.allocated += block->size;
      st.stats.peak_allocated = std::max(st.stats.peak_allocated, st.stats.allocated);
      ++st.stats.num_allocs;
      live_.insert(block->ptr, block);
    }
    if (checks) {
      WICK_CUDA_CHECK(cudaMemsetAsync(block->ptr, 0xFF, nbytes, stream));
      WICK_CUDA_CHECK(cudaMemsetAsync(block->ptr + nbytes, kGuardByte, kGuardBytes, stream));
    }
    return DataPtr(block->ptr, &free_block);
  }

  // Runs from DataPtr's deleter, so it never throws; CUDA errors here (say, at exit, after the
  // driver has shut down) leave the block where it is.
  void release(void* p) noexcept {
    Block* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      block = live_.take(p);
      if (!block) return;
      // Freed during a capture, memory of eager code may still be read by the graph's
      // launches: it waits, unused, until the graph is destroyed. The graph's own pool is
      // reused only by the capture itself, in capture order.
      if (const GraphCapture* capture = capture_on(block->device); capture && block->stream_id != capture->pool) {
        held_for(capture->pool).push_back(block);
        return;
      }
      // The common case, in one lock: no other stream used the block, no guard to check.
      if (block->uses.empty() && !block->checked) {
        DeviceState& st = state(block->device);
        st.stats.allocated -= block->size;
        free_block_now(block, st);
        return;
      }
    }
    finish_release(block);
  }

  // The rest of release(), outside the allocator's lock: guard zones and other streams' uses.
  void finish_release(Block* block) noexcept {
    if (block->checked) verify_guard(*block);
    // Another stream's work may still use the block: it is reusable once the events recorded
    // now on those streams have completed. A stream destroyed since cannot take an event, and
    // its last work may still run: the device is waited for instead (rare).
    std::vector<cudaEvent_t> events;
    bool dead_use = false;
    for (const StreamUse& u : block->uses) {
      if (!stream_alive(u.id)) {
        dead_use = true;
        continue;
      }
      int previous = -1;
      if (cudaGetDevice(&previous) != cudaSuccess) break;  // the driver is gone (program exit)
      (void)cudaSetDevice(u.device);
      cudaEvent_t e = nullptr;
      if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess) {
        if (cudaEventRecord(e, u.stream) == cudaSuccess) {
          events.push_back(e);
        } else {
          (void)cudaEventDestroy(e);
          dead_use = true;
        }
      } else {
        dead_use = true;
      }
      (void)cudaSetDevice(previous);
    }
    if (dead_use) {
      (void)cudaGetLastError();
      int previous = -1;
      if (cudaGetDevice(&previous) == cudaSuccess) {
        (void)cudaSetDevice(block->device);
        (void)cudaDeviceSynchronize();
        (void)cudaSetDevice(previous);
      }
    }
    block->uses.clear();
    std::lock_guard<std::mutex> lock(mu_);
    DeviceState& st = state(block->device);
    st.stats.allocated -= block->size;
    if (!events.empty()) {
      block->pending = std::move(events);
      st.pending.push_back(block);  // still marked allocated, so no neighbour merges with it
      return;
    }
    free_block_now(block, st);
  }

  // A freed block nothing else uses: small ones wait among the recent blocks (see kRecent),
  // large ones and the oldest recent one go back to the pool.
  static void free_block_now(Block* block, DeviceState& st) {
    if (!block->small) return free_into_pool(block, st);
    if (st.recent_count == kRecent) {
      free_into_pool(st.recent[0], st);
      std::move(st.recent + 1, st.recent + kRecent, st.recent);
      --st.recent_count;
    }
    st.recent[st.recent_count++] = block;
  }

  // The most recently freed small block of exactly `size` bytes on the stream, or null.
  static Block* take_recent(DeviceState& st, uint64_t stream_id, size_t size) {
    for (size_t i = st.recent_count; i-- > 0;) {
      Block* b = st.recent[i];
      if (b->stream_id != stream_id || b->size != size) continue;
      std::move(st.recent + i + 1, st.recent + st.recent_count, st.recent + i);
      --st.recent_count;
      return b;
    }
    return nullptr;
  }

  // Returns every recent block to its pool (before segments are freed).
  static void flush_recent(DeviceState& st) {
    for (size_t i = 0; i < st.recent_count; ++i) free_into_pool(st.recent[i], st);
    st.recent_count = 0;
  }

  // Marks `t`'s block as used by stream `s` (see cuda::record_stream).
  void record_stream(void* ptr, const cuda::Stream& s) {
    std::lock_guard<std::mutex> lock(mu_);
    Block* block = live_.find(ptr);
    if (!block) return;  // not from this allocator (or empty)
    if (s.id() == block->stream_id) return;
    for (const StreamUse& u : block->uses)
      if (u.id == s.id()) return;
    block->uses.push_back({s.id(), static_cast<cudaStream_t>(s.handle()), s.device()});
  }

  // Returns a free block to its stream's pool, merged with free neighbours.
  static void free_into_pool(Block* block, DeviceState& st) {
    block->allocated = false;
    Pool& pool = block->small ? st.small : st.large;
    if (Block* prev = block->prev; prev && !prev->allocated) {  // merge into prev
      pool.erase(prev);
      prev->size += block->size;
      prev->next = block->next;
      if (block->next) block->next->prev = prev;
      delete block;
      block = prev;
    }
    if (Block* next = block->next; next && !next->allocated) {  // absorb next
      pool.erase(next);
      block->size += next->size;
      block->next = next->next;
      if (next->next) next->next->prev = block;
      delete next;
    }
    pool.insert(block);
  }

  // Moves the pending blocks whose events have completed (all of them, waiting, when `wait`)
  // into their pools.
  static void process_pending(DeviceState& st, bool wait) {
    for (size_t i = 0; i < st.pending.size();) {
      Block* b = st.pending[i];
      bool done = true;
      for (cudaEvent_t e : b->pending) {
        const cudaError_t err = wait ? cudaEventSynchronize(e) : cudaEventQuery(e);
        if (err == cudaErrorNotReady) {
          (void)cudaGetLastError();
          done = false;
          break;
        }
        if (err != cudaSuccess) (void)cudaGetLastError();  // a broken device: nothing runs any more
      }
      if (!done) {
        ++i;
        continue;
      }
      for (cudaEvent_t e : b->pending) (void)cudaEventDestroy(e);
      b->pending.clear();
      st.pending[i] = st.pending.back();
      st.pending.pop_back();
      free_into_pool(b, st);
    }
  }

  cuda::MemoryStats stats(int dev) {
    std::lock_guard<std::mutex> lock(mu_);
    return state(dev).stats;
  }

  void reset_peaks(int dev) {
    std::lock_guard<std::mutex> lock(mu_);
    cuda::MemoryStats& s = state(dev).stats;
    s.peak_allocated = s.allocated;
    s.peak_reserved = s.reserved;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t d = 0; d < devices_.size(); ++d)
      if (!capture_on(static_cast<int>(d))) release_cached(static_cast<int>(d), devices_[d]);
  }

  // --- CUDA graphs (see caching_allocator.h) ---
  uint64_t begin_capture(int dev, uint64_t stream_id) {
    std::lock_guard<std::mutex> lock(mu_);
    WICK_CHECK(!capture_on(dev), "cuda::Graph::capture: cuda:", dev, " is capturing another graph already");
    const uint64_t pool = next_pool_++;
    captures_.push_back({dev, stream_id, pool});
    held_.push_back({pool, {}});
    return pool;
  }

  void end_capture(uint64_t pool) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(captures_, [&](const GraphCapture& c) { return c.pool == pool; });
  }

  // The pool's free blocks stay where no stream takes them (empty_cache returns whole
  // segments); blocks still live return there when freed. The eager blocks freed during the
  // capture become reusable, after the work queued so far on their streams.
  void release_pool(uint64_t pool) noexcept {
    std::vector<Block*> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(captures_, [&](const GraphCapture& c) { return c.pool == pool; });
      for (auto it = held_.begin(); it != held_.end(); ++it) {
        if (it->pool != pool) continue;
        held = std::move(it->blocks);
        held_.erase(it);
        break;
      }
      for (auto it = held.begin(); it != held.end();) {
        Block* b = *it;
        if (!b->uses.empty() || b->checked) {
          ++it;
          continue;
        }
        DeviceState& st = state(b->device);
        st.stats.allocated -= b->size;
        free_block_now(b, st);
        it = held.erase(it);
      }
    }
    for (Block* b : held) finish_release(b);
  }

 private:
  static void noop(void*) {}
  static void free_block(void* p);

  DeviceState& state(int dev) {
    if (devices_.size() <= static_cast<size_t>(dev)) devices_.resize(static_cast<size_t>(dev) + 1);
    return devices_[static_cast<size_t>(dev)];
  }

  // A fresh segment from cudaMalloc; when the driver has no memory left, the cached free
  // segments of this device are returned first and the call is tried once more.
  Block* new_segment(int dev, cudaStream_t stream, uint64_t stream_id, size_t bytes, bool small, size_t requested,
                     DeviceState& st) {
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation && !capture_on(dev)) {  // cudaFree waits: not during a capture
      (void)cudaGetLastError();                                  // clear it so later launch checks do not report it
      release_cached(dev, st);
      err = cudaMalloc(&p, bytes);
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      throw_oom(dev, requested, st, cudaGetErrorString(err));
    }
    auto* b = new Block;
    b->device = dev;
    b->stream = stream;
    b->stream_id = stream_id;
    b->size = bytes;
    b->ptr = static_cast<char*>(p);
    b->small = small;
    st.stats.reserved += bytes;
    st.stats.peak_reserved = std::max(st.stats.peak_reserved, st.stats.reserved);
    ++st.stats.num_device_allocs;
    return b;
  }

  // Keeps the first `size` bytes of `block` and returns the rest to `pool`. Large blocks are
  // only split when the rest is itself large, so small requests never fragment them.
  static void split(Block* block, size_t size, Pool& pool) {
    const size_t rest = block->size - size;
    if (block->small ? rest < kRound : rest <= kSmallSize) return;
    auto* r = new Block(*block);
    r->ptr = block->ptr + size;
    r->size = rest;
    r->allocated = false;
    r->prev = block;
    r->next = block->next;
    if (block->next) block->next->prev = r;
    block->next = r;
    block->size = size;
    pool.insert(r);
  }

  // Frees every segment that is entirely unused (pending blocks once their events complete;
  // blocks of destroyed streams, which no stream can reuse, too). cudaFree waits for the
  // device, so no kernel can still be using the memory.
  static void release_cached(int dev, DeviceState& st) {
    TensorDeviceGuard guard(dev);
    process_pending(st, true);
    flush_recent(st);
    for (Pool* pool : {&st.small, &st.large}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        WICK_CUDA_CHECK(cudaFree(b->ptr));
        st.stats.reserved -= b->size;
        it = pool->erase(it);
        delete b;
      }
    }
  }

  [[noreturn]] static void throw_oom(int dev, size_t requested, const DeviceState& st, const char* reason) {
    detail::throw_error("CUDA out of memory: cannot allocate ", requested, " bytes (", human_bytes(requested),
                        ") on cuda:", dev, " (", reason, "); allocated ", human_bytes(st.stats.allocated),
                        ", reserved ", human_bytes(st.stats.reserved), ", peak allocated ",
                        human_bytes(st.stats.peak_allocated));
  }

  // Reads the guard zone after the work on the block's stream; if that stream was destroyed
  // (its handle may belong to another stream now), after all work on the device.
  static void verify_guard(const Block& b) noexcept {
    unsigned char host[kGuardBytes];
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    if (cudaSetDevice(b.device) != cudaSuccess) return;
    bool read = false;
    if (stream_alive(b.stream_id)) {
      read = cudaMemcpyAsync(host, b.ptr + b.requested, kGuardBytes, cudaMemcpyDeviceToHost, b.stream) == cudaSuccess &&
             cudaStreamSynchronize(b.stream) == cudaSuccess;
    } else {
      read = cudaDeviceSynchronize() == cudaSuccess &&
             cudaMemcpy(host, b.ptr + b.requested, kGuardBytes, cudaMemcpyDeviceToHost) == cudaSuccess;
    }
    (void)cudaSetDevice(previous);
    if (!read) {
      (void)cudaGetLastError();
      return;
    }
    for (unsigned char c : host) {
      if (c != kGuardByte) {
        ++g_check_failures;
        std::fprintf(stderr, "wick: the guard zone after a %zu-byte block on cuda:%d was overwritten\n", b.requested,
                     b.device);
        return;
      }
    }
  }

  // Under mu_: the capture under way on `dev`, or null.
  const GraphCapture* capture_on(int dev) const {
    for (const GraphCapture& c : captures_)
      if (c.device == dev) return &c;
    return nullptr;
  }
  std::vector<Block*>& held_for(uint64_t pool) {
    for (HeldBlocks& h : held_)
      if (h.pool == pool) return h.blocks;
    return held_.emplace_back(HeldBlocks{pool, {}}).blocks;
  }

  std::mutex mu_;
  std::vector<DeviceState> devices_;
  LiveBlocks live_;
  std::vector<GraphCapture> captures_;  // under way, at most one per device
  std::vector<HeldBlocks> held_;        // per graph pool not yet released
  uint64_t next_pool_ = kFirstGraphPool;
};

// Never destroyed: tensors held in static objects may be freed after main returns.
CachingAllocator& the_allocator() {
  static auto* a = new CachingAllocator;
  return *a;
}

void CachingAllocator::free_block(void* p) { the_allocator().release(p); }

}  // namespace

Allocator& caching_allocator() { return the_allocator(); }

uint64_t begin_graph_capture(int device, uint64_t stream_id) {
  return the_allocator().begin_capture(device, stream_id);
}
void end_graph_capture(uint64_t pool) { the_allocator().end_capture(pool); }
void release_graph_pool(uint64_t pool) { the_allocator().release_pool(pool); }

}  // namespace wick::cuda_kernels

namespace wick::cuda {

MemoryStats memory_stats(int device) {
  return cuda_kernels::the_allocator().stats(cuda_kernels::resolve_device("cuda::memory_stats", device));
}

void reset_peak_memory_stats(int device) {
  cuda_kernels::the_allocator().reset_peaks(cuda_kernels::resolve_device("cuda::reset_peak_memory_stats", device));
}

void empty_cache() {
  if (device_count() > 0) cuda_kernels::the_allocator().empty_cache();
}

void record_stream(const Tensor& t, const Stream& s) {
  if (!t.defined() || !t.is_cuda() || t.storage() == nullptr || t.storage()->data() == nullptr) return;
  cuda_kernels::the_allocator().record_stream(t.storage()->data(), s);
}

namespace detail {
void set_allocation_checks(bool on) { cuda_kernels::g_checks = on; }
size_t allocation_check_failures() { return cuda_kernels::g_check_failures.load(); }
}  // namespace detail

}  // namespace wick::cuda
