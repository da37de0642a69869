// ControlServer / ControlClient over loopback TCP: followers as threads (and, for kill -9,
// as a forked process), registration checks, broadcast/gather, failure detection and the
// store. Every wait here is bounded by a short timeout.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <wick/distributed/control/control_client.h>
#include <wick/distributed/control/control_server.h>

#include "tests/distributed/handshake.h"
#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using wick::test::expect_error;

ControlOptions tcp_quick() {
  ControlOptions o;
  o.rendezvous_timeout = Milliseconds(5000);
  o.send_timeout = Milliseconds(2000);
  o.hello_timeout = Milliseconds(1000);
  return o;
}

// Runs `body(rank)` for ranks 1..world-1 on threads; join() rethrows the first failure.
class Followers {
 public:
  template <class F>
  Followers(int world, F body) : errors_(static_cast<std::size_t>(world)) {
    for (int r = 1; r < world; ++r) {
      threads_.emplace_back([this, r, body] {
        try {
          body(r);
        } catch (...) {
          errors_[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
    }
  }
  ~Followers() { join_quietly(); }
  void join() {
    join_quietly();
    for (auto& e : errors_) {
      if (e) std::rethrow_exception(e);
    }
  }

 private:
  void join_quietly() {
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

// A follower that obeys Train commands by sending rank * 1000 + epoch back, until Stop.
void obedient_follower(int port, int rank, int world) {
  ControlClient client("127.0.0.1", port, rank, world, "job-1", tcp_quick());
  EXPECT_EQ(client.rank(), rank);
  for (;;) {
    Command c = client.receive(Milliseconds(5000));
    if (c.type == CommandType::Stop) return;
    EXPECT_EQ(c.type, CommandType::Train);
    client.send_to_driver(encode_int64(rank * 1000 + decode_int64(c.payload)));
  }
}

void drive_three_epochs(ControlServer& server) {
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    server.broadcast({CommandType::Train, encode_int64(epoch)});
    std::vector<Bytes> replies = server.gather(Milliseconds(5000));
    ASSERT_EQ(static_cast<int>(replies.size()), server.world_size());
    EXPECT_TRUE(replies[0].empty());
    for (int r = 1; r < server.world_size(); ++r) EXPECT_EQ(decode_int64(replies[static_cast<std::size_t>(r)]), r * 1000 + epoch);
  }
  server.broadcast({CommandType::Stop, {}});
}

TEST(ControlTcp, DriverAndOneToThreeFollowers) {
  for (int world = 1; world <= 4; ++world) {
    SCOPED_TRACE("world size " + std::to_string(world));
    ControlServer server("127.0.0.1", 0, world, "job-1", tcp_quick());
    ASSERT_GT(server.port(), 0);
    int port = server.port();
    Followers followers(world, [&](int rank) { obedient_follower(port, rank, world); });
    server.wait_for_followers(Milliseconds(5000));
    drive_three_epochs(server);
    followers.join();
  }
}

TEST(ControlTcp, FollowersMayStartBeforeTheDriver) {
  const int world = 3;
  int port = find_free_port();
  Followers followers(world, [&](int rank) { obedient_follower(port, rank, world); });
  std::this_thread::sleep_for(Milliseconds(200));  // the followers are retrying by now
  ControlServer server("127.0.0.1", port, world, "job-1", tcp_quick());
  server.wait_for_followers(Milliseconds(5000));
  drive_three_epochs(server);
  followers.join();
}

TEST(ControlTcp, CommandsKeepTheirOrderAndPayloads) {
  ControlServer server("127.0.0.1", 0, 2, "job-1", tcp_quick());
  int port = server.port();
  std::vector<Command> seen;
  Followers followers(2, [&](int rank) {
    ControlClient client("127.0.0.1", port, rank, 2, "job-1", tcp_quick());
    for (int i = 0; i < 4; ++i) seen.push_back(client.receive(Milliseconds(5000)));
  });
  server.wait_for_followers(Milliseconds(5000));
  server.broadcast({CommandType::Train, encode_int64(5)});
  server.broadcast({CommandType::Validate, encode_int64(5)});
  server.broadcast({CommandType::Custom, Bytes{'h', 'i', '\0'}});
  server.broadcast({CommandType::Stop, {}});
  followers.join();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].type, CommandType::Train);
  EXPECT_EQ(decode_int64(seen[0].payload), 5);
  EXPECT_EQ(seen[1].type, CommandType::Validate);
  EXPECT_EQ(seen[2].type, CommandType::Custom);
  EXPECT_EQ(seen[2].payload, (Bytes{'h', 'i', '\0'}));
  EXPECT_EQ(seen[3].type, CommandType::Stop);
}

TEST(ControlTcp, WrongTokenAndWorldSizeAreRefusedAndTheDriverKeepsWaiting) {
  const int world = 2;
  ControlServer server("127.0.0.1", 0, world, "right-token", tcp_quick());
  int port = server.port();
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(5000)); });
  expect_error([&] { ControlClient("127.0.0.1", port, 1, world, "other-job", tcp_quick()); },
               {"rank 1", "refused registration", "job token does not match"});
  expect_error([&] { ControlClient("127.0.0.1", port, 1, 3, "right-token", tcp_quick()); },
               {"refused registration", "world size 3", "world size 2"});
  ControlClient good("127.0.0.1", port, 1, world, "right-token", tcp_quick());
  waiting.get();
  server.broadcast({CommandType::Stop, {}});
  EXPECT_EQ(good.receive(Milliseconds(2000)).type, CommandType::Stop);
}

