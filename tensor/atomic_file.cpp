#include <wick/tensor/atomic_file.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <wick/tensor/error.h>

namespace wick {
namespace {

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Whether `name` is `<target>.tmp.` followed by exactly six of mkstemp's letters and digits.
bool is_temporary_of(const std::string& name, const std::string& target) {
  const std::string prefix = target + ".tmp.";
  if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) return false;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

// Removes `dir/name` when its writer is gone: nobody holds its lock (writers hold one from
// creation until after the file is closed) and it has not changed for kStaleTemporaryAge.
// The age also protects the two moments a live writer does not hold the lock (between
// mkstemp and flock, and between close and rename) and writers that never lock (older
// versions). Best effort: any failure leaves the file alone.
void remove_if_stale(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  struct timespec now {};
  const bool old_regular_file = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                                ::clock_gettime(CLOCK_REALTIME, &now) == 0 &&
                                now.tv_sec - st.st_mtim.tv_sec >= kStaleTemporaryAge.count();
  // flock locks belong to the open file description, so this also sees a lock held by
  // another thread of this process (a POSIX fcntl lock would not, and closing this fd would
  // drop that thread's lock).
  if (old_regular_file && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
  ::close(fd);
}

}  // namespace

void remove_stale_temporaries(const std::string& path) {
  const std::string dir = directory_of(path), target = base_name(path);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (const struct dirent* entry = ::readdir(d)) {
    if (is_temporary_of(entry->d_name, target)) stale.emplace_back(entry->d_name);
  }
  ::closedir(d);
  for (const std::string& name : stale) remove_if_stale(dir, name);
}

AtomicFile::AtomicFile(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  tmp_ = path_ + ".tmp.XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  WICK_CHECK(fd_ >= 0, op_, ": cannot create a temporary file next to ", path_, ": ", errno_text());
  // Marks the temporary as in use for remove_stale_temporaries; released by the kernel when
  // this process dies, which is what makes a killed writer's temporary recognisable.
  ::flock(fd_, LOCK_EX | LOCK_NB);
  if (::fchmod(fd_, 0644) != 0) {
    std::string why = errno_text();
    ::close(fd_);
    ::unlink(tmp_.c_str());
    WICK_CHECK(false, op_, ": chmod ", tmp_, ": ", why);
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  WICK_CHECK(!committed_, op_, ": write after commit of ", path_);
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    WICK_CHECK(w > 0, op_, ": writing ", tmp_, ": ", errno_text());
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  WICK_CHECK(!committed_, op_, ": ", path_, " committed twice");
  WICK_CHECK(::fsync(fd_) == 0, op_, ": fsync ", tmp_, ": ", errno_text());
  int closed = ::close(fd_);
  fd_ = -1;
  WICK_CHECK(closed == 0, op_, ": closing ", tmp_, ": ", errno_text());
  WICK_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, op_, ": cannot rename ", tmp_, " to ", path_, ": ",
             errno_text());
  committed_ = true;
  // Makes the rename itself durable; a failure here leaves a complete file either way.
  int dir = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  remove_stale_temporaries(path_);
}

void write_file_atomically(const std::string& path, std::string_view contents, const std::string& op) {
  AtomicFile f(path, op);
  f.write(contents);
  f.commit();
}

}  // namespace wick
