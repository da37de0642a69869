#pragma once
// MappedFile: a file opened for reading whose bytes can be read with bounds checks
// (before anything is trusted) and then memory-mapped read-only.
//
// Read-only file mappings are backed by the page cache, not by the process's memory: on
// Linux >= 4.7 they do not count toward RLIMIT_DATA, and pages the kernel needs back are
// dropped rather than swapped. So a data set larger than RAM (or than a memory limit)
// can be read row by row.
//
// Thread safety: read() and map() may be called from several threads at once.
// (An in-memory form holds bytes that are not a file's, for the readers' sake.)
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace wick {

class MappedFile {
 public:
  // Opens `path` for reading (throws naming the path and the system's reason).
  explicit MappedFile(const std::string& path);
  // Bytes already in memory (an .npz member inflated from the archive), read and "mapped"
  // through the same calls; `name` stands for the path in messages.
  MappedFile(std::string name, std::vector<uint8_t> bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

  // Bytes [offset, offset + count) read with pread; throws unless the range lies inside
  // the file (checked before anything is allocated). `what` names the piece in messages.
  std::vector<uint8_t> read(uint64_t offset, uint64_t count, const char* what) const;
  // The whole file mapped read-only (PROT_READ: writing through the pointer faults). Maps
  // once; later calls return the same address. nullptr for an empty file.
  const uint8_t* map();

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::once_flag mapped_;
  void* base_ = nullptr;
  std::vector<uint8_t> bytes_;  // the in-memory form's contents (fd_ < 0)
};

}  // namespace wick
