#include <wick/data/npy.h>

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <set>
#include <tuple>

#include <wick/tensor/atomic_file.h>
#include <wick/tensor/error.h>
#include <wick/tensor/out_of_memory.h>

namespace wick {

namespace {

uint64_t le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The Python literal subset np.save writes: a dict of str keys whose values are str,
// True/False or a tuple of ints.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  struct Value {
    enum Kind { Str, Bool, Tuple, List } kind = Str;
    std::string str;
    bool flag = false;
    std::vector<int64_t> ints;
  };

  std::vector<std::pair<std::string, Value>> dict() {
    std::vector<std::pair<std::string, Value>> out;
    expect('{');
    for (;;) {
      skip();
      if (peek() == '}') break;
      std::string key = string();
      expect(':');
      out.emplace_back(key, value());
      skip();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}'");
    }
    ++pos_;
    skip();
    if (pos_ != s_.size()) fail("unexpected text after the dict");
    return out;
  }

 private:
  [[noreturn]] void fail(const char* why) const {
    detail::throw_error("npy: ", what_, ": malformed header at character ", pos_, " (", why, "): ", s_);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    skip();
    if (peek() != c) fail("unexpected character");
    ++pos_;
  }
  std::string string() {
    skip();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a string");
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  int64_t integer() {
    skip();
    const size_t start = pos_;
    uint64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const uint64_t digit = static_cast<uint64_t>(peek() - '0');
      if (v > (static_cast<uint64_t>(INT64_MAX) - digit) / 10) fail("a dimension does not fit in 63 bits");
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) fail("expected a non-negative integer");
    if (peek() == 'L') ++pos_;  // Python 2's long suffix, in old files
    return static_cast<int64_t>(v);
  }
  Value value() {
    skip();
    Value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.str = string();
    } else if (s_.compare(pos_, 4, "True") == 0) {
      v.kind = Value::Bool;
      v.flag = true;
      pos_ += 4;
    } else if (s_.compare(pos_, 5, "False") == 0) {
      v.kind = Value::Bool;
      pos_ += 5;
    } else if (c == '(') {
      v.kind = Value::Tuple;
      ++pos_;
      for (;;) {
        skip();
        if (peek() == ')') break;
        v.ints.push_back(integer());
        skip();
        if (peek() == ',') ++pos_;
        else if (peek() != ')') fail("expected ',' or ')' in the shape");
      }
      ++pos_;
    } else if (c == '[') {
      v.kind = Value::List;  // a structured dtype's field list: recognised only to refuse it
      const size_t end = s_.find(']', pos_);
      if (end == std::string::npos) fail("unterminated list");
      pos_ = end + 1;
    } else {
      fail("expected a string, True, False or a tuple");
    }
    return v;
  }

  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};

DType descr_dtype(const std::string& descr, const std::string& what) {
  WICK_CHECK(!descr.empty(), "npy: ", what, ": empty descr");
  const char order = descr[0];
  const std::string type = descr.substr(1);
  WICK_CHECK(order != '>', "npy: ", what, ": dtype '", descr,
             "' is big-endian; only little-endian arrays can be mapped (save with arr.astype(arr.dtype.newbyteorder('<')))");
  WICK_CHECK(descr != "O" && type != "O", "npy: ", what, ": dtype '", descr,
             "' holds Python objects, which cannot be read outside Python");
  WICK_CHECK(order == '<' || order == '|' || order == '=', "npy: ", what, ": unsupported dtype '", descr, "'");
  if (type == "f2") return DType::Float16;
  if (type == "f4") return DType::Float32;
  if (type == "f8") return DType::Float64;
  if (type == "i4") return DType::Int32;
  if (type == "i8") return DType::Int64;
  if (type == "u1") return DType::UInt8;
  if (type == "b1") return DType::Bool;
  detail::throw_error("npy: ", what, ": unsupported dtype '", descr,
                      "' (supported: <f2 <f4 <f8 <i4 <i8 |u1 |b1; convert with arr.astype)");
}

