#include <wick/tensor/atomic_file.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
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

bool is_mkstemp_suffix(std::string_view s) {
  if (s.size() != 6) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

// This host's tag in temporary names: 8 hex digits of an FNV-1a hash of the host name, so
// that a pid is only judged on the host where it means something.
const std::string& host_tag() {
  static const std::string tag = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
    uint32_t h = 2166136261u;
    for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", h);
    return std::string(hex);
  }();
  return tag;
}

// What a temporary's name says about its writer.
struct TemporaryName {
  bool matches = false;  // `<target>.tmp.` + one of the two forms below
  long pid = 0;          // 0: the older form without pid and host
  std::string host;
};

// `<target>.tmp.XXXXXX` (older wick) or `<target>.tmp.<pid>.<host>.XXXXXX`.
TemporaryName parse_temporary_name(const std::string& name, const std::string& target) {
  TemporaryName out;
  const std::string prefix = target + ".tmp.";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return out;
  std::string_view rest(name);
  rest.remove_prefix(prefix.size());
  if (is_mkstemp_suffix(rest)) {
    out.matches = true;
    return out;
  }
  const size_t dot1 = rest.find('.');
  if (dot1 == std::string_view::npos || dot1 == 0 || dot1 > 10) return out;
  long pid = 0;
  for (size_t i = 0; i < dot1; ++i) {
    if (rest[i] < '0' || rest[i] > '9') return out;
    pid = pid * 10 + (rest[i] - '0');
  }
  std::string_view after = rest.substr(dot1 + 1);
  if (after.size() != 8 + 1 + 6 || after[8] != '.' || !is_mkstemp_suffix(after.substr(9))) return out;
  for (size_t i = 0; i < 8; ++i)
    if (!((after[i] >= '0' && after[i] <= '9') || (after[i] >= 'a' && after[i] <= 'f'))) return out;
  if (pid <= 0) return out;
  out.matches = true;
  out.pid = pid;
  out.host = std::string(after.substr(0, 8));
  return out;
}

// Whether the process that wrote a temporary here is certainly gone (see atomic_file.h).
bool writer_is_gone(const TemporaryName& t) {
  if (t.pid == 0 || t.host != host_tag()) return false;
  return ::kill(static_cast<pid_t>(t.pid), 0) != 0 && errno == ESRCH;
}

// Removes `dir/name` when its writer is gone: nobody holds its lock, and either its writer's
// process has ended or the file has not changed for kStaleTemporaryAge. Best effort: any
// failure leaves the file alone.
void remove_if_stale(const std::string& dir, const std::string& name, const TemporaryName& t) {
  const std::string path = dir + "/" + name;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  struct timespec now {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const bool old = regular && ::clock_gettime(CLOCK_REALTIME, &now) == 0 &&
                   now.tv_sec - st.st_mtim.tv_sec >= kStaleTemporaryAge.count();
  // flock locks belong to the open file description, so this also sees a lock held by
  // another thread of this process (a POSIX fcntl lock would not, and closing this fd would
  // drop that thread's lock).
  if (regular && (old || writer_is_gone(t)) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
  ::close(fd);
}

}  // namespace

void remove_stale_temporaries(const std::string& path) {
  const std::string dir = directory_of(path), target = base_name(path);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::pair<std::string, TemporaryName>> candidates;
  while (const struct dirent* entry = ::readdir(d)) {
    TemporaryName t = parse_temporary_name(entry->d_name, target);
    if (t.matches) candidates.emplace_back(entry->d_name, std::move(t));
  }
  ::closedir(d);
  for (const auto& [name, t] : candidates) remove_if_stale(dir, name, t);
}

AtomicFile::AtomicFile(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  // A writer killed before this save left its temporary: gone now rather than after us.
  remove_stale_temporaries(path_);
  tmp_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + host_tag() + ".XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  WICK_CHECK(fd_ >= 0, op_, ": cannot create a temporary file next to ", path_, ": ", errno_text());
  // Marks the temporary as in use for remove_stale_temporaries until it is renamed or
  // removed; released by the kernel when this process dies.
  ::flock(fd_, LOCK_EX | LOCK_NB);
  if (::fchmod(fd_, 0644) != 0) {
    std::string why = errno_text();
    ::unlink(tmp_.c_str());
    ::close(fd_);
    WICK_CHECK(false, op_, ": chmod ", tmp_, ": ", why);
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  ::unlink(tmp_.c_str());  // before closing: the lock covers the name as long as it exists
  if (fd_ >= 0) ::close(fd_);
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
  // Renamed while still open and locked: until the name is gone, a clean-up elsewhere sees a
  // live writer.
  WICK_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, op_, ": cannot rename ", tmp_, " to ", path_, ": ",
             errno_text());
  committed_ = true;
  // The data reached the disk with the fsync above: an error closing it now cannot undo that.
  ::close(fd_);
  fd_ = -1;
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
