#include <wick/data/mapped_file.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <wick/tensor/error.h>
#include <wick/tensor/out_of_memory.h>

namespace wick {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  WICK_CHECK(fd_ >= 0, "MappedFile: cannot open '", path, "': ", errno_text());
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string reason = S_ISREG(st.st_mode) ? errno_text() : std::string("not a regular file");
    ::close(fd_);
    detail::throw_error("MappedFile: cannot read '", path, "': ", reason);
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

MappedFile::MappedFile(std::string name, std::vector<uint8_t> bytes)
    : path_(std::move(name)), size_(bytes.size()), bytes_(std::move(bytes)) {}

MappedFile::~MappedFile() {
  if (base_ != nullptr) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

std::vector<uint8_t> MappedFile::read(uint64_t offset, uint64_t count, const char* what) const {
  WICK_CHECK(offset <= size_ && count <= size_ - offset, "'", path_, "': the ", what, " (", count,
             " bytes at offset ", offset, ") runs past the end of the file (", size_, " bytes)");
  std::vector<uint8_t> out = reader_allocate("MappedFile::read", "'" + path_ + "'", count, std::string("the ") + what,
                                             [&] { return std::vector<uint8_t>(static_cast<size_t>(count)); });
  if (fd_ < 0) {
    std::copy_n(bytes_.data() + offset, count, out.data());
    return out;
  }
  uint64_t done = 0;
  while (done < count) {
    const ssize_t got = ::pread(fd_, out.data() + done, count - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    WICK_CHECK(got > 0, "'", path_, "': reading the ", what, " failed: ",
               got < 0 ? errno_text() : std::string("the file shrank"));
    done += static_cast<uint64_t>(got);
  }
  return out;
}

const uint8_t* MappedFile::map() {
  if (fd_ < 0) return bytes_.empty() ? nullptr : bytes_.data();
  std::call_once(mapped_, [&] {
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    WICK_CHECK(p != MAP_FAILED, "MappedFile: cannot map '", path_, "' (", size_, " bytes): ", errno_text());
    base_ = p;
  });
  return static_cast<const uint8_t*>(base_);
}

}  // namespace wick
