#pragma once
// Framing of the TCP control channel. A frame on the wire is
//   [u32 little-endian payload length][u8 frame type][payload bytes]
// and a payload is a sequence of little-endian integers and length-prefixed strings written
// by PayloadWriter and read back, bounds-checked, by PayloadReader. A frame announcing more
// than kMaxFrameBytes, a truncated frame or a malformed payload throws wick::Error; nothing
// is allocated before the length has been checked.
#include <cstdint>
#include <optional>
#include <string>

#include <wick/distributed/comm/store.h>
#include <wick/distributed/control/tcp_socket.h>

namespace wick::distributed {

// Bumped whenever the frame layout or the registration handshake changes.
// Version 2: the Hello proves knowledge of the job token (HMAC over the driver's nonce)
// instead of carrying it. Version 3: a pipeline's commands have command types of their own
// (a version 2 follower refuses them as unknown).
inline constexpr uint32_t kControlProtocolVersion = 3;

// The largest payload a frame may carry (64 MiB): commands and store values are small, so a
// larger announced length means a foreign or corrupt peer.
inline constexpr uint32_t kMaxFrameBytes = 64u << 20;
// Before a peer has registered it may send only a Hello (version, world, rank, token: tens
// of bytes), so an unauthenticated peer cannot make the driver allocate much.
inline constexpr uint32_t kMaxHelloBytes = 4096;

enum class FrameType : uint8_t {
  Hello = 1,        // follower -> driver: version, world size, rank, its nonce, proof
  Welcome = 2,      // driver -> follower: registration accepted, with the driver's proof
  Refused = 3,      // driver -> follower: registration refused, with the reason
  Command = 4,      // driver -> follower: command type + payload
  ToDriver = 5,     // follower -> driver: a message for gather()
  StoreSet = 6,     // follower -> driver: request id, key, value
  StoreGet = 7,     // follower -> driver: request id, key
  StoreReply = 8,   // driver -> follower: request id, value (empty for a set's acknowledgement)
  Challenge = 9,    // driver -> follower, first on every connection: the driver's nonce
};

const char* frame_type_name(FrameType type);

struct Frame {
  FrameType type{};
  Bytes payload;
};

// Writes one frame; throws wick::Error (naming `what`) when the payload is too large, the
// peer is gone or the deadline passes.
void write_frame(const Socket& socket, FrameType type, const Bytes& payload, Deadline deadline, const char* what);

// The 5-byte header of a frame: length and type, checked (a length over `max_bytes` or an
// unknown type throws wick::Error naming `what`). read_frame uses it; so does the driver's
// event loop, which gathers a Hello's bytes as they come instead of blocking on them.
inline constexpr std::size_t kFrameHeaderBytes = 5;
struct FrameHeader {
  FrameType type{};
  uint32_t length = 0;
};
FrameHeader parse_frame_header(const char (&header)[kFrameHeaderBytes], uint32_t max_bytes, const char* what);

// Reads one frame. Returns nullopt when the peer closed the connection cleanly between
// frames; throws wick::Error for a truncated or oversized frame, an unknown frame type, an
// I/O error or the deadline passing.
// `max_bytes` bounds the payload (at most kMaxFrameBytes); the payload buffer grows as the
// data arrives, so an announced length costs nothing until the bytes are really sent.
std::optional<Frame> read_frame(const Socket& socket, Deadline deadline, const char* what,
                                uint32_t max_bytes = kMaxFrameBytes);

// The registration handshake. The driver opens every connection with a Challenge carrying a
// fresh random nonce; the follower answers with a Hello whose proof is
// HMAC-SHA256(token, "wick-hello" | driver nonce | follower nonce | version | world | rank);
// the driver's Welcome carries HMAC-SHA256(token, "wick-welcome" | driver nonce | follower
// nonce). The token never crosses the wire, a recorded Hello is useless against another
// nonce, and the follower knows it reached its own job's driver. (Authentication only: what
// follows is not encrypted.)
inline constexpr std::size_t kNonceBytes = 32;

struct Hello {
  uint32_t version = kControlProtocolVersion;
  uint32_t world_size = 0;
  uint32_t rank = 0;
  Bytes nonce;  // the follower's
  Bytes proof;
};

Bytes encode_hello(const Hello& hello);
// Throws wick::Error for a malformed payload (not for a wrong proof: see hello_proof).
Hello decode_hello(const Bytes& payload);
Bytes hello_proof(const std::string& token, const Bytes& driver_nonce, const Hello& hello);
Bytes welcome_proof(const std::string& token, const Bytes& driver_nonce, const Bytes& follower_nonce);
// Constant-time comparison of two proofs.
bool proofs_match(const Bytes& a, const Bytes& b);

class PayloadWriter {
 public:
  PayloadWriter& u8(uint8_t v);
  PayloadWriter& u32(uint32_t v);
  PayloadWriter& u64(uint64_t v);
  PayloadWriter& f64(double v);  // its bits, as a u64
  PayloadWriter& bytes(const Bytes& v);  // u32 length + bytes
  PayloadWriter& string(const std::string& v);
  const Bytes& data() const { return data_; }
  Bytes take() { return std::move(data_); }

 private:
  Bytes data_;
};

class PayloadReader {
 public:
  // `what` names the frame in error messages ("Hello frame").
  PayloadReader(const Bytes& data, const char* what) : data_(data), what_(what) {}
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  double f64();
  Bytes bytes();
  std::string string();
  // The bytes not read yet: a count read from the payload is checked against it before
  // anything is allocated for that many items.
  std::size_t remaining() const { return data_.size() - at_; }
  // Throws unless every byte was consumed (trailing garbage means a different protocol).
  void expect_end() const;

 private:
  void need(std::size_t n) const;
  const Bytes& data_;
  std::size_t at_ = 0;
  const char* what_;
};

}  // namespace wick::distributed
