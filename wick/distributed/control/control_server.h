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
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/control/control_options.h>

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

  int port() const;
  int world_size() const override;

  // Accepts and registers followers until all world_size - 1 are in, or throws wick::Error
  // naming the missing ranks (and why strays were refused) once `timeout` passes. Refused
  // connections get the reason and are dropped; the wait goes on for the right ones.
  void wait_for_followers(Milliseconds timeout);
  void wait_for_followers();  // within options.rendezvous_timeout

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
  std::size_t connection_cap() const;

 private:
  class Impl;  // the listener, the followers' connections and reader threads (control_server.cpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace wick::distributed