// An npy member at [offset, offset + size) of `file`: its header, checked against the
// member's size. Only the preamble and the header text are read.
struct Parsed {
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t data_offset;  // in the file
};

Parsed parse_npy(const MappedFile& file, uint64_t offset, uint64_t size, const std::string& what) {
  WICK_CHECK(size >= 10, "npy: ", what, ": ", size, " bytes is too short for an .npy header (at least 10)");
  const std::vector<uint8_t> pre = file.read(offset, std::min<uint64_t>(size, 12), "npy preamble");
  WICK_CHECK(std::memcmp(pre.data(), "\x93NUMPY", 6) == 0, "npy: ", what, ": not an .npy file (bad magic)");
  const int major = pre[6], minor = pre[7];
  WICK_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, "npy: ", what, ": unsupported format version ",
             major, ".", minor, " (1.0, 2.0 and 3.0 are read)");
  const uint64_t pre_len = major == 1 ? 10 : 12;
  WICK_CHECK(size >= pre_len, "npy: ", what, ": truncated in the header length");
  const uint64_t header_len = le(pre.data() + 8, major == 1 ? 2 : 4);
  WICK_CHECK(header_len <= size - pre_len, "npy: ", what, ": the header length ", header_len,
             " runs past the end of the data (", size - pre_len, " bytes after the preamble)");
  const std::vector<uint8_t> raw = file.read(offset + pre_len, header_len, "npy header");
  const std::string text(raw.begin(), raw.end());

  Parsed out{};
  bool have_descr = false, have_order = false, have_shape = false;
  for (const auto& [key, v] : HeaderParser(text, what).dict()) {
    if (key == "descr") {
      WICK_CHECK(v.kind != HeaderParser::Value::List, "npy: ", what,
                 ": structured dtypes (a descr list) are not supported; save each field as its own array");
      WICK_CHECK(v.kind == HeaderParser::Value::Str, "npy: ", what, ": 'descr' must be a string");
      out.dtype = descr_dtype(v.str, what);
      have_descr = true;
    } else if (key == "fortran_order") {
      WICK_CHECK(v.kind == HeaderParser::Value::Bool, "npy: ", what, ": 'fortran_order' must be True or False");
      WICK_CHECK(!v.flag, "npy: ", what,
                 ": Fortran-ordered arrays are not supported (save np.ascontiguousarray(arr) instead)");
      have_order = true;
    } else if (key == "shape") {
      WICK_CHECK(v.kind == HeaderParser::Value::Tuple, "npy: ", what, ": 'shape' must be a tuple");
      out.shape = v.ints;
      have_shape = true;
    } else {
      detail::throw_error("npy: ", what, ": unexpected key '", key, "' in the header");
    }
  }
  WICK_CHECK(have_descr && have_order && have_shape, "npy: ", what,
             ": the header must have 'descr', 'fortran_order' and 'shape': ", text);
  uint64_t numel = 1;
  for (int64_t d : out.shape) {
    WICK_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel), "npy: ", what, ": shape ",
               shape_str(Shape(out.shape)), " has more elements than 64 bits count");
  }
  uint64_t bytes = 0;
  WICK_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(element_size(out.dtype)), &bytes) &&
                 numel <= static_cast<uint64_t>(INT64_MAX),
             "npy: ", what, ": shape ", shape_str(Shape(out.shape)), " of ", dtype_name(out.dtype),
             " is larger than 64 bits of bytes");
  const uint64_t available = size - pre_len - header_len;
  WICK_CHECK(bytes == available, "npy: ", what, ": shape ", shape_str(Shape(out.shape)), " of ",
             dtype_name(out.dtype), " needs ", bytes, " bytes but ", available, " follow the header",
             bytes > available ? " (truncated file?)" : " (trailing bytes)");
  out.data_offset = offset + pre_len + header_len;
  return out;
}

}  // namespace

