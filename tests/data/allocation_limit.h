#pragma once
// Readers' allocation failures (issue 48, item 6), made two ways:
//   - ReaderAllocationLimit: set_reader_allocation_limit for the scope, so that a reader's
//     allocation over it fails as if the system had refused it (any build, AddressSanitizer
//     included);
//   - read_under_address_limit: the read in a forked child whose address space (RLIMIT_AS)
//     is capped 1 GiB above what it already uses, on a file declaring more, so that the
//     system really refuses. Not under a sanitizer (kAddressLimitWorks false), whose
//     allocator reserves terabytes of address space and aborts where malloc would fail.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>

#include <wick/tensor/out_of_memory.h>

#include "tests/data/data_limit.h"
#include "tests/data/gzip_bomb.h"

namespace wick::test {

#ifdef WICK_SANITIZER_ALLOCATOR
inline constexpr bool kAddressLimitWorks = false;
#else
inline constexpr bool kAddressLimitWorks = true;
#endif

class ReaderAllocationLimit {
 public:
  explicit ReaderAllocationLimit(uint64_t bytes) { set_reader_allocation_limit(bytes); }
  ~ReaderAllocationLimit() { set_reader_allocation_limit(std::numeric_limits<uint64_t>::max()); }
  ReaderAllocationLimit(const ReaderAllocationLimit&) = delete;
  ReaderAllocationLimit& operator=(const ReaderAllocationLimit&) = delete;
};

// What `read` threw in a child whose address space is capped 1 GiB above its size at the
// fork: the wick::Error's message, "" when it returned, "other exception" for anything else
// (std::bad_alloc included), or "setrlimit failed".
inline std::string read_under_address_limit(const std::function<void()>& read) {
  const ChildRun r = run_in_child([&] {
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (rlim_t{1} << 30);
    struct rlimit limit {cap, cap};
    if (pages == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) detail::throw_error("setrlimit failed");
    read();
  });
  return r.peak_growth_kib < 0 ? "the child did not report" : r.error;
}

}  // namespace wick::test
