#include <wick/tensor/allocator.h>
#include <wick/tensor/error.h>

#include <cstdlib>

namespace wick {

namespace {

// 64-byte alignment: a cache line, and enough for any vector load.
class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    size_t rounded = (nbytes + 63) / 64 * 64;
    if (rounded == 0) rounded = 64;
    void* p = std::aligned_alloc(64, rounded);
    WICK_CHECK(p != nullptr, "cpu allocator: out of memory allocating ", nbytes, " bytes");
    return DataPtr(p, &std::free);
  }
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator alloc;  // stateless
  return alloc;
}

}  // namespace wick
