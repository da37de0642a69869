#pragma once
// Timeouts of the TCP control channel (ControlServer / ControlClient).
#include <cstddef>

#include <wick/distributed/store.h>

namespace wick::distributed {

struct ControlOptions {
  // Server: how long wait_for_followers() waits by default for every follower to register.
  // Client: how long to keep trying to connect and register (the driver may start later).
  Milliseconds rendezvous_timeout{60'000};
  // How long one write may wait for a peer that does not read, and how long a store set()
  // waits for the driver's acknowledgement.
  Milliseconds send_timeout{30'000};
  // Server: how long an accepted connection has to introduce itself before it is dropped,
  // so a stray client that connects and says nothing cannot stall the rendezvous.
  Milliseconds hello_timeout{5'000};
  // Server: how many accepted connections may be registering at once; more are closed at
  // once (a follower retries), so a flood of silent sockets cannot starve the real ones.
  std::size_t max_unregistered_connections = 32;
};

}  // namespace wick::distributed