TEST(ControlTcp, DuplicateRankIsRefused) {
  const int world = 3;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server.port();
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(5000)); });
  ControlClient first("127.0.0.1", port, 1, world, "t", tcp_quick());
  expect_error([&] { ControlClient("127.0.0.1", port, 1, world, "t", tcp_quick()); },
               {"refused registration", "rank 1 is already registered"});
  ControlClient second("127.0.0.1", port, 2, world, "t", tcp_quick());
  waiting.get();
}

// Sends a hand-made Hello and returns the driver's refusal reason.
std::string refusal_for(int port, uint32_t version, uint32_t world, uint32_t rank, const std::string& token) {
  Socket s = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
  Bytes nonce = test::read_challenge(s);
  write_frame(s, FrameType::Hello, encode_hello(test::make_hello(nonce, version, world, rank, token)),
              deadline_after(Milliseconds(2000)), "test");
  return test::refusal(s);
}

TEST(ControlTcp, ProtocolVersionAndRankRangeAreChecked) {
  const int world = 2;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server.port();
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(5000)); });
  EXPECT_NE(refusal_for(port, kControlProtocolVersion + 1, world, 1, "t").find("protocol version"), std::string::npos);
  EXPECT_NE(refusal_for(port, kControlProtocolVersion, world, 0, "t").find("rank 0 is out of range 1..1"),
            std::string::npos);
  EXPECT_NE(refusal_for(port, kControlProtocolVersion, world, 7, "t").find("rank 7 is out of range"), std::string::npos);
  EXPECT_NE(refusal_for(port, kControlProtocolVersion, world, 1, "other").find("job token does not match"),
            std::string::npos);
  ControlClient good("127.0.0.1", port, 1, world, "t", tcp_quick());
  waiting.get();
}