NpyArray::NpyArray(std::shared_ptr<MappedFile> file, std::string name, DType dtype, std::vector<int64_t> shape,
                   uint64_t offset)
    : file_(std::move(file)), name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), offset_(offset) {}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;  // checked against the file when opened
  return n;
}

const uint8_t* NpyArray::data() const { return file_->map() + offset_; }

Tensor NpyArray::row(int64_t i) const {
  WICK_CHECK(!shape_.empty(), "NpyArray::row: ", name_, " is 0-d; it has no rows");
  check_index("NpyArray::row", i, shape_[0]);
  const Shape shape(std::vector<int64_t>(shape_.begin() + 1, shape_.end()));
  const uint64_t bytes = static_cast<uint64_t>(numel_of(shape)) * element_size(dtype_);
  Tensor out = reader_allocate("NpyArray::row", "'" + name_ + "'", bytes,
                               "row " + std::to_string(i) + " (" + shape_str(shape) + " " + dtype_name(dtype_) + ")",
                               [&] { return empty(shape, dtype_); });
  const size_t row_bytes = out.nbytes();
  if (row_bytes > 0) std::memcpy(out.data_ptr(), data() + static_cast<uint64_t>(i) * row_bytes, row_bytes);
  return out;
}

Tensor NpyArray::load() const {
  Tensor out = reader_allocate("NpyArray::load", "'" + name_ + "'", nbytes(),
                               "the array (" + shape_str(Shape(shape_)) + " " + dtype_name(dtype_) + ")",
                               [&] { return empty(Shape(shape_), dtype_); });
  if (out.nbytes() > 0) std::memcpy(out.data_ptr(), data(), out.nbytes());
  return out;
}

Tensor NpyArray::view() const {
  WICK_CHECK(offset_ % element_size(dtype_) == 0, "NpyArray::view: ", name_, " starts at byte ", offset_,
             ", not aligned to its ", element_size(dtype_), "-byte elements; use load() or row()");
  void* p = const_cast<uint8_t*>(data());
  // The Storage owns nothing; the shared_ptr's deleter holds the file, so the mapping
  // lives as long as the last view.
  std::shared_ptr<MappedFile> file = file_;
  std::shared_ptr<Storage> storage(new Storage(p, nbytes(), Device::cpu(), [](void*) {}),
                                   [file](Storage* s) { delete s; });
  return Tensor(storage, Shape(shape_), contiguous_strides(Shape(shape_)), 0, dtype_);
}

NpyArray open_npy(const std::string& path) {
  auto file = std::make_shared<MappedFile>(path);
  Parsed p = parse_npy(*file, 0, file->size(), "'" + path + "'");
  file->map();
  return NpyArray(file, path, p.dtype, p.shape, p.data_offset);
}

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;

struct Member {
  std::string name;
  uint16_t method, flags;
  uint32_t crc;
  uint64_t compressed, uncompressed, local_offset;
};

