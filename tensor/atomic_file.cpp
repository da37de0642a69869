#include <wick/tensor/atomic_file.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <wick/tensor/error.h>

namespace wick {
namespace {

std::string directory_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  tmp_ = path_ + ".tmp.XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  WICK_CHECK(fd_ >= 0, op_, ": cannot create a temporary file next to ", path_, ": ", errno_text());
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
}

void write_file_atomically(const std::string& path, std::string_view contents, const std::string& op) {
  AtomicFile f(path, op);
  f.write(contents);
  f.commit();
}

}  // namespace wick
