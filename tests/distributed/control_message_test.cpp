// Framing of the TCP control channel over a socketpair: round trips, and the ways a corrupt
// or foreign peer can break a frame (too long, truncated, unknown type, short payload).
#include <sys/socket.h>

#include <cstring>
#include <string>

#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/control/control_message.h>

#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using wick::test::expect_error;

struct SocketPair {
  Socket a, b;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    a = Socket(fds[0]);
    b = Socket(fds[1]);
  }
};

void write_raw(const Socket& s, const std::string& bytes) {
  send_all(s, bytes.data(), bytes.size(), deadline_after(Milliseconds(1000)), "test");
}

std::string header(uint32_t length, uint8_t type) {
  std::string h(5, '\0');
  for (int i = 0; i < 4; ++i) h[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  h[4] = static_cast<char>(type);
  return h;
}

TEST(ControlMessage, FramesRoundTripInOrder) {
  SocketPair p;
  PayloadWriter w;
  w.u8(7).u32(0xdeadbeef).u64(1234567890123ull).string("token").bytes(Bytes{'x', '\0', 'y'});
  write_frame(p.a, FrameType::Hello, w.data(), deadline_after(Milliseconds(1000)), "test");
  write_frame(p.a, FrameType::Welcome, {}, deadline_after(Milliseconds(1000)), "test");

  auto f1 = read_frame(p.b, deadline_after(Milliseconds(1000)), "test");
  ASSERT_TRUE(f1.has_value());
  EXPECT_EQ(f1->type, FrameType::Hello);
  PayloadReader r(f1->payload, "Hello message");
  EXPECT_EQ(r.u8(), 7);
  EXPECT_EQ(r.u32(), 0xdeadbeefu);
  EXPECT_EQ(r.u64(), 1234567890123ull);
  EXPECT_EQ(r.string(), "token");
  EXPECT_EQ(r.bytes(), (Bytes{'x', '\0', 'y'}));
  r.expect_end();

  auto f2 = read_frame(p.b, deadline_after(Milliseconds(1000)), "test");
  ASSERT_TRUE(f2.has_value());
  EXPECT_EQ(f2->type, FrameType::Welcome);
  EXPECT_TRUE(f2->payload.empty());

  p.a.close();  // a clean close between frames is the end of the stream, not an error
  EXPECT_FALSE(read_frame(p.b, deadline_after(Milliseconds(1000)), "test").has_value());
}

TEST(ControlMessage, LengthIsLittleEndianOnTheWire) {
  SocketPair p;
  write_frame(p.a, FrameType::ToDriver, Bytes(258, 'q'), deadline_after(Milliseconds(1000)), "test");
  unsigned char raw[5];
  ASSERT_EQ(receive_exact(p.b, raw, 5, deadline_after(Milliseconds(1000)), "test"), ReceiveResult::Complete);
  EXPECT_EQ(raw[0], 2);
  EXPECT_EQ(raw[1], 1);
  EXPECT_EQ(raw[2], 0);
  EXPECT_EQ(raw[3], 0);
  EXPECT_EQ(raw[4], static_cast<unsigned char>(FrameType::ToDriver));
}

TEST(ControlMessage, OversizedAnnouncedLengthIsRejectedWithoutAllocating) {
  SocketPair p;
  write_raw(p.a, header(0xffffffffu, 4));
  expect_error([&] { read_frame(p.b, deadline_after(Milliseconds(1000)), "test reader"); },
               {"test reader", "4294967295 bytes", "limit"});
  SocketPair q;
  write_raw(q.a, header(kMaxFrameBytes + 1, 4));
  expect_error([&] { read_frame(q.b, deadline_after(Milliseconds(1000)), "test reader"); }, {"limit"});
}

TEST(ControlMessage, OversizedPayloadIsRefusedBeforeSending) {
  SocketPair p;
  Bytes big(static_cast<std::size_t>(kMaxFrameBytes) + 1);
  expect_error([&] { write_frame(p.a, FrameType::ToDriver, big, deadline_after(Milliseconds(1000)), "sender"); },
               {"sender", "exceeds"});
}

TEST(ControlMessage, TruncatedFramesAreErrors) {
  {
    SocketPair p;  // header cut short
    write_raw(p.a, std::string("\x10\x00", 2));
    p.a.close();
    expect_error([&] { read_frame(p.b, deadline_after(Milliseconds(1000)), "r"); }, {"truncated"});
  }
  {
    SocketPair p;  // payload cut short
    write_raw(p.a, header(100, 4) + std::string(10, 'z'));
    p.a.close();
    expect_error([&] { read_frame(p.b, deadline_after(Milliseconds(1000)), "r"); }, {"truncated", "10 of 100"});
  }
  {
    SocketPair p;  // header only, no payload at all
    write_raw(p.a, header(8, 4));
    p.a.close();
    expect_error([&] { read_frame(p.b, deadline_after(Milliseconds(1000)), "r"); }, {"truncated"});
  }
}

TEST(ControlMessage, UnknownTypeAndShortPayloadAreErrors) {
  SocketPair p;
  write_raw(p.a, header(0, 200));
  expect_error([&] { read_frame(p.b, deadline_after(Milliseconds(1000)), "r"); }, {"unknown message type 200"});

  Bytes three{'a', 'b', 'c'};
  PayloadReader r(three, "Hello message");
  expect_error([&] { r.u32(); }, {"Hello message", "truncated"});
  PayloadWriter w;
  w.u32(1000);  // a string that claims 1000 bytes but has none
  Bytes claims = w.data();
  PayloadReader s(claims, "Refused message");
  expect_error([&] { s.string(); }, {"Refused message", "truncated"});
}

TEST(ControlMessage, ReadTimesOutAtTheDeadline) {
  SocketPair p;
  auto start = Clock::now();
  expect_error([&] { read_frame(p.b, deadline_after(Milliseconds(50)), "r"); }, {"timed out"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

TEST(ControlMessage, WritingToAClosedPeerThrowsInsteadOfRaisingSigpipe) {
  SocketPair p;
  p.b.close();
  expect_error(
      [&] {
        for (int i = 0; i < 4; ++i) write_frame(p.a, FrameType::ToDriver, Bytes(1000), deadline_after(Milliseconds(500)), "w");
      },
      {"w", "send failed"});
}

TEST(ControlMessage, Int64PayloadHelpers) {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{42}, int64_t{1} << 40}) EXPECT_EQ(decode_int64(encode_int64(v)), v);
  expect_error([] { decode_int64(Bytes{1, 2}); }, {"decode_int64", "8 bytes"});
  EXPECT_STREQ(command_type_name(CommandType::Validate), "Validate");
}

}  // namespace
}  // namespace wick::distributed
