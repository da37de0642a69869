#include <wick/tensor/allocator.h>
#include <wick/tensor/cpu_memory_stats.h>
#include <wick/tensor/error.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

namespace wick {

namespace {

// The CPU allocator caches freed blocks of 4 KB and more for reuse by the next tensor of
// the same size class. Fresh blocks from the system cost a page fault per 4 KB page on first
// touch, which for an elementwise op takes several times longer than the op itself; and
// glibc gives medium blocks back too (mmap'd ones on free, the heap's top by trimming), so
// without a cache an MLP's step time depended on where in glibc's adaptive thresholds a
// process happened to be. Blocks under 4 KB stay with malloc: they sit in its bins and are
// not re-faulted. Each block carries a 64-byte header holding its size class, so the
// deleter needs no context.
//
// Blocks of 4 MB and more are 2 MB-aligned whole 2 MB pages that the kernel is asked to back
// with transparent huge pages (madvise; most distributions enable them only on request):
// streaming through one is about 10% faster (the hardware prefetchers stop at each 4 KB page
// boundary, and the TLB covers it), and it is faulted in one 2 MB page at a time. They carry
// no header (it would cost a whole extra page): their sizes are kept in a map, found by
// address, which only a 2 MB-aligned pointer is looked up in. WICK_CPU_HUGE_PAGES=0 turns
// the request off.
class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kAlign = 64;                        // a cache line, and any vector load
  static constexpr size_t kSmallestCached = size_t{4} << 10;  // a page
  static constexpr size_t kLargeBlock = size_t{1} << 20;      // from here on, classes are 1 MB steps
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kSmallestHuge = size_t{4} << 20;  // from here on, 2 MB steps in huge pages

  CpuAllocator() {
    const char* env = std::getenv("WICK_CPU_CACHE_MB");
    limit_ = env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20 : size_t{1} << 30;
    const char* huge = std::getenv("WICK_CPU_HUGE_PAGES");
    advise_huge_ = huge == nullptr || std::string(huge) != "0";
  }

  // The size class of a request: under 4 KB a multiple of 64 bytes (not cached); up to 1 MB
  // four classes per power of two (at most 25% unused); up to 4 MB whole megabytes; above,
  // whole huge pages (2 MB).
  static size_t size_class(size_t nbytes) {
    nbytes = std::max<size_t>(nbytes, 1);
    if (nbytes < kSmallestCached) return round_up(nbytes, kAlign);
    if (nbytes >= kSmallestHuge) return round_up(nbytes, kHugePage);
    if (nbytes >= kLargeBlock) return round_up(nbytes, kLargeBlock);
    const size_t quarter = std::bit_floor(nbytes) / 4;
    return round_up(nbytes, quarter);
  }

  DataPtr allocate(size_t nbytes, Device) override {
    WICK_CHECK(nbytes <= (size_t{1} << 62), "cpu allocator: cannot allocate ", nbytes, " bytes");
    const size_t size = size_class(nbytes);
    if (size >= kSmallestCached) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        count_live(size);
        return DataPtr(p, &release);
      }
    }
    if (size >= kSmallestHuge) return allocate_huge(nbytes, size);
    void* raw = allocate_or_retry(kAlign, size + kAlign, nbytes);
    count_live(size);
    *static_cast<size_t*>(raw) = size;
    return DataPtr(static_cast<char*>(raw) + kAlign, &release);
  }

  // Frees every cached block.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) {
        if (size >= kSmallestHuge) {
          huge_sizes_.erase(p);
          std::free(p);
        } else {
          std::free(static_cast<char*>(p) - kAlign);
        }
      }
    free_.clear();
    cached_ = 0;
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }
  CpuMemoryStats stats() const {
    return {live_.load(std::memory_order_relaxed), peak_.load(std::memory_order_relaxed)};
  }
  void reset_peak() { peak_.store(live_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

 private:
  static size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

  static void release(void* p);
  void count_live(size_t size) {
    const size_t now = live_.fetch_add(size, std::memory_order_relaxed) + size;
    size_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }

  // aligned_alloc, and once more after emptying the cache when the system says no.
  void* allocate_or_retry(size_t alignment, size_t bytes, size_t nbytes) {
    void* raw = std::aligned_alloc(alignment, bytes);
    if (raw == nullptr) {
      empty_cache();
      raw = std::aligned_alloc(alignment, bytes);
    }
    WICK_CHECK(raw != nullptr, "cpu allocator: out of memory allocating ", nbytes, " bytes");
    return raw;
  }

  DataPtr allocate_huge(size_t nbytes, size_t size) {
    void* p = allocate_or_retry(kHugePage, size, nbytes);
    // Advice only: where the kernel has no transparent huge pages it fails, and 4 KB pages
    // serve as before.
    if (advise_huge_) (void)madvise(p, size, MADV_HUGEPAGE);
    std::lock_guard<std::mutex> lock(mu_);
    huge_sizes_[p] = size;
    count_live(size);
    return DataPtr(p, &release);
  }

  void give_back(void* p) {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    size_t size;
    void* raw;
    auto huge = huge_sizes_.end();
    if (reinterpret_cast<uintptr_t>(p) % kHugePage == 0) {
      lock.lock();
      huge = huge_sizes_.find(p);
    }
    if (huge != huge_sizes_.end()) {
      size = huge->second;
      raw = p;
    } else {
      raw = static_cast<char*>(p) - kAlign;
      size = *reinterpret_cast<size_t*>(raw);
    }
    live_.fetch_sub(size, std::memory_order_relaxed);
    if (size >= kSmallestCached) {
      if (!lock.owns_lock()) lock.lock();
      if (cached_ + size <= limit_) {
        free_[size].push_back(p);
        cached_ += size;
        return;
      }
      if (huge != huge_sizes_.end()) huge_sizes_.erase(huge);
    }
    std::free(raw);
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // rounded size -> cached blocks
  std::unordered_map<void*, size_t> huge_sizes_;         // every live or cached huge block
  size_t cached_ = 0;
  // Bytes (by size class) in blocks handed out and not given back, and their most since the
  // last reset: atomics, outside the lock, as blocks under 4 KB never take it.
  std::atomic<size_t> live_{0}, peak_{0};
  size_t limit_;
  bool advise_huge_;
};

CpuAllocator& the_cpu_allocator() {
  // Never destroyed: tensors owned by other static objects may be freed after main returns.
  static CpuAllocator* alloc = new CpuAllocator();
  return *alloc;
}

void CpuAllocator::release(void* p) { the_cpu_allocator().give_back(p); }

}  // namespace

Allocator& cpu_allocator() { return the_cpu_allocator(); }
void cpu_empty_cache() { the_cpu_allocator().empty_cache(); }
size_t cpu_cached_bytes() { return the_cpu_allocator().cached_bytes(); }
CpuMemoryStats cpu_memory_stats() { return the_cpu_allocator().stats(); }
void cpu_reset_peak_memory_stats() { the_cpu_allocator().reset_peak(); }

}  // namespace wick
