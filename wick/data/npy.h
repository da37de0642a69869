#pragma once
// NumPy .npy files and .npz archives, memory-mapped read-only (np.load(mmap_mode='r')).
//
// .npy: magic "\x93NUMPY", version 1.0, 2.0 or 3.0, a little-endian header length, and a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...)}.
// Supported descr: <f2 <f4 <f8 <i4 <i8 |u1 |b1 (one-byte types also as <u1 / <b1, and '='
// for little-endian). Big-endian ('>'), object ('O') and structured dtypes, unsupported
// element types and Fortran order are refused with a wick::Error.
// .npz: a zip of .npy members (np.savez). STORED members are mapped where they lie in the
// archive (their CRCs are not checked: that would read it all); DEFLATED ones
// (np.savez_compressed) are inflated into memory with zlib, to exactly the size the archive
// declares (allocated through reader_allocate: an absurd size is a wick::Error), and their
// CRC-32 checked. The zip's central directory is read with bounds checks (ZIP64 included).
//
// Untrusted sizes: every size read from a file (header length, shape, member sizes and
// offsets) is checked against the file's length, with overflow checks, before anything is
// mapped or allocated; the data must fill the rest of the .npy (or member) exactly.
//
// The file must not be truncated or rewritten in place while it is mapped (replace it with
// a new file and a rename instead): reading a mapped page past a file's new end raises
// SIGBUS, as with np.load(mmap_mode='r').
//
// Thread safety: an NpyArray is immutable; row() and view() may be called concurrently.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <wick/data/map_dataset.h>
#include <wick/data/mapped_file.h>
#include <wick/tensor/tensor.h>

namespace wick {

class NpyArray {
 public:
  NpyArray() = default;
  // `file` must already be mapped; the array's bytes are [offset, offset + nbytes).
  NpyArray(std::shared_ptr<MappedFile> file, std::string name, DType dtype, std::vector<int64_t> shape,
           uint64_t offset);

  const std::string& name() const { return name_; }  // "a.npy" or "a.npz:x"
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  uint64_t nbytes() const { return static_cast<uint64_t>(numel()) * element_size(dtype_); }

  // Row i of dim 0 (shape()[1:]) as a new tensor (copied out of the mapping, so it is
  // writable and aligned). Throws for a 0-d array or i out of range.
  Tensor row(int64_t i) const;
  // Everything, copied into memory.
  Tensor load() const;
  // The mapping itself, no copy. The memory is read-only: writing to it (an in-place op)
  // crashes with SIGSEGV; clone() first. Keeps the file mapped while any view lives.
  // Throws if the data is not aligned to its element size (possible inside a .npz).
  Tensor view() const;

 private:
  const uint8_t* data() const;
  std::shared_ptr<MappedFile> file_;
  std::string name_;
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_;
  uint64_t offset_ = 0;
};

// The array of a .npy file.
NpyArray open_npy(const std::string& path);

// Writes `t` (any layout, on any device) as a version 1.0 .npy file NumPy reads, to a
// temporary name and then renamed over `path`. Throws wick::Error for a dtype .npy files
// here cannot hold (bfloat16) and when the file cannot be written.
void save_npy(const std::string& path, const Tensor& t);
// The arrays of a .npz file in archive order, named like np.load's keys (member names
// without ".npy"). Members not named *.npy are skipped.
std::vector<std::pair<std::string, NpyArray>> open_npz(const std::string& path);

// Named arrays of equal length along dim 0 (e.g. "image" and "label" from two .npy files,
// or all arrays of one .npz); example i holds row i of each (copied out of the mapping).
class ArrayDictDataset : public MapDataset {
 public:
  explicit ArrayDictDataset(std::vector<std::pair<std::string, NpyArray>> fields);
  using MapDataset::get;
  int64_t size() const override { return size_; }
  Example get(int64_t i) const override;

 private:
  std::vector<std::pair<std::string, NpyArray>> fields_;
  int64_t size_ = 0;
};

// One .npy file as field `field` (row i is example i).
std::shared_ptr<const MapDataset> npy_dataset(const std::string& path, const std::string& field = "input");
// Every array of a .npz file, fields named by their keys.
std::shared_ptr<const MapDataset> npz_dataset(const std::string& path);

}  // namespace wick
