#pragma once
// Large files read under a memory limit: how the tests show that memory-mapped datasets
// read files larger than a memory limit. A read-only mapping does not count toward
// RLIMIT_DATA (Linux >= 4.7); reading the file into memory would.
//
// run_under_data_limit runs a check in a forked child whose RLIMIT_DATA is what it already
// uses plus `headroom` bytes. Before the check the child makes sure a malloc of
// `must_not_fit` bytes now fails, so a test using it cannot pass vacuously. It returns the
// child's exit status: `body`'s return value, or 10 (no VmData line), 11 (setrlimit failed),
// 12 (the malloc succeeded: the limit does not bite), 16 (body threw), 1000 + the signal
// that killed the child.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include <wick/data/data_loader.h>
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

// `prefix`, then rows x cols bytes that take no disk (a sparse file) except one marked byte
// per 4096 rows (row r holds 1 + r / 4096 at column r % cols), so that reads are checked, not
// just zeros. False when a write fails.
inline bool write_marked_rows(const std::string& path, const std::string& prefix, int64_t rows, int64_t cols) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  bool ok = ::write(fd, prefix.data(), prefix.size()) == static_cast<ssize_t>(prefix.size()) &&
            ::ftruncate(fd, static_cast<off_t>(prefix.size() + rows * cols)) == 0;
  for (int64_t r = 0; ok && r < rows; r += 4096) {
    const char mark = static_cast<char>(1 + r / 4096);
    ok = ::pwrite(fd, &mark, 1, static_cast<off_t>(prefix.size() + r * cols + r % cols)) == 1;
  }
  ::close(fd);
  return ok;
}

// Reads every batch of `loader` (uint8 rows of `cols` bytes in field `field`): 0 when all
// `rows` rows of write_marked_rows' file came, marks included; 14: a wrong row count, 15: a
// wrong mark.
inline int check_marked_rows(DataLoader& loader, const std::string& field, int64_t rows, int64_t cols) {
  int64_t seen = 0, marks = 0;
  while (std::optional<Example> b = loader.next()) {
    const Tensor t = b->at(field);
    const uint8_t* d = static_cast<const uint8_t*>(t.data_ptr());
    for (int64_t r = 0; r < t.size(0); ++r, ++seen) {
      if (seen % 4096 == 0) marks += d[r * cols + seen % cols] == 1 + seen / 4096;
    }
  }
  if (seen != rows) return 14;
  return marks == rows / 4096 ? 0 : 15;
}

}  // namespace wick::test
