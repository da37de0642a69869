#pragma once
// The fuzz input as a file path for the readers, which take paths: a memfd (an anonymous
// in-memory file) reached through /proc/self/fd, so no input touches the disk and the
// readers' real open/read code runs.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace wick_fuzz {

inline const std::string& input_path(const uint8_t* data, size_t size) {
  static int fd = -1;
  static std::string path;
  if (fd < 0) {
    fd = ::memfd_create("wick_fuzz_input", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  if (::ftruncate(fd, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t w = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (w <= 0) std::abort();
    done += static_cast<size_t>(w);
  }
  return path;
}

}  // namespace wick_fuzz
