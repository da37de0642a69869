#include <wick/distributed/control/control_message.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include <wick/distributed/control/hmac_sha256.h>
#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

void put_le(char* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le(const char* in, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

bool known_frame_type(uint8_t t) { return t >= 1 && t <= 9; }

Bytes proof(const std::string& token, const char* label, const Bytes& driver_nonce, const Bytes& follower_nonce,
            const Bytes& rest) {
  std::vector<uint8_t> message(label, label + std::strlen(label));
  for (const Bytes* part : {&driver_nonce, &follower_nonce, &rest}) message.insert(message.end(), part->begin(), part->end());
  Digest mac = hmac_sha256(token, message);
  return Bytes(mac.begin(), mac.end());
}

}  // namespace

const char* frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::Hello: return "Hello";
    case FrameType::Welcome: return "Welcome";
    case FrameType::Refused: return "Refused";
    case FrameType::Command: return "Command";
    case FrameType::ToDriver: return "ToDriver";
    case FrameType::StoreSet: return "StoreSet";
    case FrameType::StoreGet: return "StoreGet";
    case FrameType::StoreReply: return "StoreReply";
    case FrameType::Challenge: return "Challenge";
  }
  return "unknown";
}

void write_frame(const Socket& socket, FrameType type, const Bytes& payload, Deadline deadline, const char* what) {
  WICK_CHECK(payload.size() <= kMaxFrameBytes, what, ": ", frame_type_name(type), " message of ", payload.size(),
             " bytes exceeds the control channel limit of ", kMaxFrameBytes, " bytes");
  // Header and payload in one buffer so a frame leaves in one send (no Nagle interplay and
  // no interleaving with writers that hold the same lock).
  Bytes buffer(5 + payload.size());
  put_le(buffer.data(), payload.size(), 4);
  buffer[4] = static_cast<char>(type);
  if (!payload.empty()) std::memcpy(buffer.data() + 5, payload.data(), payload.size());
  send_all(socket, buffer.data(), buffer.size(), deadline, what);
}

FrameHeader parse_frame_header(const char (&header)[kFrameHeaderBytes], uint32_t max_bytes, const char* what) {
  const uint64_t length = get_le(header, 4);
  const uint8_t type = static_cast<uint8_t>(header[4]);
  const uint64_t limit = std::min<uint64_t>(max_bytes, kMaxFrameBytes);
  WICK_CHECK(length <= limit, what, ": peer announced a message of ", length, " bytes, more than the limit of ", limit,
             " bytes", limit < kMaxFrameBytes ? " before registration (a Hello is tens of bytes)" : "",
             " (corrupt or foreign peer)");
  WICK_CHECK(known_frame_type(type), what, ": unknown message type ", static_cast<int>(type),
             " (corrupt or foreign peer)");
  return {static_cast<FrameType>(type), static_cast<uint32_t>(length)};
}

std::optional<Frame> read_frame(const Socket& socket, Deadline deadline, const char* what, uint32_t max_bytes) {
  char header[kFrameHeaderBytes];
  if (receive_exact(socket, header, sizeof header, deadline, what) == ReceiveResult::ClosedBeforeAnyByte) {
    return std::nullopt;
  }
  const FrameHeader parsed = parse_frame_header(header, max_bytes, what);
  const uint64_t length = parsed.length;
  Frame frame;
  frame.type = parsed.type;
  // Grown a chunk at a time as the bytes arrive: an announced length is not a promise.
  constexpr uint64_t kChunk = 1u << 20;
  while (frame.payload.size() < length) {
    const uint64_t got = frame.payload.size(), n = std::min(kChunk, length - got);
    frame.payload.resize(got + n);
    if (receive_exact(socket, frame.payload.data() + got, n, deadline, what) == ReceiveResult::ClosedBeforeAnyByte) {
      wick::detail::throw_error(what, ": connection closed after ", got, " of the ", length, " bytes of a ",
                                frame_type_name(frame.type), " message (truncated message)");
    }
  }
  return frame;
}

Bytes encode_hello(const Hello& hello) {
  return PayloadWriter().u32(hello.version).u32(hello.world_size).u32(hello.rank).bytes(hello.nonce).bytes(hello.proof).take();
}

