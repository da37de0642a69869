#include <wick/tensor/allocator.h>
#include <wick/tensor/error.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace wick {

namespace {

// The CPU allocator caches large blocks. Fresh large blocks come from mmap and cost a page
// fault per 4 KB page on first touch, which for an elementwise op on big tensors takes
// several times longer than the op itself; keeping freed blocks for reuse by the next
// tensor of the same (rounded) size avoids that. Small blocks go straight to malloc,
// which caches them well already. Each block carries a 64-byte header holding its size,
// so the deleter needs no context.
class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kAlign = 64;               // a cache line, and any vector load
  static constexpr size_t kLargeBlock = size_t{1} << 20;  // cached from this size on, in 1 MB steps

  CpuAllocator() {
    const char* env = std::getenv("WICK_CPU_CACHE_MB");
    limit_ = env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20 : size_t{1} << 30;
  }

  DataPtr allocate(size_t nbytes, Device) override {
    const size_t size = nbytes < kLargeBlock ? round_up(std::max<size_t>(nbytes, 1), kAlign) : round_up(nbytes, kLargeBlock);
    if (size >= kLargeBlock) {
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
    if (size >= kLargeBlock) {
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
