#pragma once
// Small, checked TCP helpers for the control channel and wickrun: an owning socket handle,
// listen/accept/connect with deadlines, and exact send/receive that survive EINTR, never
// raise SIGPIPE (MSG_NOSIGNAL) and never block past the caller's deadline.
#include <cstddef>
#include <optional>
#include <string>

#include <wick/distributed/comm/deadline.h>

namespace wick::distributed {

// An owned file descriptor; closes on destruction. Move-only.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void close();
  // Wakes any thread blocked reading or writing this socket (they see end-of-file / EPIPE)
  // without closing the descriptor, so the fd number cannot be reused under their feet.
  void shutdown_both();

 private:
  int fd_ = -1;
};

// Binds and listens on host:port (port 0 picks a free port; host "" or "0.0.0.0" = all
// IPv4 interfaces). Throws wick::Error naming the address on failure.
Socket listen_tcp(const std::string& host, int port, int backlog = 128);

// The local port a bound socket got.
int local_port(const Socket& socket);

// Accepts one connection, or returns nullopt once `deadline` passes.
std::optional<Socket> accept_tcp(const Socket& listener, Deadline deadline);

// Connects to host:port, retrying refused/unreachable attempts with a short back-off until
// `deadline` (the peer may start later). Throws wick::Error with the last reason when the
// deadline passes.
Socket connect_tcp(const std::string& host, int port, Deadline deadline);

// Sends all `size` bytes or throws wick::Error (peer gone, deadline passed). `what` names
// the caller in messages.
void send_all(const Socket& socket, const void* data, std::size_t size, Deadline deadline, const char* what);

enum class ReceiveResult { Complete, ClosedBeforeAnyByte };

// Receives exactly `size` bytes. A peer that closes before the first byte gives
// ClosedBeforeAnyByte (a clean end of stream); one that closes part-way, an I/O error or
// the deadline passing throw wick::Error.
ReceiveResult receive_exact(const Socket& socket, void* data, std::size_t size, Deadline deadline, const char* what);

// True when the peer has closed or reset the connection (checked without reading).
bool peer_has_hung_up(const Socket& socket);

// A port that was free a moment ago on `host` (bind to port 0, read it, close).
int find_free_port(const std::string& host = "127.0.0.1");

}  // namespace wick::distributed
