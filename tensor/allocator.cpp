#include <wick/tensor/allocator.h>
#include <wick/tensor/error.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

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
class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kAlign = 64;                      // a cache line, and any vector load
  static constexpr size_t kSmallestCached = size_t{4} << 10;  // a page
  static constexpr size_t kLargeBlock = size_t{1} << 20;      // from here on, classes are 1 MB steps

  CpuAllocator() {
    const char* env = std::getenv("WICK_CPU_CACHE_MB");
    limit_ = env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20 : size_t{1} << 30;
  }

  // The size class of a request: under 4 KB a multiple of 64 bytes (not cached); up to 1 MB
  // four classes per power of two (at most 25% unused); above, whole megabytes.
  static size_t size_class(size_t nbytes) {
    nbytes = std::max<size_t>(nbytes, 1);
    if (nbytes < kSmallestCached) return round_up(nbytes, kAlign);
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
        return DataPtr(p, &release);
      }
    }
    void* raw = std::aligned_alloc(kAlign, size + kAlign);
    if (raw == nullptr) {
      empty_cache();
      raw = std::aligned_alloc(kAlign, size + kAlign);
    }
    WICK_CHECK(raw != nullptr, "cpu allocator: out of memory allocating ", nbytes, " bytes");
    *static_cast<size_t*>(raw) = size;
    return DataPtr(static_cast<char*>(raw) + kAlign, &release);
  }

  // Frees every cached block.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) std::free(static_cast<char*>(p) - kAlign);
    free_.clear();
    cached_ = 0;
  }

  size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

 private:
  static size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

  static void release(void* p);

  void give_back(void* p) {
    char* raw = static_cast<char*>(p) - kAlign;
    size_t size = *reinterpret_cast<size_t*>(raw);
    if (size >= kSmallestCached) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + size <= limit_) {
        free_[size].push_back(p);
        cached_ += size;
        return;
      }
    }
    std::free(raw);
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // rounded size -> cached blocks
  size_t cached_ = 0;
  size_t limit_;
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

}  // namespace wick
