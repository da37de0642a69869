#pragma once
// AtomicFile: writes a file so that readers see either the old content or the complete new
// one, never a torn file. Bytes go to a temporary file next to `path`; commit() flushes it
// to disk and renames it over `path`. Destroyed without commit() (an exception on the
// way), the temporary file is removed and `path` is untouched.
//
//   AtomicFile f(path, "save_checkpoint");
//   f.write(header.data(), header.size());
//   f.commit();
#include <chrono>
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

// A writer killed between creating its temporary file and commit() leaves the temporary
// behind (`<path>.tmp.XXXXXX`, one per kill, as large as the file). Each successful commit()
// removes the stale temporaries of the same target: names matching exactly that pattern
// whose writer is gone, which is told by two signs together:
//   - no process holds the flock() that every AtomicFile takes on its temporary from
//     creation until it is closed (the kernel drops it when the writer dies), and
//   - the file has not been modified for kStaleTemporaryAge, which covers the instants a
//     live writer holds no lock (just after mkstemp, between close and rename) and writers
//     that do not lock.
// A concurrent writer of the same target is therefore never disturbed. Temporaries of other
// targets in the folder are left alone.
inline constexpr std::chrono::seconds kStaleTemporaryAge{60};

// What commit() does after the rename, callable on its own (e.g. at start-up).
void remove_stale_temporaries(const std::string& path);

// The whole of `contents` written atomically to `path`.
void write_file_atomically(const std::string& path, std::string_view contents, const std::string& op);

}  // namespace wick