// The central directory's members, every offset and size checked against the file.
std::vector<Member> zip_members(const MappedFile& f) {
  const std::string& path = f.path();
  const uint64_t size = f.size();
  WICK_CHECK(size >= 22, "npz: '", path, "': ", size, " bytes is too short for a zip file");
  // The end record is in the last 22 + 65535 (the longest comment) bytes.
  const uint64_t tail_len = std::min<uint64_t>(size, 22 + 65535);
  const std::vector<uint8_t> tail = f.read(size - tail_len, tail_len, "zip end record");
  int64_t at = -1;
  for (int64_t i = static_cast<int64_t>(tail_len) - 22; i >= 0; --i) {
    if (le(&tail[i], 4) == kEndSig && i + 22 + le(&tail[i + 20], 2) <= tail_len) {
      at = i;
      break;
    }
  }
  WICK_CHECK(at >= 0, "npz: '", path, "': not a zip file (no end-of-central-directory record)");
  const uint8_t* end = &tail[at];
  const uint64_t end_pos = size - tail_len + static_cast<uint64_t>(at);
  WICK_CHECK(le(end + 4, 2) == 0 && le(end + 6, 2) == 0, "npz: '", path, "': multi-disk zip files are not supported");
  uint64_t entries = le(end + 10, 2), cd_size = le(end + 12, 4), cd_offset = le(end + 16, 4);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
    WICK_CHECK(end_pos >= 20, "npz: '", path, "': ZIP64 locator missing");
    const std::vector<uint8_t> loc = f.read(end_pos - 20, 20, "zip64 locator");
    WICK_CHECK(le(loc.data(), 4) == kZip64LocatorSig, "npz: '", path, "': ZIP64 locator missing");
    const std::vector<uint8_t> rec = f.read(le(loc.data() + 8, 8), 56, "zip64 end record");
    WICK_CHECK(le(rec.data(), 4) == kZip64EndSig, "npz: '", path, "': bad ZIP64 end record");
    entries = le(rec.data() + 32, 8);
    cd_size = le(rec.data() + 40, 8);
    cd_offset = le(rec.data() + 48, 8);
  }
  WICK_CHECK(cd_offset <= size && cd_size <= size - cd_offset, "npz: '", path, "': the central directory (",
             cd_size, " bytes at ", cd_offset, ") runs past the end of the file (", size, " bytes)");
  WICK_CHECK(entries <= cd_size / 46, "npz: '", path, "': ", entries, " entries cannot fit in a central directory of ",
             cd_size, " bytes");
  const std::vector<uint8_t> cd = f.read(cd_offset, cd_size, "zip central directory");
  std::vector<Member> out;
  uint64_t pos = 0;
  for (uint64_t e = 0; e < entries; ++e) {
    WICK_CHECK(cd_size - pos >= 46 && le(&cd[pos], 4) == kCentralSig, "npz: '", path, "': central directory entry ",
               e, " is malformed");
    const uint8_t* h = &cd[pos];
    Member m;
    m.flags = static_cast<uint16_t>(le(h + 8, 2));
    m.method = static_cast<uint16_t>(le(h + 10, 2));
    m.crc = static_cast<uint32_t>(le(h + 16, 4));
    m.compressed = le(h + 20, 4);
    m.uncompressed = le(h + 24, 4);
    const uint64_t name_len = le(h + 28, 2), extra_len = le(h + 30, 2), comment_len = le(h + 32, 2);
    m.local_offset = le(h + 42, 4);
    WICK_CHECK(cd_size - pos - 46 >= name_len + extra_len + comment_len, "npz: '", path,
               "': central directory entry ", e, " runs past the directory");
    m.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
    // ZIP64 sizes: the 8-byte values follow in the extra field, for the fields set to ~0.
    const uint8_t* x = h + 46 + name_len;
    for (uint64_t xp = 0; xp + 4 <= extra_len;) {
      const uint64_t id = le(x + xp, 2), len = le(x + xp + 2, 2);
      WICK_CHECK(xp + 4 + len <= extra_len, "npz: '", path, "': member '", m.name, "' has a malformed extra field");
      if (id == 0x0001) {
        uint64_t q = xp + 4;
        for (uint64_t* field : {&m.uncompressed, &m.compressed, &m.local_offset}) {
          if (*field != 0xFFFFFFFF) continue;
          WICK_CHECK(q + 8 <= xp + 4 + len, "npz: '", path, "': member '", m.name, "' has a short ZIP64 field");
          *field = le(x + q, 8);
          q += 8;
        }
      }
      xp += 4 + len;
    }
    pos += 46 + name_len + extra_len + comment_len;
    out.push_back(std::move(m));
  }
  return out;
}

