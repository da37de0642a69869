#pragma once
// Gzip bombs for the readers' tests, made here from small pieces, and a way to run a read
// in a child process and see how much memory and time it took.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <wick/data/file_io.h>
#include <wick/tensor/error.h>

#include "tests/data/temp_dir.h"

namespace wick::test {

// `head` (any bytes, gzip-compressed as one member) followed by `mib` members of 1 MiB of
// zeros each: a file of about head + mib KiB that inflates to head + mib MiB. Concatenated
// members are legal gzip, so nothing in the stream is corrupt; only its size is hostile.
inline std::vector<uint8_t> gzip_bomb(const TempDir& dir, const std::vector<uint8_t>& head, int mib) {
  const auto gz = [&](const std::vector<uint8_t>& bytes) {
    const std::string path = dir.file("gzip-bomb-piece.gz");
    write_file_atomic(path, bytes, /*gzip=*/true, "gzip_bomb");
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
  };
  std::vector<uint8_t> out = gz(head);
  const std::vector<uint8_t> zeros = gz(std::vector<uint8_t>(size_t{1} << 20, 0));
  for (int i = 0; i < mib; ++i) out.insert(out.end(), zeros.begin(), zeros.end());
  return out;
}

// What `read` did in a child process: how far its peak resident memory rose above what the
// child started with (VmHWM starts at the fork's resident size), how long it took, and the
// message of the wick::Error it threw ("" when it returned; "other exception" otherwise).
struct ChildRun {
  long peak_growth_kib = -1;
  double seconds = -1;
  std::string error;
};

inline long status_kib(const char* field) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  return -1;
}

inline ChildRun run_in_child(const std::function<void()>& read) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (child == 0) {
    ::close(fds[0]);
    const long start = status_kib("VmRSS:");
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    try {
      read();
    } catch (const Error& e) {
      error = e.what();
    } catch (...) {
      error = "other exception";
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string report = std::to_string(status_kib("VmHWM:") - start) + " " + std::to_string(seconds) + " " + error;
    ssize_t ignored = ::write(fds[1], report.data(), report.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ChildRun r;
  if (std::sscanf(report.c_str(), "%ld %lf", &r.peak_growth_kib, &r.seconds) != 2) return ChildRun{};
  const size_t at = report.find(' ', report.find(' ') + 1);
  r.error = at == std::string::npos ? "" : report.substr(at + 1);
  return r;
}

}  // namespace wick::test
