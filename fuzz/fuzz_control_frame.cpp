// The control channel's decoding on arbitrary bytes: the input is what a peer sends on a
// connection (here one end of a socketpair), read frame by frame with read_frame, and each
// payload decoded the way the driver and the followers decode that frame type with
// PayloadReader. A well-formed or a malformed stream must end in a frame list or a
// wick::Error, never a crash or an allocation far beyond what arrived.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <wick/distributed/control/control_message.h>
#include <wick/tensor/error.h>

using namespace wick::distributed;

namespace {

void decode(const Frame& frame) {
  PayloadReader r(frame.payload, frame_type_name(frame.type));
  switch (frame.type) {
    case FrameType::Hello:
      decode_hello(frame.payload);
      return;
    case FrameType::Challenge:
    case FrameType::Welcome:
      r.bytes();  // a nonce, a proof
      break;
    case FrameType::Refused:
      r.string();
      break;
    case FrameType::Command:
      r.u8();
      r.bytes();
      break;
    case FrameType::ToDriver:
      r.bytes();
      break;
    case FrameType::StoreSet:
      r.u64();
      r.string();
      r.bytes();
      break;
    case FrameType::StoreGet:
      r.u64();
      r.string();
      break;
    case FrameType::StoreReply:
      r.u64();
      r.bytes();
      break;
  }
  r.expect_end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Everything is written before reading starts, so the input must fit the socket buffer.
  size = std::min<size_t>(size, 100'000);
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  int buffer = 1 << 20;
  ::setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  ::setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  Socket reader(fds[0]);
  Socket writer(fds[1]);
  size_t done = 0;
  while (done < size) {
    ssize_t w = ::send(writer.fd(), data + done, size - done, MSG_NOSIGNAL);
    if (w <= 0) std::abort();
    done += static_cast<size_t>(w);
  }
  writer.close();  // the reader sees end-of-file after the input
  try {
    while (std::optional<Frame> frame = read_frame(reader, deadline_after(std::chrono::seconds(5)), "fuzz")) {
      try {
        decode(*frame);
      } catch (const wick::Error&) {
      }
    }
  } catch (const wick::Error&) {
  }
  return 0;
}
