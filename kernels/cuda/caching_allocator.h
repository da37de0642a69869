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

//
// CUDA graphs (cuda::Graph): while a stream captures, the allocations made on it come from
// a private pool of the graph (PyTorch's graph pools): the addresses a graph's launches use
// stay the graph's, since only the capture itself reuses them, in capture order. Memory of
// eager code freed during the capture may still be read by the graph's launches: it is held,
// unused, until the graph's pool is released. During a capture the allocator makes no call
// that CUDA refuses then (cudaEventQuery, cudaFree: memory running out is not met by
// returning cached segments).
#include <cstdint>

namespace wick::cuda_kernels {

Allocator& caching_allocator();

// From now until end_graph_capture(pool), allocations on `device` by the stream with id
// `stream_id` come from a new private pool, whose id is returned. One capture per device.
uint64_t begin_graph_capture(int device, uint64_t stream_id);
void end_graph_capture(uint64_t pool);
// The graph is gone: the eager blocks freed during its capture become reusable.
void release_graph_pool(uint64_t pool);

}  // namespace wick::cuda_kernels

namespace wick::cuda::detail {

// Debugging aid for the kernel tests. While on, every new allocation is filled with 0xFF
// bytes (NaN for floating types), so an output element a kernel forgets to write shows, and
// is followed by a 256-byte guard zone whose pattern is verified when the block is freed.
void set_allocation_checks(bool on);
// How many freed blocks had their guard zone overwritten (since the program started).
size_t allocation_check_failures();

}  // namespace wick::cuda::detail
