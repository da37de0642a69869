#pragma once
// How glibc hands out the large blocks CPU op outputs live in, for the CPU benchmarks.
//
// wick's CPU allocator is aligned_alloc. glibc serves blocks above its mmap threshold
// (at most 32 MB) with fresh pages from the kernel, so an op writing a new 64 MB output
// pays ~16k page faults on every call: a property of the allocator, not of the kernel. The
// benchmarks measure the kernels with glibc keeping freed blocks in its heap (reused, already
// faulted in), and one row (cpu/add_fresh_pages) reports what the default costs.
#include <malloc.h>

namespace wick::bench {

// Serve every block from the heap and never give freed memory back to the kernel.
inline void keep_freed_blocks() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// glibc's defaults: mmap large blocks, trim the heap above 128 KB free.
inline void return_freed_blocks() {
  mallopt(M_MMAP_MAX, 65536);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

}  // namespace wick::bench
