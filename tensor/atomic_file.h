#pragma once
// AtomicFile: writes a file so that readers see either the old content or the complete new
// one, never a torn file. Bytes go to a temporary file next to `path`; commit() flushes it
// to disk and renames it over `path`. Destroyed without commit() (an exception on the
// way), the temporary file is removed and `path` is untouched.
//
//   AtomicFile f(path, "save_checkpoint");
//   f.write(header.data(), header.size());
//   f.commit();
#include <cstddef>
#include <string>
#include <string_view>

namespace wick {

class AtomicFile {
 public:
  // `op` names the caller in error messages.
  AtomicFile(std::string path, std::string op);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  void commit();

 private:
  std::string path_, op_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `contents` written atomically to `path`.
void write_file_atomically(const std::string& path, std::string_view contents, const std::string& op);

}  // namespace wick
