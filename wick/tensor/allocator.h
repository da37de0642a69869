#pragma once
// Memory for tensors. Each device type has one Allocator, installed by its backend when the
// kernels are registered (see dispatch.h). The CUDA one is a caching allocator
// (kernels/cuda/caching_allocator.cu).
#include <cstddef>
#include <memory>

#include <wick/tensor/device.h>

namespace wick {

// An owning pointer to raw bytes whose deleter returns them to the allocator that made them.
using DataPtr = std::unique_ptr<void, void (*)(void*)>;

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns `nbytes` of memory on `device` (a non-null pointer even for 0 bytes is not
  // required). Throws wick::Error when the memory cannot be had.
  virtual DataPtr allocate(size_t nbytes, Device device) = 0;
};

// The CPU allocator: 64-byte aligned blocks; blocks of 4 KB and more are cached after they
// are freed, by size class (four per power of two up to 1 MB, whole megabytes up to 4 MB,
// then whole 2 MB huge pages; up to WICK_CPU_CACHE_MB megabytes in all, default 1024; 0
// turns caching off), so that tensors of recurring sizes do not pay the operating system's
// page faults again. Blocks of 4 MB and more are 2 MB-aligned and advised to be backed by
// transparent huge pages (WICK_CPU_HUGE_PAGES=0 turns that off).
Allocator& cpu_allocator();
// Returns the cached CPU blocks to the system, and how many bytes are cached now.
void cpu_empty_cache();
size_t cpu_cached_bytes();

// Page-locked host memory for fast asynchronous copies to a GPU. Without CUDA this is
// the plain CPU allocator.
Allocator& pinned_allocator();

}  // namespace wick
