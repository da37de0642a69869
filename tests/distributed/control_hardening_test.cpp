// The control channel against peers that misbehave before or after registering: an
// oversized first frame, a Hello from a connection already closed, a follower that goes
// away while the driver waits for its rendezvous key.
#include <sys/socket.h>

#include <algorithm>
#include <thread>
#include <vector>

#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include <wick/distributed/control_client.h>
#include <wick/distributed/control_environment.h>
#include <wick/distributed/control_server.h>

#include "tests/distributed/handshake.h"
#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using Clock = std::chrono::steady_clock;

ControlOptions quick() {
  ControlOptions o;
  o.rendezvous_timeout = Milliseconds(5000);
  o.send_timeout = Milliseconds(2000);
  o.hello_timeout = Milliseconds(3000);
  return o;
}

TEST(ControlHardening, AnOversizedFirstFrameIsRefusedAtOnceWithoutWaitingForItsBytes) {
  ControlServer server("127.0.0.1", 0, 2, "t", quick());
  const int port = server.port();
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(5000)); });
  {
    // 64 MiB - 1 announced as a Hello, none of it sent: before the fix the driver made room
    // for it and waited hello_timeout (3 s) for the bytes.
    Socket s = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
    const uint32_t length = kMaxFrameBytes - 1;
    const char header[5] = {static_cast<char>(length & 0xff), static_cast<char>((length >> 8) & 0xff),
                            static_cast<char>((length >> 16) & 0xff), static_cast<char>(length >> 24),
                            static_cast<char>(FrameType::Hello)};
    EXPECT_EQ(test::read_challenge(s).size(), kNonceBytes);
    auto start = Clock::now();
    send_all(s, header, 5, deadline_after(Milliseconds(2000)), "test");
    std::string why = test::refusal(s);
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1500));
    EXPECT_NE(why.find("more than the limit of 4096 bytes before registration"), std::string::npos) << why;
  }
  ControlClient good("127.0.0.1", port, 1, 2, "t", quick());
  waiting.get();
}

TEST(ControlHardening, AHelloFromAConnectionItsSenderClosedDoesNotTakeTheRank) {
  ControlServer server("127.0.0.1", 0, 2, "t", quick());
  const int port = server.port();
  {
    // Queued while the driver is not accepting yet, then given up on.
    // (Its proof answers no challenge this driver will make: the handshake refuses it too.)
    Socket s = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
    Bytes stale_nonce(kNonceBytes, 's');
    write_frame(s, FrameType::Hello, encode_hello(test::make_hello(stale_nonce, kControlProtocolVersion, 2, 1, "t")),
                deadline_after(Milliseconds(2000)), "test");
  }
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(5000)); });
  // Before the fix: "rank 1 is already registered (duplicate rank)", and the driver held a
  // dead follower.
  ControlClient retry("127.0.0.1", port, 1, 2, "t", quick());
  waiting.get();
  EXPECT_EQ(retry.rank(), 1);
}

TEST(ControlHardening, AFollowerThatLeavesDuringTheRendezvousIsNamedAtOnce) {
  ControlServer server("127.0.0.1", 0, 3, "t", quick());
  const int port = server.port();
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(5000)); });
  auto one = std::make_unique<ControlClient>("127.0.0.1", port, 1, 3, "t", quick());
  ControlClient two("127.0.0.1", port, 2, 3, "t", quick());
  waiting.get();
  two.store().set("gloo/2", Bytes{'x'});
  auto start = Clock::now();
  auto get = std::async(std::launch::async, [&] { return server.store().get("gloo/1", Milliseconds(8000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  one.reset();  // rank 1 goes away without setting its key
  wick::test::expect_error([&] { get.get(); }, {"rank 1 disconnected", "'gloo/1'"});
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(3000));  // not the 8 s timeout
  EXPECT_EQ(server.store().get("gloo/2", Milliseconds(100)), Bytes{'x'});  // set keys still answer
}

}  // namespace
}  // namespace wick::distributed

namespace wick::distributed {
namespace {

// Issue 14, defect 5: registrations used to be handled one at a time with up to
// hello_timeout each, so 15 silent sockets ahead of the real follower (15 x 3 s here)
// outlasted its rendezvous timeout.
TEST(ControlHardening, SilentSocketsDoNotHoldUpTheRealFollower) {
  ControlServer server("127.0.0.1", 0, 2, "t", quick());
  const int port = server.port();
  std::vector<Socket> silent;
  for (int i = 0; i < 15; ++i) silent.push_back(connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000))));
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(10000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the strays are accepted first
  auto start = Clock::now();
  ControlClient good("127.0.0.1", port, 1, 2, "t", quick());
  waiting.get();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1500));
}

