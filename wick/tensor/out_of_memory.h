#pragma once
// A reader that allocates what a file declares (an IDX or npy header's shape, a gzip's
// inflated contents, a safetensors header) turns a failed allocation into wick::Error naming
// the file and the size (issue 48, item 6): a gzip'ed IDX declaring 4 GiB read under a 1 GiB
// address-space limit ends in
//   "read_idx: <path>: out of memory: cannot allocate 1074069504 bytes for the inflated
//    contents (537002004 bytes so far of the 4294967316 bytes the header (shape [4, 1024,
//    1024, 1024] of u8) declares)"
// instead of std::bad_alloc escaping the reader. PyTorch's readers (torch.load, numpy.load)
// raise the language's MemoryError there; wick's callers catch one exception type.
#include <cstdint>
#include <new>
#include <string>

#include <wick/tensor/error.h>

namespace wick {

// The most bytes one allocation of a reader may take (default: no limit): a reader asked for
// more fails as if the system had refused the memory. A guard for services that read
// untrusted files, and how the tests fail the allocations of every reader without exhausting
// memory (an address-space limit does not work under AddressSanitizer). Process-wide.
void set_reader_allocation_limit(uint64_t bytes);
uint64_t reader_allocation_limit();

// Returns allocate(), which allocates `bytes` bytes for `what` while `op` reads `path` (and
// does nothing else that can fail). A failure (std::bad_alloc, the tensor allocator's
// wick::Error, or `bytes` over reader_allocation_limit()) becomes wick::Error
// "<op>: <path>: out of memory: cannot allocate <bytes> bytes for <what>".
template <class F>
auto reader_allocate(const char* op, const std::string& path, uint64_t bytes, const std::string& what, F&& allocate)
    -> decltype(allocate()) {
  try {
    if (bytes > reader_allocation_limit()) throw std::bad_alloc();
    return allocate();
  } catch (const std::bad_alloc&) {
    detail::throw_error(op, ": ", path, ": out of memory: cannot allocate ", bytes, " bytes for ", what);
  } catch (const Error& e) {
    detail::throw_error(op, ": ", path, ": out of memory: cannot allocate ", bytes, " bytes for ", what, " (", e.what(),
                        ")");
  }
}

}  // namespace wick
