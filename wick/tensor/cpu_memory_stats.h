#pragma once
// The CPU allocator's count (wick/tensor/allocator.h): the bytes it has handed out and not
// had back (by size class: what tensors hold, its cached free blocks not counted), and
// their most since the last reset, as cuda::memory_stats' allocated and peak_allocated.
// One count for the process: the CPU is one device, whichever thread (or data-parallel
// rank run as a thread) allocates.
#include <cstddef>

namespace wick {

struct CpuMemoryStats {
  size_t allocated = 0;
  size_t peak_allocated = 0;
};
CpuMemoryStats cpu_memory_stats();
void cpu_reset_peak_memory_stats();  // the peak becomes the current count

}  // namespace wick
