#pragma once
// Timeouts of the TCP control channel (ControlServer / ControlClient).
#include <cstddef>

#include <wick/distributed/comm/store.h>
#include <wick/distributed/control/environment_timeouts.h>

namespace wick::distributed {

struct ControlOptions {
  // Server: how long wait_for_followers() waits by default for every follower to register.
  // Client: how long to keep trying to connect and register (the driver may start later).
  // Default: WICK_RENDEZVOUS_TIMEOUT when set, else 60 s (environment_timeouts.h).
  Milliseconds rendezvous_timeout = timeout_from_environment("WICK_RENDEZVOUS_TIMEOUT", kDefaultRendezvousTimeout);
  // How long one write may wait for a peer that does not read, and how long a store set()
  // waits for the driver's acknowledgement.
  Milliseconds send_timeout{30'000};
  // Server: how long an accepted connection has to send its whole Hello before it is
  // dropped, so a stray client that connects and says nothing holds nothing for long.
  Milliseconds hello_timeout{5'000};
  // Server: how many accepted connections may be registering at once (each costs a
  // descriptor and a few hundred bytes, no thread); at most half the process's open-file
  // limit. A new connection past it makes the oldest one, which has had the longest to say
  // who it is, give way: a follower answers its challenge within a round trip, so silent
  // sockets cannot hold it out however many reconnect (and it retries if dropped).
  std::size_t max_unregistered_connections = 1024;
};

}  // namespace wick::distributed
