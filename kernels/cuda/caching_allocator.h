#pragma once
// The CUDA caching allocator (caching_allocator.cu), for the runtime and for tests.
//
// Per device, requests are rounded up to 512 bytes. Requests up to 1 MiB ("small") are cut
// from 2 MiB segments; larger ones get segments rounded up to 2 MiB. A freed block goes back
// to a free list keyed by (stream id, size) and is reused best-fit, larger free blocks being
// split and neighbouring free blocks merged again. The last 16 small blocks freed wait
// whole, outside the free lists, for a request of their exact size on their stream (a
// training step's sizes recur): that path takes one lock, searches nothing and allocates
// no host memory.
//
// Streams: a block belongs to the stream that was current on its device when it was
// allocated, and is reused only by allocations on that same stream. Work on one stream runs
// in order, so reusing a block there cannot overtake a kernel still reading it. Streams are
// told apart by cuda::Stream::id, not by their handle, which the driver gives to the next
// stream created once a stream is destroyed: a new stream never inherits a dead one's blocks.
// Those blocks are reusable by no stream; empty_cache() (and running out of memory) returns
// them to the driver. A tensor used on another stream is marked with cuda::record_stream:
// when it is freed, an event is recorded on each such stream, and the block is reused only
// once those events have completed (PyTorch's record_stream).
#include <cstddef>

#include <wick/tensor/allocator.h>

namespace wick::cuda_kernels {

Allocator& caching_allocator();

}  // namespace wick::cuda_kernels

namespace wick::cuda::detail {

// Debugging aid for the kernel tests. While on, every new allocation is filled with 0xFF
// bytes (NaN for floating types), so an output element a kernel forgets to write shows, and
// is followed by a 256-byte guard zone whose pattern is verified when the block is freed.
void set_allocation_checks(bool on);
// How many freed blocks had their guard zone overwritten (since the program started).
size_t allocation_check_failures();

}  // namespace wick::cuda::detail
