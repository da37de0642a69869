#pragma once
// Runs a check in a forked child whose RLIMIT_DATA is what it already uses plus `headroom`
// bytes: how the tests show that memory-mapped datasets read files larger than a memory
// limit. A read-only mapping does not count toward RLIMIT_DATA (Linux >= 4.7); reading the
// file into memory would. Before the check, the child makes sure a malloc of `must_not_fit`
// bytes now fails, so a test using this cannot pass vacuously.
//
// Returns the child's exit status: `body`'s return value, or 10 (no VmData line), 11
// (setrlimit failed), 12 (the malloc succeeded: the limit does not bite), 16 (body threw).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <wick/tensor/allocator.h>

// A sanitizer's allocator maps its memory outside what RLIMIT_DATA limits (and needs far more
// than the headroom): the malloc check would fail and prove nothing.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define WICK_SANITIZER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WICK_SANITIZER_ALLOCATOR 1
#endif

namespace wick::test {

inline constexpr const char* kDataLimitCodes =
    "10: no VmData, 11: setrlimit, 12: malloc of the file size succeeded, 16: exception";

inline int run_under_data_limit(size_t headroom, size_t must_not_fit, const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    cpu_empty_cache();
    long vm_data_kb = -1;
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "VmData:", 7) == 0) vm_data_kb = std::strtol(line + 7, nullptr, 10);
      std::fclose(f);
    }
    if (vm_data_kb < 0) ::_exit(10);
    const rlim_t limit = static_cast<rlim_t>(vm_data_kb) * 1024 + headroom;
    struct rlimit rl{limit, limit};
    if (::setrlimit(RLIMIT_DATA, &rl) != 0) ::_exit(11);
    void* whole = std::malloc(must_not_fit);
    if (whole != nullptr) ::_exit(12);
    try {
      ::_exit(body());
    } catch (...) {
      ::_exit(16);
    }
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) return -1;
  if (!WIFEXITED(status)) return 1000 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);  // died by a signal
  return WEXITSTATUS(status);
}

}  // namespace wick::test