TEST(ControlTcp, GarbageFromAStrayIsRejectedAndTheDriverKeepsWaiting) {
  const int world = 2;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server.port();
  auto waiting = std::async(std::launch::async, [&] { server.wait_for_followers(Milliseconds(5000)); });
  {
    // An announced length of 4 GiB: refused without allocating, connection dropped.
    Socket s = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
    const char huge[5] = {'\xff', '\xff', '\xff', '\xff', 1};
    EXPECT_EQ(test::read_challenge(s).size(), kNonceBytes);
    send_all(s, huge, 5, deadline_after(Milliseconds(2000)), "test");
    auto reply = read_frame(s, deadline_after(Milliseconds(2000)), "test");
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, FrameType::Refused);
    EXPECT_NE(std::string(reply->payload.begin(), reply->payload.end()).find("limit"), std::string::npos);
    EXPECT_FALSE(read_frame(s, deadline_after(Milliseconds(2000)), "test").has_value());  // then closed
  }
  {
    // A Hello cut short: 10 of 100 payload bytes, then the stray stops writing.
    Socket s = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
    std::string bytes = std::string("\x64\x00\x00\x00\x01", 5) + std::string(10, 'z');
    EXPECT_EQ(test::read_challenge(s).size(), kNonceBytes);
    send_all(s, bytes.data(), bytes.size(), deadline_after(Milliseconds(2000)), "test");
    ::shutdown(s.fd(), SHUT_WR);
    auto reply = read_frame(s, deadline_after(Milliseconds(2000)), "test");
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->type, FrameType::Refused);
    EXPECT_NE(std::string(reply->payload.begin(), reply->payload.end()).find("truncated"), std::string::npos);
  }
  {
    // A stray that connects and says nothing is dropped after hello_timeout.
    Socket silent = connect_tcp("127.0.0.1", port, deadline_after(Milliseconds(2000)));
    ControlClient good("127.0.0.1", port, 1, world, "t", tcp_quick());
    waiting.get();
  }
}