TEST(ControlHardening, ConnectionsPastTheCapAreClosedAndTheFollowerRetries) {
  ControlOptions options = quick();
  options.max_unregistered_connections = 4;
  options.hello_timeout = Milliseconds(1000);
  ControlServer server("127.0.0.1", 0, 2, "t", options);
  const int port = server.port();
  std::vector<Socket> silent;
  for (int i = 0; i < 10; ++i) silent.push_back(connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000))));
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(10000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Past the cap, the strays were closed unheard: no challenge, end of stream.
  int closed = 0;
  for (auto& s : silent) {
    if (!read_frame(s, deadline_after(Milliseconds(2000)), "test")) ++closed;  // else its Challenge
  }
  EXPECT_EQ(closed, 6);
  // The real follower is turned away while 4 strays hold the slots, retries, and gets in
  // once their hello_timeout (1 s) ends them.
  auto start = Clock::now();
  ControlClient good("127.0.0.1", port, 1, 2, "t", options);
  waiting.get();
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(4000));
}

TEST(ControlHardening, TheTokenNeverCrossesTheWireAndAReplayedHelloIsRefused) {
  const std::string token = "the-secret-token-1234";
  ControlServer server("127.0.0.1", 0, 3, token, quick());
  const int port = server.port();
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(8000)); });
  // A follower's Hello as the real client builds it, recorded.
  Socket first = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
  Bytes nonce = test::read_challenge(first);
  ASSERT_EQ(nonce.size(), kNonceBytes);
  Bytes hello = encode_hello(test::make_hello(nonce, kControlProtocolVersion, 3, 1, token));
  EXPECT_EQ(std::search(hello.begin(), hello.end(), token.begin(), token.end()), hello.end());
  // Replayed on another connection, whose challenge is a different nonce: refused.
  Socket replay = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
  Bytes other = test::read_challenge(replay);
  EXPECT_NE(other, nonce);
  write_frame(replay, FrameType::Hello, hello, deadline_after(Milliseconds(2000)), "test");
  EXPECT_NE(test::refusal(replay).find("job token does not match"), std::string::npos);
  // On its own connection the Hello is welcomed, with the driver's proof of the token.
  write_frame(first, FrameType::Hello, hello, deadline_after(Milliseconds(2000)), "test");
  auto welcome = read_frame(first, deadline_after(Milliseconds(2000)), "test");
  ASSERT_TRUE(welcome && welcome->type == FrameType::Welcome);
  PayloadReader r(welcome->payload, "Welcome");
  EXPECT_EQ(r.bytes(), welcome_proof(token, nonce, decode_hello(hello).nonce));
  ControlClient two("127.0.0.1", port, 2, 3, token, quick());
  waiting.get();
}

TEST(ControlHardening, AFollowerRefusesADriverThatDoesNotKnowTheToken) {
  // A fake driver: challenges, accepts any Hello, and welcomes without a valid proof.
  Socket listener = listen_tcp("127.0.0.1", 0);
  const int port = local_port(listener);
  auto fake = std::async(std::launch::async, [&] {
    std::optional<Socket> s = accept_tcp(listener, deadline_after(Milliseconds(5000)));
    if (!s) return;
    write_frame(*s, FrameType::Challenge, PayloadWriter().bytes(Bytes(kNonceBytes, 'c')).take(),
                deadline_after(Milliseconds(2000)), "fake");
    read_frame(*s, deadline_after(Milliseconds(2000)), "fake");
    write_frame(*s, FrameType::Welcome, PayloadWriter().bytes(Bytes(32, 'w')).take(), deadline_after(Milliseconds(2000)),
                "fake");
    read_frame(*s, deadline_after(Milliseconds(2000)), "fake");  // until the client hangs up
  });
  wick::test::expect_error([&] { ControlClient("127.0.0.1", port, 1, 2, "t", quick()); },
                           {"rank 1", "does not know this job's token"});
  fake.get();
}

// The driver listens where MASTER_ADDR says (issue 14, defect 5), not on every interface:
// 127.0.0.2 is this machine too, but not the address asked for.
TEST(ControlHardening, TheDriverListensOnMasterAddrUnlessToldOtherwise) {
  for (const std::string bind : {"", "0.0.0.0"}) {
    const int port = find_free_port();
    ProcessGroupConfig config;
    config.world_size = 2;
    config.master_addr = "127.0.0.1";
    config.master_port = port;
    config.job_token = "t";
    config.bind_addr = bind;
    auto driver = std::async(std::launch::async, [&] { return start_driver_channel(config, quick()); });
    bool reached_other_address = false;
    try {
      Socket probe = connect_tcp("127.0.0.2", port, deadline_after(Milliseconds(500)));
      reached_other_address = true;
    } catch (const Error&) {
    }
    EXPECT_EQ(reached_other_address, bind == "0.0.0.0") << "WICK_BIND_ADDR='" << bind << "'";
    ControlClient follower("127.0.0.1", port, 1, 2, "t", quick());
    EXPECT_EQ(driver.get()->world_size(), 2);
  }
}

}  // namespace
}  // namespace wick::distributed
