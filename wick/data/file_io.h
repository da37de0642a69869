#pragma once
// Whole-file reads and atomic writes for the dataset readers and writers. Reads inflate
// gzip transparently (files that start with the gzip magic 0x1f 0x8b), so every format in
// data/ accepts both "train-images-idx3-ubyte" and "train-images-idx3-ubyte.gz".
#include <cstdint>
#include <functional>
#include <optional>
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

// The most bytes a file's contents may hold by what its format says (an IDX header's shape,
// a CIFAR file's largest record count), and the words for a message: inflating stops "at
// more than the <bytes> bytes <what>", e.g. what = "the header (shape [2, 3] of u8) declares".
struct ContentBound {
  uint64_t bytes;
  std::string what;
};
// Sees the first `n` bytes of the contents (inflated): the bound once it can tell (the
// header is complete), std::nullopt to be called again with more. May throw wick::Error
// for a header that is already wrong.
using ContentBoundFn = std::function<std::optional<ContentBound>(const uint8_t* data, size_t n)>;

// read_file_bytes with the inflation of a gzip file also bounded by `bound`, applied as soon
// as it is known: a small gzip that inflates to gigabytes behind a header declaring a few
// megabytes is refused after those few megabytes, not after max_bytes. A raw file is read
// whole (its size on disk is real, bounded by max_bytes) and left to the format's own checks.
std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op, const ContentBoundFn& bound,
                                     uint64_t max_bytes = kDefaultMaxFileBytes);

// Writes `bytes` (gzip-compressed when `gzip`) to a temporary file next to `path`, then
// renames it over `path`, so readers never see a half-written file. Throws wick::Error
// naming `op` and the path.
void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip, const char* op);

// Whether `path` names an existing regular file.
bool file_exists(const std::string& path);

}  // namespace wick
