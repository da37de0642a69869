#pragma once
// ControlClient: a follower's (rank >= 1) end of the TCP control channel. The constructor
// connects to the driver (retrying until options.rendezvous_timeout, since the driver may
// start later) and registers; a refused registration throws wick::Error with the driver's
// reason. Afterwards a reader thread queues the driver's commands and store replies, so a
// driver that dies is noticed by the next receive()/send_to_driver()/store() call.
// Every method may be called from any thread.
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <wick/distributed/control_channel.h>
#include <wick/distributed/control_message.h>
#include <wick/distributed/control_options.h>
#include <wick/distributed/tcp_socket.h>

namespace wick::distributed {

class ControlClient final : public FollowerChannel {
 public:
  ControlClient(const std::string& host, int port, int rank, int world_size, const std::string& job_token,
                ControlOptions options = {});
  ~ControlClient() override;
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Command receive(Milliseconds timeout) override;
  void send_to_driver(const Bytes& message) override;
  Store& store() override;

 private:
  class ClientStore;

  // Connects and runs the handshake (see control_message.h). False when the driver closed
  // the connection without a reason before the Welcome (busy with strangers: try again);
  // throws for a refusal, a timeout or a peer that does not speak the protocol.
  bool try_register(const std::string& host, int port, const std::string& job_token, Deadline deadline);
  void read_loop();
  void send(FrameType type, const Bytes& payload, const char* what);
  // Throws the "driver has gone" error when the connection is down; call with mutex_ held.
  void throw_if_gone(const char* what) const;
  // A store request: sends it and waits for the reply with the same id.
  Bytes store_request(FrameType type, const Bytes& payload_after_id, Deadline deadline, const std::string& key,
                      Milliseconds timeout);

  int rank_;
  int world_size_;
  ControlOptions options_;
  std::string address_;
  std::string retry_reason_;  // why the last registration attempt ended without an answer
  Socket socket_;
  std::mutex write_mutex_;
  std::thread reader_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::deque<Command> commands_;
  uint64_t next_request_ = 1;
  std::map<uint64_t, std::optional<Bytes>> pending_;  // request id -> reply once it came
  bool gone_ = false;
  std::string why_gone_;
  std::unique_ptr<ClientStore> store_;
};

}  // namespace wick::distributed