// A DEFLATED member (np.savez_compressed) inflated into memory: the size the central
// directory declares is allocated (through reader_allocate, so an absurd one is an error, not
// std::bad_alloc) only after the compressed bytes were read, and the result must have exactly
// that size and the member's CRC-32.
std::shared_ptr<MappedFile> inflate_member(const MappedFile& file, const Member& m, uint64_t data,
                                           const std::string& what) {
  const std::vector<uint8_t> packed = file.read(data, m.compressed, "compressed member");
  std::vector<uint8_t> out = reader_allocate("npz", file.path(), m.uncompressed, "member '" + m.name + "' inflated",
                                             [&] { return std::vector<uint8_t>(static_cast<size_t>(m.uncompressed)); });
  z_stream z{};
  WICK_CHECK(inflateInit2(&z, -MAX_WBITS) == Z_OK, "npz: ", what, ": zlib could not start inflating");
  uint64_t in_done = 0, out_done = 0;
  int rc = Z_OK;
  uint8_t probe = 0;  // a byte past the declared size: more output than declared is an error
  while (rc == Z_OK) {
    const bool past = out_done == out.size();
    z.next_in = const_cast<Bytef*>(packed.data() + in_done);
    z.avail_in = static_cast<uInt>(std::min<uint64_t>(packed.size() - in_done, 1u << 30));
    z.next_out = past ? &probe : out.data() + out_done;
    z.avail_out = past ? 1u : static_cast<uInt>(std::min<uint64_t>(out.size() - out_done, 1u << 30));
    const uInt in_before = z.avail_in, out_before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    in_done += in_before - z.avail_in;
    out_done += out_before - z.avail_out;
    if (rc == Z_OK && in_before == z.avail_in && out_before == z.avail_out) rc = Z_BUF_ERROR;  // no progress
  }
  inflateEnd(&z);
  WICK_CHECK(rc == Z_STREAM_END && out_done == m.uncompressed, "npz: ", what, ": its deflate data is damaged or ",
             out_done > m.uncompressed ? "longer" : "shorter", " than the ", m.uncompressed,
             " bytes the archive declares (", z.msg != nullptr ? z.msg : "ended early", ")");
  uLong sum = crc32(0L, Z_NULL, 0);
  for (uint64_t at = 0; at < out.size();) {
    const uInt n = static_cast<uInt>(std::min<uint64_t>(out.size() - at, 1u << 30));
    sum = crc32(sum, out.data() + at, n);
    at += n;
  }
  WICK_CHECK(sum == m.crc, "npz: ", what, ": CRC-32 ", sum, " does not match the archive's ", m.crc);
  return std::make_shared<MappedFile>(file.path() + ":" + m.name, std::move(out));
}

}  // namespace

std::vector<std::pair<std::string, NpyArray>> open_npz(const std::string& path) {
  auto file = std::make_shared<MappedFile>(path);
  std::vector<std::pair<std::string, NpyArray>> out;
  // Each member's bytes: the archive itself for a stored one, its inflated copy otherwise.
  std::vector<std::tuple<std::string, Parsed, std::shared_ptr<MappedFile>>> parsed;
  std::set<std::string> seen;
  for (const Member& m : zip_members(*file)) {
    if (m.name.size() < 4 || m.name.compare(m.name.size() - 4, 4, ".npy") != 0) continue;
    const std::string key = m.name.substr(0, m.name.size() - 4);
    const std::string what = "'" + path + "' member '" + m.name + "'";
    WICK_CHECK(m.method == 0 || m.method == 8, "npz: ", what, " uses zip compression method ", m.method,
               "; only stored (np.savez) and deflated (np.savez_compressed) members are read");
    WICK_CHECK((m.flags & 1) == 0, "npz: ", what, " is encrypted");
    WICK_CHECK(m.method == 8 || m.compressed == m.uncompressed, "npz: ", what, " is stored but its sizes differ (",
               m.compressed, " vs ", m.uncompressed, ")");
    WICK_CHECK(seen.insert(key).second, "npz: '", path, "': two members are named '", m.name, "'");
    const std::vector<uint8_t> local = file->read(m.local_offset, 30, "zip local header");
    WICK_CHECK(le(local.data(), 4) == kLocalSig, "npz: ", what, ": bad local header signature");
    const uint64_t data = m.local_offset + 30 + le(local.data() + 26, 2) + le(local.data() + 28, 2);
    WICK_CHECK(data <= file->size() && m.compressed <= file->size() - data, "npz: ", what, ": its ", m.compressed,
               " bytes at offset ", data, " run past the end of the file (", file->size(), " bytes)");
    if (m.method == 8) {
      std::shared_ptr<MappedFile> inflated = inflate_member(*file, m, data, what);
      parsed.emplace_back(key, parse_npy(*inflated, 0, inflated->size(), what), inflated);
    } else {
      parsed.emplace_back(key, parse_npy(*file, data, m.compressed, what), file);
    }
  }
  file->map();  // only once every member checked out
  for (auto& [key, p, bytes] : parsed)
    out.emplace_back(key, NpyArray(bytes, path + ":" + key, p.dtype, p.shape, p.data_offset));
  return out;
}

