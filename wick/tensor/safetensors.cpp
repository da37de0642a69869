#include <wick/tensor/safetensors.h>

#include <wick/tensor/atomic_file.h>
#include <wick/tensor/out_of_memory.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <unordered_set>
#include <utility>
#include <vector>

namespace wick {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

// A larger header is far beyond any real file and most likely corruption; reading it
// whole would be a cheap denial of service.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

const std::pair<DType, const char*> kDTypeNames[] = {
    {DType::Float64, "F64"}, {DType::Float32, "F32"}, {DType::Float16, "F16"}, {DType::BFloat16, "BF16"},
    {DType::Int64, "I64"},   {DType::Int32, "I32"},   {DType::UInt8, "U8"},    {DType::Bool, "BOOL"}};

const char* safetensors_name(DType t) {
  for (const auto& [d, n] : kDTypeNames)
    if (d == t) return n;
  detail::throw_error("save_safetensors: dtype ", dtype_name(t), " has no safetensors name");
}

// ---- a strict JSON parser for the header's subset: objects, arrays, strings, integers ----

struct Json {
  enum class Kind { Object, Array, String, Integer } kind = Kind::Integer;
  // Not std::pair<std::string, Json>: with libstdc++, clang (before 16) instantiates the
  // pair's traits while Json is still incomplete and rejects the file.
  struct Member;
  std::vector<Member> members;  // objects, in file order
  std::vector<Json> items;      // arrays
  std::string text;             // strings
  int64_t integer = 0;
};

struct Json::Member {
  std::string first;
  Json second;
};

class JsonParser {
 public:
  JsonParser(const std::string& s, const std::string& path) : s_(s), path_(path) {}

  Json parse_document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected '", s_[pos_], "' after the top-level value");
    return v;
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) {
    detail::throw_error("load_safetensors: ", path_, ": header JSON: ", args..., " at byte ", pos_);
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  char peek() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    return s_[pos_];
  }

  void expect(char c) {
    if (peek() != c) fail("expected '", c, "' but found '", s_[pos_], "'");
    ++pos_;
  }

  Json value(int depth) {
    // The header nests three levels; anything deeper is corrupt (and would recurse unboundedly).
    if (depth > 8) fail("nesting deeper than 8 levels");
    char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') {
      Json v;
      v.kind = Json::Kind::String;
      v.text = string();
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return integer();
    fail("unexpected '", c, "' (only objects, arrays, strings and integers are allowed)");
  }

  Json object(int depth) {
    Json v;
    v.kind = Json::Kind::Object;
    expect('{');
    if (peek() == '}') {
      ++pos_;
      return v;
    }
    // A hash set, not a scan of the members so far: a header of n keys costs O(n), where
    // the scan made a 1 MB file of 100,000 keys take 20 s to reject or load.
    std::unordered_set<std::string> keys;
    while (true) {
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      if (!keys.insert(key).second) fail("duplicate key '", key, "'");
      expect(':');
      v.members.push_back({std::move(key), value(depth + 1)});
      char c = peek();
      ++pos_;
      if (c == '}') return v;
      if (c != ',') fail("expected ',' or '}' but found '", c, "'");
    }
  }

  Json array(int depth) {
    Json v;
    v.kind = Json::Kind::Array;
    expect('[');
    if (peek() == ']') {
      ++pos_;
      return v;
    }
    while (true) {
      v.items.push_back(value(depth + 1));
      char c = peek();
      ++pos_;
      if (c == ']') return v;
      if (c != ',') fail("expected ',' or ']' but found '", c, "'");
    }
  }

  Json integer() {
    Json v;
    bool negative = s_[pos_] == '-';
    if (negative) ++pos_;
    size_t start = pos_;
    uint64_t mag = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      uint64_t d = static_cast<uint64_t>(s_[pos_] - '0');
      if (mag > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 10) fail("integer out of range");
      mag = mag * 10 + d;
      ++pos_;
    }
    if (pos_ == start) fail("expected digits");
    if (s_[start] == '0' && pos_ - start > 1) fail("leading zero in a number");
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) fail("non-integer number");
    v.integer = negative ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
    return v;
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      u <<= 4;
      if (c >= '0' && c <= '9')
        u |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        u |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        u |= static_cast<unsigned>(c - 'A' + 10);
      else
        fail("bad hex digit in a \\u escape");
    }
    return u;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') fail("unpaired surrogate");
            pos_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("bad escape '\\", e, "'");
      }
    }
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// ---- writing ----------------------------------------------------------------------------