Hello decode_hello(const Bytes& payload) {
  PayloadReader r(payload, "Hello message");
  Hello hello;
  hello.version = r.u32();
  // A different version may lay out the rest differently: the caller refuses it by number.
  if (hello.version != kControlProtocolVersion) return hello;
  hello.world_size = r.u32();
  hello.rank = r.u32();
  hello.nonce = r.bytes();
  hello.proof = r.bytes();
  r.expect_end();
  WICK_CHECK(hello.nonce.size() == kNonceBytes && hello.proof.size() == 32, "Hello message: nonce of ",
             hello.nonce.size(), " bytes and proof of ", hello.proof.size(), " bytes, expected ", kNonceBytes, " and 32");
  return hello;
}

Bytes hello_proof(const std::string& token, const Bytes& driver_nonce, const Hello& hello) {
  Bytes fields = PayloadWriter().u32(hello.version).u32(hello.world_size).u32(hello.rank).take();
  return proof(token, "wick-hello", driver_nonce, hello.nonce, fields);
}

Bytes welcome_proof(const std::string& token, const Bytes& driver_nonce, const Bytes& follower_nonce) {
  return proof(token, "wick-welcome", driver_nonce, follower_nonce, {});
}

bool proofs_match(const Bytes& a, const Bytes& b) {
  return a.size() == b.size() && equal_in_constant_time(reinterpret_cast<const uint8_t*>(a.data()),
                                                        reinterpret_cast<const uint8_t*>(b.data()), a.size());
}

PayloadWriter& PayloadWriter::u8(uint8_t v) {
  data_.push_back(static_cast<char>(v));
  return *this;
}

PayloadWriter& PayloadWriter::u32(uint32_t v) {
  char b[4];
  put_le(b, v, 4);
  data_.insert(data_.end(), b, b + 4);
  return *this;
}

PayloadWriter& PayloadWriter::u64(uint64_t v) {
  char b[8];
  put_le(b, v, 8);
  data_.insert(data_.end(), b, b + 8);
  return *this;
}

PayloadWriter& PayloadWriter::f64(double v) { return u64(std::bit_cast<uint64_t>(v)); }

PayloadWriter& PayloadWriter::bytes(const Bytes& v) {
  WICK_CHECK(v.size() <= kMaxFrameBytes, "PayloadWriter: ", v.size(), " bytes exceed the control channel limit");
  u32(static_cast<uint32_t>(v.size()));
  data_.insert(data_.end(), v.begin(), v.end());
  return *this;
}

PayloadWriter& PayloadWriter::string(const std::string& v) {
  WICK_CHECK(v.size() <= kMaxFrameBytes, "PayloadWriter: ", v.size(), " bytes exceed the control channel limit");
  u32(static_cast<uint32_t>(v.size()));
  data_.insert(data_.end(), v.begin(), v.end());
  return *this;
}

void PayloadReader::need(std::size_t n) const {
  WICK_CHECK(data_.size() - at_ >= n, what_, ": payload truncated (needs ", n, " more bytes at offset ", at_,
             ", has ", data_.size() - at_, ")");
}

uint8_t PayloadReader::u8() {
  need(1);
  return static_cast<uint8_t>(data_[at_++]);
}

uint32_t PayloadReader::u32() {
  need(4);
  auto v = static_cast<uint32_t>(get_le(data_.data() + at_, 4));
  at_ += 4;
  return v;
}

uint64_t PayloadReader::u64() {
  need(8);
  uint64_t v = get_le(data_.data() + at_, 8);
  at_ += 8;
  return v;
}

double PayloadReader::f64() { return std::bit_cast<double>(u64()); }

Bytes PayloadReader::bytes() {
  uint32_t n = u32();
  need(n);
  Bytes v(data_.begin() + static_cast<std::ptrdiff_t>(at_), data_.begin() + static_cast<std::ptrdiff_t>(at_ + n));
  at_ += n;
  return v;
}

std::string PayloadReader::string() {
  uint32_t n = u32();
  need(n);
  std::string v(data_.data() + at_, n);
  at_ += n;
  return v;
}

void PayloadReader::expect_end() const {
  WICK_CHECK(at_ == data_.size(), what_, ": ", data_.size() - at_, " unexpected trailing bytes");
}

}  // namespace wick::distributed
