#include <wick/data/idx.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include <wick/data/file_io.h>
#include <wick/tensor/out_of_memory.h>

namespace wick {

namespace {

const char* idx_type_name(uint8_t code) {
  switch (code) {
    case 0x08: return "u8";
    case 0x09: return "i8";
    case 0x0B: return "i16";
    case 0x0C: return "i32";
    case 0x0D: return "f32";
    case 0x0E: return "f64";
    default: return nullptr;
  }
}

size_t idx_element_size(uint8_t code) {
  switch (code) {
    case 0x08: case 0x09: return 1;
    case 0x0B: return 2;
    case 0x0C: case 0x0D: return 4;
    default: return 8;
  }
}

uint64_t load_be(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

void store_be(uint8_t* p, uint64_t v, size_t n) {
  for (size_t i = n; i-- > 0;) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

std::string hex_byte(uint8_t b) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// The dtype an IDX element type reads into: u8 as uint8, the signed integers as int32, the
// floats as themselves.
DType idx_dtype(uint8_t code) {
  switch (code) {
    case 0x08: return DType::UInt8;
    case 0x09: case 0x0B: case 0x0C: return DType::Int32;
    case 0x0D: return DType::Float32;
    default: return DType::Float64;
  }
}

// Converts the big-endian elements after the header into `t` (of idx_dtype(code)).
void decode_elements(const uint8_t* src, uint8_t code, Tensor& t) {
  const int64_t n = t.numel();
  switch (code) {
    case 0x08: {
      if (n > 0) std::memcpy(t.data_ptr(), src, static_cast<size_t>(n));
      return;
    }
    case 0x09: case 0x0B: case 0x0C: {
      int32_t* out = t.data<int32_t>();
      const size_t es = idx_element_size(code);
      for (int64_t i = 0; i < n; ++i) {
        uint64_t raw = load_be(src + i * es, es);
        // Sign-extend from the element's width.
        const int shift = 64 - static_cast<int>(8 * es);
        out[i] = static_cast<int32_t>(static_cast<int64_t>(raw << shift) >> shift);
      }
      return;
    }
    case 0x0D: {
      float* out = t.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        uint32_t bits = static_cast<uint32_t>(load_be(src + i * 4, 4));
        std::memcpy(out + i, &bits, 4);
      }
      return;
    }
    default: {
      double* out = t.data<double>();
      for (int64_t i = 0; i < n; ++i) {
        uint64_t bits = load_be(src + i * 8, 8);
        std::memcpy(out + i, &bits, 8);
      }
      return;
    }
  }
}

// What an IDX header says: the element type, the shape, the header's length and how many
// data bytes must follow it.
struct IdxHeader {
  uint8_t code;
  const char* type;
  Shape shape;
  size_t header;
  uint64_t data_bytes;
};

// The header from the first n bytes of a file, or std::nullopt when they end before it does.
// Throws for a bad magic or type code and for an implausibly large shape, which the first
// bytes already show.
std::optional<IdxHeader> read_idx_header(const uint8_t* bytes, size_t n, const std::string& path) {
  if (n < 4) return std::nullopt;
  WICK_CHECK(bytes[0] == 0 && bytes[1] == 0, "read_idx: ", path, ": bad magic ", hex_byte(bytes[0]), " ",
             hex_byte(bytes[1]), " ", hex_byte(bytes[2]), " ", hex_byte(bytes[3]),
             ": an IDX file starts with two zero bytes, a type code and the number of dims");
  const uint8_t code = bytes[2];
  const char* type = idx_type_name(code);
  WICK_CHECK(type != nullptr, "read_idx: ", path, ": bad magic: unknown element type code ", hex_byte(code),
             " (IDX knows 0x08 u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32, 0x0e f64)");
  const size_t ndim = bytes[3];
  const size_t header = 4 + 4 * ndim;
  if (n < header) return std::nullopt;
  Shape shape(ndim);
  // The product of the sizes with zeros counted as ones bounds every stride of the tensor
  // too: a zero size early in the shape makes the element count 0 but leaves the strides
  // of [0, 2^32-1, 2^32-1, ...] far beyond int64 (it must not pass as an empty tensor).
  uint64_t numel = 1, extent = 1;
  bool overflow = false;
  for (size_t d = 0; d < ndim; ++d) {
    shape[d] = static_cast<int64_t>(load_be(bytes + 4 + 4 * d, 4));
    const uint64_t size = static_cast<uint64_t>(shape[d]);
    if (overflow) continue;  // the rest of the shape is read for the message only
    if (__builtin_mul_overflow(extent, std::max<uint64_t>(size, 1), &extent) || extent > (uint64_t{1} << 48))
      overflow = true;
    numel *= size;  // numel <= extent
  }
  WICK_CHECK(!overflow, "read_idx: ", path, ": the header's shape ", shape_str(shape),
             " is implausibly large (more than 2^48 elements, counting zero sizes as one)");
  return IdxHeader{code, type, std::move(shape), header, numel * idx_element_size(code)};
}

Tensor parse_idx(const std::vector<uint8_t>& bytes, const std::string& path) {
  WICK_CHECK(bytes.size() >= 4, "read_idx: ", path, ": truncated: ", bytes.size(),
             " bytes, shorter than the 4-byte IDX magic");
  const std::optional<IdxHeader> h = read_idx_header(bytes.data(), bytes.size(), path);
  WICK_CHECK(h.has_value(), "read_idx: ", path, ": truncated: the header of ", static_cast<size_t>(bytes[3]), " dims needs ",
             4 + 4 * static_cast<size_t>(bytes[3]), " bytes but the file has ", bytes.size());
  const uint64_t need = h->data_bytes;
  const uint64_t have = bytes.size() - h->header;
  WICK_CHECK(have >= need, "read_idx: ", path, ": truncated: the header's shape ", shape_str(h->shape), " of ", h->type,
             " needs ", need, " bytes of data but only ", have, " follow");
  WICK_CHECK(have == need, "read_idx: ", path, ": size disagrees with the header: shape ", shape_str(h->shape), " of ",
             h->type, " needs ", need, " bytes of data but ", have, " follow");
  const DType dtype = idx_dtype(h->code);
  const uint64_t out_bytes = static_cast<uint64_t>(numel_of(h->shape)) * element_size(dtype);
  Tensor t = reader_allocate("read_idx", path, out_bytes,
                             "the tensor of shape " + shape_str(h->shape) + " (" + dtype_name(dtype) + ")",
                             [&] { return empty(h->shape, dtype); });
  decode_elements(bytes.data() + h->header, h->code, t);
  return t;
}

IdxType default_idx_type(DType t) {
  switch (t) {
    case DType::Bool: case DType::UInt8: return IdxType::UInt8;
    case DType::Int32: case DType::Int64: return IdxType::Int32;
    case DType::Float64: return IdxType::Float64;
    default: return IdxType::Float32;
  }
}

}  // namespace

Tensor read_idx(const std::string& path) {
  // A gzip file inflates no further than its header says the file holds, so a bomb behind
  // a small header costs what the header declares, not gigabytes.
  const ContentBoundFn bound = [&path](const uint8_t* p, size_t n) -> std::optional<ContentBound> {
    const std::optional<IdxHeader> h = read_idx_header(p, n, path);
    if (!h) return std::nullopt;
    return ContentBound{h->header + h->data_bytes,
                        "the header (shape " + shape_str(h->shape) + " of " + h->type + ") declares"};
  };
  return parse_idx(read_file_bytes(path, "read_idx", bound), path);
}

void write_idx(const std::string& path, const Tensor& t, bool gzip, std::optional<IdxType> type_opt) {
  WICK_CHECK(t.defined(), "write_idx: ", path, ": the tensor is undefined");
  WICK_CHECK(t.dim() <= 255, "write_idx: ", path, ": IDX holds at most 255 dims, the tensor has ", t.dim());
  for (int64_t s : t.shape())
    WICK_CHECK(s <= std::numeric_limits<uint32_t>::max(), "write_idx: ", path, ": shape ", shape_str(t.shape()),
               " has a size that does not fit IDX's 32-bit dims");
  const IdxType type = type_opt.value_or(default_idx_type(t.dtype()));
  const uint8_t code = static_cast<uint8_t>(type);
  const char* name = idx_type_name(code);
  WICK_CHECK(name != nullptr, "write_idx: ", path, ": unknown IDX type code ", hex_byte(code));
  const size_t es = idx_element_size(code);
  const int64_t n = t.numel();

  std::vector<uint8_t> bytes(4 + 4 * t.shape().size() + static_cast<size_t>(n) * es);
  bytes[2] = code;
  bytes[3] = static_cast<uint8_t>(t.dim());
  for (size_t d = 0; d < t.shape().size(); ++d) store_be(bytes.data() + 4 + 4 * d, static_cast<uint64_t>(t.shape()[d]), 4);
  uint8_t* out = bytes.data() + 4 + 4 * t.shape().size();

  if (type == IdxType::Float32 || type == IdxType::Float64) {
    if (type == IdxType::Float32) {
      std::vector<float> v = t.to_vector<float>();
      for (int64_t i = 0; i < n; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &v[i], 4);
        store_be(out + 4 * i, bits, 4);
      }
    } else {
      std::vector<double> v = t.to_vector<double>();
      for (int64_t i = 0; i < n; ++i) {
        uint64_t bits;
        std::memcpy(&bits, &v[i], 8);
        store_be(out + 8 * i, bits, 8);
      }
    }
  } else {
    WICK_CHECK(is_integral(t.dtype(), /*include_bool=*/true), "write_idx: ", path, ": cannot store ",
               dtype_name(t.dtype()), " values as IDX ", name, " (an integer type)");
    const int64_t lo = type == IdxType::UInt8 ? 0 : -(int64_t{1} << (8 * es - 1));
    const int64_t hi = type == IdxType::UInt8 ? 255 : (int64_t{1} << (8 * es - 1)) - 1;
    std::vector<int64_t> v = t.to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      WICK_CHECK(lo <= v[i] && v[i] <= hi, "write_idx: ", path, ": element ", i, " = ", v[i], " does not fit IDX ",
                 name, " [", lo, ", ", hi, "]");
      store_be(out + es * i, static_cast<uint64_t>(v[i]), es);
    }
  }
  write_file_atomic(path, bytes, gzip, "write_idx");
}