ArrayDictDataset::ArrayDictDataset(std::vector<std::pair<std::string, NpyArray>> fields) : fields_(std::move(fields)) {
  WICK_CHECK(!fields_.empty(), "ArrayDictDataset: needs at least one array");
  std::set<std::string> names;
  for (const auto& [name, a] : fields_) {
    WICK_CHECK(names.insert(name).second, "ArrayDictDataset: duplicate field '", name, "'");
    WICK_CHECK(!a.shape().empty(), "ArrayDictDataset: field '", name, "' (", a.name(),
               ") is 0-d; examples are rows of dim 0");
  }
  size_ = fields_[0].second.shape()[0];
  for (const auto& [name, a] : fields_) {
    WICK_CHECK(a.shape()[0] == size_, "ArrayDictDataset: field '", name, "' (", a.name(), ", shape ",
               shape_str(Shape(a.shape())), ") has ", a.shape()[0], " rows but field '", fields_[0].first, "' has ",
               size_);
  }
}

Example ArrayDictDataset::get(int64_t i) const {
  check_index("ArrayDictDataset::get", i, size_);
  Example e;
  for (const auto& [name, a] : fields_) e.set(name, a.row(i));
  return e;
}

void save_npy(const std::string& path, const Tensor& t) {
  const char* descr = nullptr;
  switch (t.dtype()) {
    case DType::Float16: descr = "<f2"; break;
    case DType::Float32: descr = "<f4"; break;
    case DType::Float64: descr = "<f8"; break;
    case DType::Int32: descr = "<i4"; break;
    case DType::Int64: descr = "<i8"; break;
    case DType::UInt8: descr = "|u1"; break;
    case DType::Bool: descr = "|b1"; break;
    default: detail::throw_error("save_npy: ", path, ": dtype ", dtype_name(t.dtype()), " has no .npy equivalent; convert it first");
  }
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.dim() > 1) shape.pop_back();  // (3,) for one dim, (2,3) for two
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic, version 1.0, a little-endian uint16 header length; the header is padded with
  // spaces and ends in a newline so that the data starts at a multiple of 64 bytes.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  WICK_CHECK(header.size() <= 65535, "save_npy: ", path, ": a header of ", header.size(), " bytes needs version 2.0");
  const Tensor c = t.cpu().contiguous();
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * element_size(c.dtype()));
  write_file_atomically(path, bytes, "save_npy");
}

std::shared_ptr<const MapDataset> npy_dataset(const std::string& path, const std::string& field) {
  return std::make_shared<ArrayDictDataset>(std::vector<std::pair<std::string, NpyArray>>{{field, open_npy(path)}});
}

std::shared_ptr<const MapDataset> npz_dataset(const std::string& path) {
  return std::make_shared<ArrayDictDataset>(open_npz(path));
}

}  // namespace wick