// ---- reading ----------------------------------------------------------------------------

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    WICK_CHECK(fd_ >= 0, "load_safetensors: cannot open ", path, ": ", errno_text());
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      std::string why = errno_text();
      ::close(fd_);
      detail::throw_error("load_safetensors: cannot stat ", path, ": ", why);
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~Reader() { ::close(fd_); }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  uint64_t size() const { return size_; }

  void read_at(uint64_t offset, void* out, size_t n) {
    char* p = static_cast<char*>(out);
    while (n > 0) {
      ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      WICK_CHECK(r >= 0, "load_safetensors: reading ", path_, ": ", errno_text());
      WICK_CHECK(r > 0, "load_safetensors: ", path_, ": file ended early (truncated while reading?)");
      p += r;
      n -= static_cast<size_t>(r);
      offset += static_cast<uint64_t>(r);
    }
  }

 private:
  const std::string& path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace

void save_safetensors(const std::string& path, const TensorMap& tensors, const StringMap& metadata) {
  // Everything is validated and laid out before the temporary file is created.
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      first = false;
      append_json_string(header, k);
      header += ':';
      append_json_string(header, v);
    }
    header += "}";
  }
  std::vector<Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    WICK_CHECK(name != "__metadata__", "save_safetensors: ", path, ": '__metadata__' is reserved, not a tensor name");
    WICK_CHECK(t.defined(), "save_safetensors: ", path, ": tensor '", name, "' is undefined");
    if (header.size() > 1) header += ',';
    append_json_string(header, name);
    header += ":{\"dtype\":\"";
    header += safetensors_name(t.dtype());
    header += "\",\"shape\":[";
    for (size_t i = 0; i < t.shape().size(); ++i) {
      if (i) header += ',';
      header += std::to_string(t.shape()[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + ',' + std::to_string(offset + t.nbytes()) + "]}";
    offset += t.nbytes();
    data.push_back(t.cpu().contiguous());
  }
  header += '}';
  // Pad so the data section starts 8-byte aligned, as Hugging Face's writer does.
  while ((8 + header.size()) % 8 != 0) header += ' ';

  uint64_t n = header.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  AtomicFile file(path, "save_safetensors");
  file.write(len, 8);
  file.write(header);
  for (const Tensor& t : data) file.write(t.data_ptr(), t.nbytes());
  file.commit();
}

namespace {

// The validated header of an open file (see safetensors.h). `op` names the caller in messages.
SafetensorsIndex read_index(Reader& file, const std::string& path, const char* op) {
  auto bad = [&](const auto&... args) { detail::throw_error(op, ": ", path, ": ", args...); };
  if (file.size() < 8) bad("file is ", file.size(), " bytes, shorter than the 8-byte header length");
  unsigned char len[8];
  file.read_at(0, len, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  // An absurd length is the usual sign of a file of another format (a .pt zip, a .npy).
  if (n > kMaxHeaderBytes)
    bad("not a safetensors file: its header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes");
  if (n > file.size() - 8)
    bad("not a safetensors file: its header length ", n, " exceeds the ", file.size() - 8, " bytes after the length");
  std::string text = reader_allocate(op, path, n, "the header", [&] { return std::string(n, '\0'); });
  file.read_at(8, text.data(), n);
  Json root;
  try {
    root = JsonParser(text, path).parse_document();
  } catch (const std::bad_alloc&) {
    // The parsed header holds about as many bytes as its text (names, shapes, offsets).
    bad("out of memory: cannot allocate the parsed header of ", n, " bytes");
  }
  if (root.kind != Json::Kind::Object) bad("header is not a JSON object");

  const uint64_t data_start = 8 + n, data_size = file.size() - data_start;
  std::vector<Entry> entries;
  StringMap meta;
  for (const auto& [name, v] : root.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::Kind::Object) bad("__metadata__ is not an object");
      for (const auto& [k, s] : v.members) {
        if (s.kind != Json::Kind::String) bad("__metadata__ value of '", k, "' is not a string");
        meta[k] = s.text;
      }
      continue;
    }
    if (v.kind != Json::Kind::Object) bad("tensor '", name, "' is not an object");
    const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const auto& [k, f] : v.members) {
      if (k == "dtype")
        dtype = &f;
      else if (k == "shape")
        shape = &f;
      else if (k == "data_offsets")
        offsets = &f;
      else
        bad("tensor '", name, "' has an unknown field '", k, "'");
    }
    if (!dtype || !shape || !offsets) bad("tensor '", name, "' lacks dtype, shape or data_offsets");
    Entry e{name, DType::Float32, {}, 0, 0};
    if (dtype->kind != Json::Kind::String) bad("tensor '", name, "': dtype is not a string");
    bool known = false;
    for (const auto& [d, s] : kDTypeNames) {
      if (dtype->text == s) {
        e.dtype = d;
        known = true;
      }
    }
    if (!known) bad("tensor '", name, "': unknown dtype '", dtype->text, "'");
    if (shape->kind != Json::Kind::Array) bad("tensor '", name, "': shape is not an array");
    uint64_t bytes = element_size(e.dtype);
    int64_t extent = 1;  // the product of the sizes with zeros counted as ones
    bool overflow = false, too_large = false;
    for (const Json& d : shape->items) {
      if (d.kind != Json::Kind::Integer) bad("tensor '", name, "': shape holds a non-integer");
      if (d.integer < 0) bad("tensor '", name, "': negative dimension ", d.integer, " in the shape");
      e.shape.push_back(d.integer);
      uint64_t dim = static_cast<uint64_t>(d.integer);
      // Overflow would wrap into a small, plausible byte count.
      if (__builtin_mul_overflow(bytes, dim, &bytes)) overflow = true;
      // A zero size makes the byte count 0, yet [0, 2^40, 2^40] has strides beyond int64:
      // no tensor of that shape can exist, empty or not.
      if (__builtin_mul_overflow(extent, std::max<int64_t>(d.integer, 1), &extent)) too_large = true;
    }
    if (offsets->kind != Json::Kind::Array || offsets->items.size() != 2 ||
        offsets->items[0].kind != Json::Kind::Integer || offsets->items[1].kind != Json::Kind::Integer)
      bad("tensor '", name, "': data_offsets is not a pair of integers");
    int64_t b = offsets->items[0].integer, en = offsets->items[1].integer;
    if (b < 0 || en < b || static_cast<uint64_t>(en) > data_size)
      bad("tensor '", name, "': data_offsets [", b, ", ", en, "] are not a range inside the data section of ",
          data_size, " bytes");
    e.begin = static_cast<uint64_t>(b);
    e.end = static_cast<uint64_t>(en);
    if (overflow || bytes != e.end - e.begin)
      bad("tensor '", name, "': shape ", shape_str(e.shape), " of ", dtype->text, " needs ",
          overflow ? std::string("more than 2^64 bytes") : std::to_string(bytes) + " bytes",
          " but data_offsets [", b, ", ", en, "] span ", e.end - e.begin);
    if (too_large) bad("tensor '", name, "': shape ", shape_str(e.shape), " is too large (its strides overflow int64)");
    entries.push_back(std::move(e));
  }

  // The ranges must tile the data section exactly: sorted, each starts where the last ended.
  std::vector<const Entry*> order;
  for (const Entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : order) {
    if (e->begin < cursor) bad("tensors '", prev->name, "' and '", e->name, "' overlap");
    if (e->begin > cursor) bad("bytes [", cursor, ", ", e->begin, ") of the data section belong to no tensor");
    cursor = e->end;
    if (e->end > e->begin || !prev) prev = e;
  }
  if (cursor != data_size)
    bad("the tensors cover ", cursor, " bytes but the data section has ", data_size);

  SafetensorsIndex index;
  index.metadata = std::move(meta);
  for (Entry& e : entries)
    index.tensors.push_back(SafetensorsEntry{std::move(e.name), e.dtype, std::move(e.shape), data_start + e.begin});
  std::sort(index.tensors.begin(), index.tensors.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.name < b.name; });
  return index;
}

}  // namespace

SafetensorsIndex read_safetensors_index(const std::string& path) {
  Reader file(path);
  return read_index(file, path, "read_safetensors_index");
}

TensorMap load_safetensors(const std::string& path, StringMap* metadata) {
  Reader file(path);
  SafetensorsIndex index = read_index(file, path, "load_safetensors");
  TensorMap out;
  for (const SafetensorsEntry& e : index.tensors) {
    const uint64_t bytes = static_cast<uint64_t>(numel_of(e.shape)) * element_size(e.dtype);
    Tensor t = reader_allocate("load_safetensors", path, bytes,
                               "tensor '" + e.name + "' (" + shape_str(e.shape) + " " + dtype_name(e.dtype) + ")",
                               [&] { return empty(e.shape, e.dtype); });
    if (t.nbytes() > 0) file.read_at(e.offset, t.data_ptr(), t.nbytes());
    out.emplace(e.name, std::move(t));
  }
  if (metadata) *metadata = std::move(index.metadata);
  return out;
}

}  // namespace wick