TEST(ControlTcp, RendezvousTimeoutNamesTheMissingRanks) {
  const int world = 4;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server.port();
  std::unique_ptr<ControlClient> one;
  std::thread joiner([&] { one = std::make_unique<ControlClient>("127.0.0.1", port, 2, world, "t", tcp_quick()); });
  auto start = Clock::now();
  expect_error([&] { server.wait_for_followers(Milliseconds(400)); },
               {"only 1 of 3 followers registered", "missing ranks 1, 3"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  joiner.join();
  expect_error([&] { server.broadcast({CommandType::Stop, {}}); }, {"wait_for_followers"});
}

TEST(ControlTcp, ClientGivesUpWhenNoDriverAppears) {
  int port = find_free_port();
  ControlOptions o = tcp_quick();
  o.rendezvous_timeout = Milliseconds(300);
  auto start = Clock::now();
  expect_error([&] { ControlClient("127.0.0.1", port, 1, 2, "t", o); },
               {"rank 1", "cannot reach the driver", std::to_string(port)});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

TEST(ControlTcp, GatherTimesOutNamingTheSilentRank) {
  const int world = 3;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server.port();
  std::atomic<bool> done{false};
  Followers followers(world, [&](int rank) {
    ControlClient client("127.0.0.1", port, rank, world, "t", tcp_quick());
    if (rank == 1) client.send_to_driver(encode_int64(1));
    while (!done) std::this_thread::sleep_for(Milliseconds(5));
  });
  server.wait_for_followers(Milliseconds(5000));
  auto start = Clock::now();
  expect_error([&] { server.gather(Milliseconds(200)); }, {"gather", "rank 2 sent nothing within 200 ms"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  done = true;
  followers.join();
}

TEST(ControlTcp, KilledFollowerProcessIsNamedByBroadcastAndGather) {
  const int world = 2;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());  // listening before the fork
  int port = server.port();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ControlClient client("127.0.0.1", port, 1, world, "t", tcp_quick());
      for (;;) ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  server.wait_for_followers(Milliseconds(5000));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto start = Clock::now();
  expect_error([&] { server.gather(Milliseconds(5000)); }, {"gather", "rank 1 disconnected"});
  expect_error([&] { server.broadcast({CommandType::Train, encode_int64(0)}); },
               {"broadcast(Train)", "rank 1 disconnected"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));  // detected, not timed out
}

TEST(ControlTcp, BroadcastRightAfterAKillStillNamesTheRank) {
  const int world = 2;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server.port();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      ControlClient client("127.0.0.1", port, 1, world, "t", tcp_quick());
      for (;;) ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  server.wait_for_followers(Milliseconds(5000));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  expect_error([&] { server.broadcast({CommandType::Validate, {}}); }, {"rank 1 disconnected"});
}

TEST(ControlTcp, FollowersNoticeADriverThatGoes) {
  const int world = 2;
  auto server = std::make_unique<ControlServer>("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server->port();
  std::unique_ptr<ControlClient> client;
  std::thread joiner([&] { client = std::make_unique<ControlClient>("127.0.0.1", port, 1, world, "t", tcp_quick()); });
  server->wait_for_followers(Milliseconds(5000));
  joiner.join();
  server->broadcast({CommandType::Train, {}});
  server.reset();  // the driver goes away (as if its process died)

  auto start = Clock::now();
  EXPECT_EQ(client->receive(Milliseconds(2000)).type, CommandType::Train);  // already delivered
  expect_error([&] { client->receive(Milliseconds(5000)); }, {"rank 1", "receive", "lost the connection"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  expect_error([&] { client->send_to_driver(Bytes{1}); }, {"send_to_driver", "lost the connection"});
  expect_error([&] { client->store().get("k", Milliseconds(5000)); }, {"lost the connection"});
}

TEST(ControlTcp, ReceiveTimesOut) {
  ControlServer server("127.0.0.1", 0, 2, "t", tcp_quick());
  int port = server.port();
  std::unique_ptr<ControlClient> client;
  std::thread joiner([&] { client = std::make_unique<ControlClient>("127.0.0.1", port, 1, 2, "t", tcp_quick()); });
  server.wait_for_followers(Milliseconds(5000));
  joiner.join();
  auto start = Clock::now();
  expect_error([&] { client->receive(Milliseconds(100)); }, {"no command from the driver", "100 ms"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

TEST(ControlTcp, StoreIsSharedAcrossDriverAndFollowers) {
  const int world = 3;
  ControlServer server("127.0.0.1", 0, world, "t", tcp_quick());
  int port = server.port();
  Followers followers(world, [&](int rank) {
    ControlClient client("127.0.0.1", port, rank, world, "t", tcp_quick());
    Store& store = client.store();
    if (rank == 1) {
      store.set("from-1", Bytes{'o', 'n', 'e'});
      EXPECT_EQ(store.get("from-2", Milliseconds(5000)), (Bytes{'t', 'w', 'o'}));
    } else {
      // Asked before rank 2 sets anything: the driver parks the request until it can answer.
      EXPECT_EQ(store.get("from-1", Milliseconds(5000)), (Bytes{'o', 'n', 'e'}));
      store.set("from-2", Bytes{'t', 'w', 'o'});
    }
    EXPECT_EQ(store.get("from-driver", Milliseconds(5000)), Bytes(100000, 'd'));  // larger than one packet
    expect_error([&] { store.get("never-set", Milliseconds(100)); }, {"never-set", "100 ms"});
    client.send_to_driver({});
    EXPECT_EQ(client.receive(Milliseconds(5000)).type, CommandType::Stop);
  });
  server.wait_for_followers(Milliseconds(5000));
  server.store().set("from-driver", Bytes(100000, 'd'));
  EXPECT_EQ(server.store().get("from-2", Milliseconds(5000)), (Bytes{'t', 'w', 'o'}));
  auto start = Clock::now();
  expect_error([&] { server.store().get("never-set", Milliseconds(100)); }, {"never-set", "not set within 100 ms"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  server.gather(Milliseconds(5000));
  server.broadcast({CommandType::Stop, {}});
  followers.join();
}

}  // namespace
}  // namespace wick::distributed
