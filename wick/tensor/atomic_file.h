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

  // The temporary's name (for tests and messages).
  const std::string& temporary_path() const { return tmp_; }

 private:
  std::string path_, op_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// A writer killed between creating its temporary file and commit() leaves the temporary
// behind (as large as the file, one per kill). Its name says whose it is:
// `<path>.tmp.<pid>.<host>.XXXXXX`, the writer's process id and a tag of its host name.
// Every AtomicFile removes the stale temporaries of its target when it is created and again
// after its commit, so a killed writer's file goes with the next save of that file. A
// temporary is stale when no process holds the flock() that every AtomicFile holds on its
// temporary from creation until the temporary is renamed or removed (the kernel drops it
// when the writer dies), and
//   - its writer's process is gone: same host tag, and no process with that pid here; or
//   - it has not been modified for kStaleTemporaryAge: a name without pid and host
//     (`<path>.tmp.XXXXXX`, written by an older wick), another host's temporary (a shared
//     folder: its pid means nothing here), or a pid in use again by another process.
// A live writer of the same target is therefore never disturbed: it holds its lock from the
// microseconds after creating the file until the rename. (A writer in another pid namespace
// with the same host name and folder, killed-looking during those microseconds, is the one
// case this cannot tell; its commit then fails with a clear error, never a torn file.)
// Temporaries of other targets in the folder are left alone.
inline constexpr std::chrono::seconds kStaleTemporaryAge{60};

// What AtomicFile does before writing and after its commit, callable on its own (e.g. when
// a checkpoint is loaded).
void remove_stale_temporaries(const std::string& path);

// The whole of `contents` written atomically to `path`.
void write_file_atomically(const std::string& path, std::string_view contents, const std::string& op);

}  // namespace wick
