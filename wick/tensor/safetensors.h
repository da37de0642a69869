#pragma once
// safetensors files (Hugging Face's format, which PyTorch and HF read): an 8-byte
// little-endian header length N, N bytes of JSON
//   {"__metadata__": {"key": "value"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
// padded with spaces to a multiple of 8, then the tensors' raw little-endian bytes, each at
// its offsets relative to the end of the header. Dtypes: F64 F32 F16 BF16 I64 I32 U8 BOOL.
#include <map>
#include <string>
#include <vector>

#include <wick/tensor/tensor.h>

namespace wick {

// Named tensors, ordered by name (state dicts, optimizer state, safetensors files).
using TensorMap = std::map<std::string, Tensor>;
using StringMap = std::map<std::string, std::string>;

// Writes `tensors` (any device and layout; stored in name order) and `metadata` to `path`
// atomically: the bytes go to a temporary file in the same directory, which is flushed to
// disk and then renamed over `path`, so an interrupted or failed save leaves any previous
// file intact.
void save_safetensors(const std::string& path, const TensorMap& tensors, const StringMap& metadata = {});

// Reads every tensor of a safetensors file into contiguous CPU tensors, and its metadata
// into `metadata` when given. Validates the whole header first (length bound, JSON syntax,
// dtype, shape, offsets inside the data section, no overlap or gap, no duplicate name) and
// throws wick::Error naming the path and the problem for a truncated or corrupt file.
TensorMap load_safetensors(const std::string& path, StringMap* metadata = nullptr);

// Where each tensor of a safetensors file lies, without reading any tensor: the header,
// validated as load_safetensors does. For readers that map the file (data/safetensors_dataset).
struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t offset;  // of its first byte, from the start of the file
};
struct SafetensorsIndex {
  std::vector<SafetensorsEntry> tensors;  // by name
  StringMap metadata;
};
SafetensorsIndex read_safetensors_index(const std::string& path);

}  // namespace wick
