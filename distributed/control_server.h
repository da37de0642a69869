#pragma once
// ControlServer: the driver's (rank 0) end of the TCP control channel. It listens, accepts
// the world_size - 1 followers, checks each one's registration (protocol version, job
// token, world size, rank) and then carries commands, follower messages and the job's Store
// over one connection per follower. Connections that have not registered yet are served by
// one event loop on the thread that calls wait_for_followers (no thread per connection, a
// few hundred bytes each), each with a short deadline for its Hello (hello_timeout), at most
// max_unregistered_connections at a time (the oldest gives way to a new one); the token is
// proved with a challenge, never sent (see control_message.h).
//
//   ControlServer server("10.0.0.1", 29500, world_size, token);
//   server.wait_for_followers(std::chrono::seconds(60));
//   server.broadcast({CommandType::Train, encode_int64(epoch)});
//   auto counts = server.gather(std::chrono::seconds(30));
//
// wait_for_followers/broadcast/gather are meant for the driver's one control thread; store()
// may be used from any thread (the communicators rendezvous through it from theirs).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <wick/distributed/control_channel.h>
#include <wick/distributed/control_message.h>
#include <wick/distributed/control_options.h>
#include <wick/distributed/tcp_socket.h>

namespace wick::distributed {

class ControlServer final : public DriverChannel {
 public:
  // Binds and listens on host:port at once (port 0 picks a free port, see port()); does not
  // wait for anyone yet. Throws wick::Error when the address cannot be bound.
  ControlServer(const std::string& host, int port, int world_size, std::string job_token,
                ControlOptions options = {});
  ~ControlServer() override;
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  int port() const { return port_; }
  int world_size() const override { return world_size_; }

  // Accepts and registers followers until all world_size - 1 are in, or throws wick::Error
  // naming the missing ranks (and why strays were refused) once `timeout` passes. Refused
  // connections get the reason and are dropped; the wait goes on for the right ones.
  void wait_for_followers(Milliseconds timeout);
  void wait_for_followers() { wait_for_followers(options_.rendezvous_timeout); }

  void broadcast(const Command& command) override;
  std::vector<Bytes> gather(Milliseconds timeout) override;
  Store& store() override;

  // What the rendezvous did with the connections it accepted (for tests and measurements).
  struct RendezvousStats {
    uint64_t accepted = 0;       // connections taken from the listener
    uint64_t registered = 0;     // welcomed followers
    uint64_t refused = 0;        // told why (wrong token, world size, rank, garbage...)
    uint64_t closed_early = 0;   // closed by the peer before a whole Hello
    uint64_t expired = 0;        // no whole Hello within hello_timeout
    uint64_t evicted = 0;        // the oldest silent one, dropped to make room for a new one
    std::size_t peak_pending = 0;  // most unregistered connections held at once
  };
  RendezvousStats rendezvous_stats() const;
  // The most unregistered connections held at once: max_unregistered_connections, lowered
  // to half the process's open-file limit so the rest of the program keeps descriptors.
  std::size_t connection_cap() const { return connection_cap_; }

 private:
  struct Follower;
  struct Pending;
  class ServerStore;
  // The lowest rank whose connection is gone, and why.
  std::optional<std::pair<int, std::string>> first_disconnected();

  void require_registered(const char* what) const;
  std::vector<int> missing_ranks() const;
  // The rendezvous' event loop, one step at a time: take what the listener has, read what
  // the pending connections sent, end those whose Hello is complete or overdue.
  // False when out of descriptors with no stranger left to drop (the loop pauses listening).
  bool accept_connections(std::deque<Pending>& pending);
  void serve(Pending& p);
  void handle_hello(Pending& p);
  // Sends the reason (best effort, never blocking), closes, and counts it under `counter`.
  void refuse(Pending& p, const std::string& reason, uint64_t RendezvousStats::*counter = &RendezvousStats::refused);
  void note_refusal(const std::string& reason);  // call with mutex_ held
  void read_loop(int rank);
  void mark_disconnected(int rank, const std::string& why);
  // Writes a frame to rank's connection under its write lock.
  void send_to(int rank, FrameType type, const Bytes& payload, const char* what);
  void handle_store_set(int rank, const Bytes& payload);
  void handle_store_get(int rank, const Bytes& payload);

  int world_size_;
  std::string job_token_;
  ControlOptions options_;
  std::string address_;  // host:port, for messages
  Socket listener_;
  int port_ = 0;
  bool registered_ = false;

  mutable std::mutex mutex_;  // guards everything below, and every Follower's inbox/disconnected/why
  std::vector<std::string> refusals_;  // why strays were refused, for the timeout message
  RendezvousStats stats_;
  std::size_t connection_cap_ = 1;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Follower>> followers_;  // index = rank; [0] unused
  std::unique_ptr<ServerStore> store_;
};

}  // namespace wick::distributed
