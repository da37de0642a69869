#pragma once
// ControlClient: a follower's (rank >= 1) end of the TCP control channel. The constructor
// connects to the driver (retrying until options.rendezvous_timeout, since the driver may
// start later) and registers; a refused registration throws wick::Error with the driver's
// reason. Afterwards a reader thread queues the driver's commands and store replies, so a
// driver that dies is noticed by the next receive()/send_to_driver()/store() call.
// Every method may be called from any thread.
#include <memory>
#include <string>

#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/control/control_options.h>

namespace wick::distributed {

class ControlClient final : public FollowerChannel {
 public:
  ControlClient(const std::string& host, int port, int rank, int world_size, const std::string& job_token,
                ControlOptions options = {});
  ~ControlClient() override;
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  int rank() const override;
  int world_size() const override;
  Command receive(Milliseconds timeout) override;
  void send_to_driver(const Bytes& message) override;
  Store& store() override;

 private:
  class Impl;  // the connection, its reader thread and the queues (control_client.cpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace wick::distributed
