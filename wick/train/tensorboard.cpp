#include <wick/train/tensorboard.h>

#include <array>
#include <cmath>
#include <cstring>

#include <wick/tensor/atomic_file.h>
#include <wick/tensor/error.h>

#include <wick/data/file_io.h>

namespace wick {
namespace {

constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;

std::array<uint32_t, 256> crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // reflected Castagnoli polynomial
    t[i] = c;
  }
  return t;
}

uint32_t masked_crc(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}

// Protocol-buffer wire format: a field key is (number << 3) | wire type.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
template <class T>
void put_fixed(std::string& out, T v) {  // little-endian, as the x86-64 and Arm hosts are
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void put_key(std::string& out, uint32_t field, Wire wire) { put_varint(out, (uint64_t{field} << 3) | wire); }
void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, kBytes);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event(double wall_time, int64_t step, const std::string* file_version, const ScalarEvent* scalar) {
  std::string e;
  put_key(e, 1, kFixed64);
  put_fixed(e, wall_time);
  put_key(e, 2, kVarint);
  put_varint(e, static_cast<uint64_t>(step));
  if (file_version) put_bytes(e, 3, *file_version);
  if (scalar) {
    std::string value;
    put_bytes(value, 1, scalar->tag);
    put_key(value, 2, kFixed32);
    put_fixed(value, static_cast<float>(scalar->value));
    std::string summary;
    put_bytes(summary, 1, value);
    put_bytes(e, 5, summary);
  }
  return e;
}

void put_record(std::string& out, const std::string& data) {
  std::string header;
  put_fixed(header, static_cast<uint64_t>(data.size()));
  out += header;
  put_fixed(out, masked_crc(header.data(), header.size()));
  out += data;
  put_fixed(out, masked_crc(data.data(), data.size()));
}

// A bounds-checked reader of one message's bytes.
class Reader {
 public:
  Reader(const char* p, size_t n, const std::string& what, size_t base) : p_(p), n_(n), what_(what), base_(base) {}
  bool done() const { return at_ == n_; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      need(1, "a varint");
      const auto b = static_cast<uint8_t>(p_[at_++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a varint longer than 10 bytes");
  }
  template <class T>
  T fixed() {
    need(sizeof(T), "a fixed-size field");
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  Reader bytes() { return exactly(varint()); }
  // The next `len` bytes as a message of their own.
  Reader exactly(uint64_t len) {
    need(len, "a length-delimited field");
    Reader sub(p_ + at_, static_cast<size_t>(len), what_, base_ + at_);
    at_ += static_cast<size_t>(len);
    return sub;
  }
  std::string str() const { return std::string(p_, n_); }
  void skip(uint32_t wire) {
    switch (wire) {
      case kVarint: varint(); return;
      case kFixed64: fixed<uint64_t>(); return;
      case kBytes: bytes(); return;
      case kFixed32: fixed<uint32_t>(); return;
      default: fail("wire type " + std::to_string(wire) + ", which event files do not use");
    }
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("read_tensorboard_events: " + what_ + " at byte " + std::to_string(base_ + at_) + ": " + why);
  }

 private:
  void need(uint64_t k, const char* thing) const {
    if (k > n_ - at_)
      fail(std::string(thing) + " of " + std::to_string(k) + " bytes where " + std::to_string(n_ - at_) + " are left");
  }
  const char* p_;
  size_t n_, at_ = 0;
  const std::string& what_;
  size_t base_;
};

void parse_event(Reader r, std::vector<ScalarEvent>& out) {
  double wall_time = 0;
  int64_t step = 0;
  std::vector<ScalarEvent> found;
  while (!r.done()) {
    const uint64_t key = r.varint();
    const auto field = static_cast<uint32_t>(key >> 3), wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == kFixed64) wall_time = r.fixed<double>();
    else if (field == 2 && wire == kVarint) step = static_cast<int64_t>(r.varint());
    else if (field == 5 && wire == kBytes) {
      Reader summary = r.bytes();
      while (!summary.done()) {
        const uint64_t skey = summary.varint();
        if ((skey >> 3) != 1 || (skey & 7) != kBytes) {
          summary.skip(static_cast<uint32_t>(skey & 7));
          continue;
        }
        Reader value = summary.bytes();
        ScalarEvent s;
        bool scalar = false;
        while (!value.done()) {
          const uint64_t vkey = value.varint();
          if ((vkey >> 3) == 1 && (vkey & 7) == kBytes) s.tag = value.bytes().str();
          else if ((vkey >> 3) == 2 && (vkey & 7) == kFixed32) {
            s.value = value.fixed<float>();
            scalar = true;
          } else value.skip(static_cast<uint32_t>(vkey & 7));
        }
        if (scalar) found.push_back(std::move(s));
      }
    } else r.skip(wire);
  }
  for (ScalarEvent& s : found) {
    s.step = step;
    s.wall_time = wall_time;
    out.push_back(std::move(s));
  }
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = crc32c_table();
  uint32_t c = 0xffffffffu;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

std::string tensorboard_events(const std::vector<ScalarEvent>& events, double file_wall_time) {
  std::string out;
  const std::string version = "brain.Event:2";
  put_record(out, event(file_wall_time, 0, &version, nullptr));
  for (const ScalarEvent& s : events) put_record(out, event(s.wall_time, s.step, nullptr, &s));
  return out;
}

void write_tensorboard_events(const std::string& path, const std::vector<ScalarEvent>& events, double file_wall_time) {
  write_file_atomically(path, tensorboard_events(events, file_wall_time), "write_tensorboard_events");
}

std::vector<ScalarEvent> parse_tensorboard_events(const std::string& bytes, const std::string& what) {
  std::vector<ScalarEvent> out;
  Reader file(bytes.data(), bytes.size(), what, 0);
  while (!file.done()) {
    const auto length = file.fixed<uint64_t>();
    char header[sizeof length];
    std::memcpy(header, &length, sizeof length);
    if (file.fixed<uint32_t>() != masked_crc(header, sizeof header)) file.fail("the record length's CRC does not match");
    Reader data = file.exactly(length);  // checked against what is left: nothing is allocated
    const std::string payload = data.str();
    if (file.fixed<uint32_t>() != masked_crc(payload.data(), payload.size())) file.fail("the record's CRC does not match");
    parse_event(data, out);
  }
  return out;
}

std::vector<ScalarEvent> read_tensorboard_events(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path, "read_tensorboard_events");
  return parse_tensorboard_events(std::string(bytes.begin(), bytes.end()), path);
}

}  // namespace wick
