#pragma once
// ControlServer: the driver's (rank 0) end of the TCP control channel. It listens, accepts
// the world_size - 1 followers, checks each one's registration (protocol version, job
// token, world size, rank) and then carries commands, follower messages and the job's Store
// over one connection per follower. Registrations run concurrently, each with a short
// deadline (hello_timeout), at most max_unregistered_connections at a time, and the token is
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
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
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

 private:
  struct Follower;
  class ServerStore;
  // The lowest rank whose connection is gone, and why.
  std::optional<std::pair<int, std::string>> first_disconnected();

  void require_registered(const char* what) const;
  std::vector<int> missing_ranks() const;
  // Hands an accepted connection to a registration thread of its own (so silent ones cannot
  // hold up the rest), or closes it when too many are registering already.
  void admit(Socket socket, Deadline deadline);
  // Runs the handshake (Challenge, Hello, Welcome); an accepted socket moves into
  // followers_, a refused one gets the reason, recorded in refusals_.
  void register_connection(Socket socket, Deadline deadline);
  // Ends the registrations still under way and joins their threads.
  void stop_registrations();
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
  std::set<int> registering_;  // sockets of registrations under way
  std::vector<std::thread> handlers_;  // their threads
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Follower>> followers_;  // index = rank; [0] unused
  std::unique_ptr<ServerStore> store_;
};

}  // namespace wick::distributed
