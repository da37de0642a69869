#pragma once
// Tests that speak the control channel's registration by hand (strays, replays, refusals).
#include <string>

#include <wick/distributed/control/control_message.h>
#include <wick/distributed/control/tcp_socket.h>

namespace wick::distributed::test {

// Reads the driver's Challenge on `socket` and returns its nonce (empty when the driver
// closed or sent something else).
inline Bytes read_challenge(const Socket& socket) {
  auto frame = read_frame(socket, deadline_after(Milliseconds(3000)), "test challenge");
  if (!frame || frame->type != FrameType::Challenge) return {};
  PayloadReader r(frame->payload, "Challenge");
  return r.bytes();
}

// A Hello for `nonce` with the given fields, proved with `token`.
inline Hello make_hello(const Bytes& driver_nonce, uint32_t version, uint32_t world, uint32_t rank,
                        const std::string& token) {
  Hello hello;
  hello.version = version;
  hello.world_size = world;
  hello.rank = rank;
  hello.nonce.assign(kNonceBytes, 'n');
  hello.proof = hello_proof(token, driver_nonce, hello);
  return hello;
}

// The reason of the Refused frame that comes next on `socket`, or a marker saying what came.
inline std::string refusal(const Socket& socket) {
  auto reply = read_frame(socket, deadline_after(Milliseconds(3000)), "test");
  if (!reply) return "<closed>";
  if (reply->type != FrameType::Refused) return std::string("<") + frame_type_name(reply->type) + ">";
  PayloadReader r(reply->payload, "Refused");
  return r.string();
}

}  // namespace wick::distributed::test
