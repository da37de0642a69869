#pragma once
// Whole-file reads and atomic writes for the dataset readers and writers. Reads inflate
// gzip transparently (files that start with the gzip magic 0x1f 0x8b), so every format in
// data/ accepts both "train-images-idx3-ubyte" and "train-images-idx3-ubyte.gz".
#include <cstdint>
#include <string>
#include <vector>

namespace wick {

// The default bound on what read_file_bytes returns: 4 GiB, more than any data set file
// these readers are meant for (CIFAR batches are 30 MB, MNIST's largest file 47 MB).
inline constexpr uint64_t kDefaultMaxFileBytes = uint64_t{4} << 30;

// The bytes of `path`, inflated when the file is gzip-compressed (concatenated gzip members
// are joined). Throws wick::Error naming `op`, the path and the reason (missing file, read
// error, corrupt or truncated gzip stream, contents larger than `max_bytes`).
//
// Nothing in the file is trusted for sizes: the raw read is bounded by the file's real size
// and `max_bytes`, and inflation grows its buffer as data comes out and stops with an error
// past `max_bytes` (a gzip bomb costs at most `max_bytes` of memory, not what it announces).
std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op,
                                     uint64_t max_bytes = kDefaultMaxFileBytes);

// Writes `bytes` (gzip-compressed when `gzip`) to a temporary file next to `path`, then
// renames it over `path`, so readers never see a half-written file. Throws wick::Error
// naming `op` and the path.
void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip, const char* op);

// Whether `path` names an existing regular file.
bool file_exists(const std::string& path);

}  // namespace wick
