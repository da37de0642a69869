#pragma once
// IDX files, the format of MNIST and Fashion-MNIST: a 4-byte magic (two zero bytes, an
// element-type code, the number of dims), each dim as a big-endian uint32, then the
// elements in row-major order, big-endian. Files may be gzip-compressed (detected by the
// gzip magic, not by the name).
#include <cstdint>
#include <optional>
#include <string>

#include <wick/data/dataset.h>
#include <wick/tensor/tensor.h>

namespace wick {

// The element types IDX knows, by their type codes.
enum class IdxType : uint8_t { UInt8 = 0x08, Int8 = 0x09, Int16 = 0x0B, Int32 = 0x0C, Float32 = 0x0D, Float64 = 0x0E };

// Reads an IDX file into a contiguous CPU tensor of the file's shape. Element types map to
// u8 -> uint8, i8 and i16 -> int32 (wick has no narrower signed types), i32 -> int32,
// f32 -> float32, f64 -> float64. Throws wick::Error with the path and the reason for a
// missing file, a bad magic or type code, or data shorter or longer than the header says.
Tensor read_idx(const std::string& path);

// Writes `t` as an IDX file, atomically (a temporary file renamed over `path`), gzip-
// compressed when `gzip`. The element type defaults to the tensor's: uint8 and bool -> u8,
// int32 and int64 -> i32, float16/bfloat16/float32 -> f32, float64 -> f64. An explicit
// integer `type` needs an integer tensor whose values fit it (checked).
void write_idx(const std::string& path, const Tensor& t, bool gzip = false, std::optional<IdxType> type = std::nullopt);

// MNIST or Fashion-MNIST from `dir`: train-images-idx3-ubyte and train-labels-idx1-ubyte
// (t10k-* when !train), each raw or with a .gz suffix. Images uint8 [N, 1, H, W] (28 x 28
// for MNIST), labels int64 [N]. Throws wick::Error naming the file for missing files,
// anything read_idx rejects, images that are not u8 [N, H, W], labels that are not u8 [N],
// and image and label counts that differ.
Dataset load_mnist(const std::string& dir, bool train);

}  // namespace wick