namespace {

// `dir/name`, or `dir/name.gz` when only that exists.
std::string find_mnist_file(const std::string& dir, const std::string& name) {
  std::string raw = dir + "/" + name;
  if (file_exists(raw)) return raw;
  if (file_exists(raw + ".gz")) return raw + ".gz";
  detail::throw_error("load_mnist: missing file ", raw, " (nor ", raw, ".gz)");
}

}  // namespace

Dataset load_mnist(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_mnist_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_mnist_file(dir, prefix + "-labels-idx1-ubyte");
  Tensor images = read_idx(images_path);
  Tensor labels = read_idx(labels_path);
  WICK_CHECK(images.dtype() == DType::UInt8 && images.dim() == 3, "load_mnist: ", images_path,
             ": expected u8 images [N, H, W], got ", dtype_name(images.dtype()), " ", shape_str(images.shape()));
  WICK_CHECK(labels.dtype() == DType::UInt8 && labels.dim() == 1, "load_mnist: ", labels_path,
             ": expected u8 labels [N], got ", dtype_name(labels.dtype()), " ", shape_str(labels.shape()));
  WICK_CHECK(images.size(0) == labels.size(0), "load_mnist: count mismatch: ", images_path, " has ", images.size(0),
             " images but ", labels_path, " has ", labels.size(0), " labels");
  return Dataset(images.view({images.size(0), 1, images.size(1), images.size(2)}), labels.to(DType::Int64));
}

}  // namespace wick
