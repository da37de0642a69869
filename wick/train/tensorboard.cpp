#include <wick/train/tensorboard.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

// The step of an event record's payload (0 when it has none, as the version record).
int64_t event_step(Reader r) {
  int64_t step = 0;
  while (!r.done()) {
    const uint64_t key = r.varint();
    if ((key >> 3) == 2 && (key & 7) == kVarint) step = static_cast<int64_t>(r.varint());
    else r.skip(static_cast<uint32_t>(key & 7));
  }
  return step;
}

// Calls on_record(payload, end offset) for each record of `bytes`, checking every length
// against what is left and every CRC. A last record cut short (its length, payload or CRC
// missing: a writer killed mid-append) ends the walk and returns true when `torn_tail_ok`;
// otherwise, and for a CRC that does not match anywhere, throws naming `what` and the offset.
template <class F>
bool for_each_record(const std::string& bytes, const std::string& what, bool torn_tail_ok, F&& on_record) {
  Reader file(bytes.data(), bytes.size(), what, 0);
  size_t at = 0;
  while (!file.done()) {
    if (torn_tail_ok) {
      // A torn tail: fewer bytes left than a record's header, or a header whose CRC holds
      // and whose length runs past the end. (A damaged header is caught by its CRC below.)
      const size_t left = bytes.size() - at;
      if (left < 12) return true;
      uint64_t length = 0;
      uint32_t crc = 0;
      std::memcpy(&length, bytes.data() + at, sizeof length);
      std::memcpy(&crc, bytes.data() + at + sizeof length, sizeof crc);
      if (crc == masked_crc(bytes.data() + at, sizeof length) && (length > left - 12 || left - 12 - length < 4))
        return true;
    }
    const auto length = file.fixed<uint64_t>();
    char header[sizeof length];
    std::memcpy(header, &length, sizeof length);
    if (file.fixed<uint32_t>() != masked_crc(header, sizeof header)) file.fail("the record length's CRC does not match");
    Reader data = file.exactly(length);  // checked against what is left: nothing is allocated
    const std::string payload = data.str();
    if (file.fixed<uint32_t>() != masked_crc(payload.data(), payload.size())) file.fail("the record's CRC does not match");
    at += 16 + static_cast<size_t>(length);
    on_record(data, at);
  }
  return false;
}

std::string event_record(const ScalarEvent& s) {
  std::string out;
  put_record(out, event(s.wall_time, s.step, nullptr, &s));
  return out;
}

std::string version_record(double wall_time) {
  std::string out;
  const std::string version = "brain.Event:2";
  put_record(out, event(wall_time, 0, &version, nullptr));
  return out;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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
  std::string out = version_record(file_wall_time);
  for (const ScalarEvent& s : events) out += event_record(s);
  return out;
}

void write_tensorboard_events(const std::string& path, const std::vector<ScalarEvent>& events, double file_wall_time) {
  write_file_atomically(path, tensorboard_events(events, file_wall_time), "write_tensorboard_events");
}

std::vector<ScalarEvent> parse_tensorboard_events(const std::string& bytes, const std::string& what) {
  std::vector<ScalarEvent> out;
  for_each_record(bytes, what, false, [&](const Reader& payload, size_t) { parse_event(payload, out); });
  return out;
}

std::vector<ScalarEvent> read_tensorboard_events(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path, "read_tensorboard_events");
  return parse_tensorboard_events(std::string(bytes.begin(), bytes.end()), path);
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, TensorBoardWriterOptions options)
    : options_(std::move(options)), last_flush_(std::chrono::steady_clock::now()) {
  WICK_CHECK(options_.max_pending >= 1 && options_.flush_seconds >= 0 && !options_.file_name.empty(),
             "TensorBoardWriter: max_pending must be >= 1, flush_seconds >= 0 and file_name not empty (got ",
             options_.max_pending, ", ", options_.flush_seconds, ", '", options_.file_name, "')");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  WICK_CHECK(!ec, "TensorBoardWriter: cannot create '", dir, "': ", ec.message());
  path_ = (std::filesystem::path(dir) / options_.file_name).string();
  if (!std::filesystem::exists(path_)) {
    write_file_atomically(path_, version_record(now_seconds()), "TensorBoardWriter");
    return;
  }
  const std::vector<uint8_t> raw = read_file_bytes(path_, "TensorBoardWriter");
  const std::string bytes(raw.begin(), raw.end());
  // Keep the records before the purge step (the version record has step 0 and stays).
  std::string kept;
  size_t begin = 0;
  bool dropped = false;
  const bool torn = for_each_record(bytes, path_, true, [&](const Reader& payload, size_t end) {
    const bool keep = !options_.purge_step || event_step(payload) < *options_.purge_step || begin == 0;
    if (keep) kept.append(bytes, begin, end - begin);
    dropped |= !keep;
    begin = end;
  });
  if (kept.empty()) kept = version_record(now_seconds());
  if (torn || dropped || kept.size() != bytes.size()) write_file_atomically(path_, kept, "TensorBoardWriter");
}

TensorBoardWriter::~TensorBoardWriter() {
  try {
    flush();
  } catch (const Error&) {
  }
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  add_scalar(tag, value, step, now_seconds());
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  pending_ += event_record({tag, step, value, wall_time});
  ++pending_records_;
  const std::chrono::duration<double> since = std::chrono::steady_clock::now() - last_flush_;
  if (pending_records_ >= options_.max_pending || since.count() >= options_.flush_seconds) flush();
}

void TensorBoardWriter::flush() {
  last_flush_ = std::chrono::steady_clock::now();
  if (pending_.empty()) return;
  // stdio retries short and interrupted writes itself; the file is closed before any throw.
  std::FILE* f = std::fopen(path_.c_str(), "ab");
  WICK_CHECK(f != nullptr, "TensorBoardWriter: cannot open '", path_, "' to append: ", std::strerror(errno));
  const bool written = std::fwrite(pending_.data(), 1, pending_.size(), f) == pending_.size();
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  WICK_CHECK(written && closed, "TensorBoardWriter: cannot append to '", path_, "': ", std::strerror(written ? errno : err));
  pending_.clear();
  pending_records_ = 0;
}

}  // namespace wick
