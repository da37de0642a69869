#include <wick/distributed/control/tcp_socket.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

// Milliseconds to pass to poll(): -1 for "no deadline", 0 once it has passed.
int poll_timeout(Deadline deadline) {
  if (deadline == kNoDeadline) return -1;
  auto now = Clock::now();
  if (deadline <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
  return ms > 1'000'000 ? 1'000'000 : static_cast<int>(ms);
}

// Waits until `fd` is ready for `events`; false when the deadline passed first.
bool wait_ready(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, poll_timeout(deadline));
    if (n > 0) return true;  // errors and hang-ups surface from the following recv/send
    if (n == 0) {
      if (Clock::now() >= deadline) return false;
      continue;
    }
    if (errno == EINTR) continue;
    wick::detail::throw_error(what, ": poll failed: ", errno_text());
  }
}

struct AddressList {
  addrinfo* head = nullptr;
  ~AddressList() {
    if (head) ::freeaddrinfo(head);
  }
};

void resolve(const std::string& host, int port, bool passive, AddressList& out, const char* what) {
  addrinfo hints{};
  hints.ai_family = AF_INET;  // the control channel speaks IPv4 (MASTER_ADDR is IPv4 in practice)
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const char* node = (host.empty() || (passive && host == "0.0.0.0")) ? nullptr : host.c_str();
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(node, service.c_str(), &hints, &out.head);
  if (rc != 0 || out.head == nullptr) {
    wick::detail::throw_error(what, ": cannot resolve ", host, ":", port, ": ", ::gai_strerror(rc));
  }
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // latency matters more than packing
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.release();
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void Socket::shutdown_both() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Socket listen_tcp(const std::string& host, int port, int backlog) {
  WICK_CHECK(port >= 0 && port <= 65535, "listen_tcp: port ", port, " is out of range 0..65535");
  AddressList addresses;
  resolve(host, port, true, addresses, "listen_tcp");
  std::string last_error = "no address";
  for (addrinfo* a = addresses.head; a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) {
      last_error = errno_text();
      continue;
    }
    int one = 1;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd(), backlog) != 0) {
      last_error = errno_text();
      continue;
    }
    return s;
  }
  wick::detail::throw_error("listen_tcp: cannot listen on ", host, ":", port, ": ", last_error);
}

int local_port(const Socket& socket) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    wick::detail::throw_error("local_port: getsockname failed: ", errno_text());
  }
  return ntohs(address.sin_port);
}

std::optional<Socket> accept_tcp(const Socket& listener, Deadline deadline) {
  for (;;) {
    if (!wait_ready(listener.fd(), POLLIN, deadline, "accept_tcp")) return std::nullopt;
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      set_nodelay(fd);
      return Socket(fd);
    }
    // The connection may have gone away between poll and accept; try again.
    if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED || errno == EPROTO) continue;
    wick::detail::throw_error("accept_tcp: accept failed: ", errno_text());
  }
}

Socket connect_tcp(const std::string& host, int port, Deadline deadline) {
  WICK_CHECK(port > 0 && port <= 65535, "connect_tcp: port ", port, " is out of range 1..65535");
  std::string last_error = "deadline passed before the first attempt";
  auto backoff = std::chrono::milliseconds(10);
  for (;;) {
    AddressList addresses;
    resolve(host, port, false, addresses, "connect_tcp");
    for (addrinfo* a = addresses.head; a != nullptr; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (!s.valid()) {
        last_error = errno_text();
        continue;
      }
      int rc = ::connect(s.fd(), a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        if (!wait_ready(s.fd(), POLLOUT, deadline, "connect_tcp")) {
          last_error = "connection attempt timed out";
          continue;
        }
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0) {
        int flags = ::fcntl(s.fd(), F_GETFL);
        ::fcntl(s.fd(), F_SETFL, flags & ~O_NONBLOCK);
        set_nodelay(s.fd());
        return s;
      }
      last_error = errno_text();
    }
    auto now = Clock::now();
    if (now >= deadline) break;
    auto pause = std::min<Clock::duration>(backoff, deadline - now);
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  wick::detail::throw_error("connect_tcp: cannot connect to ", host, ":", port, " before the deadline: ", last_error);
}

void send_all(const Socket& socket, const void* data, std::size_t size, Deadline deadline, const char* what) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::send(socket.fd(), p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_ready(socket.fd(), POLLOUT, deadline, what)) {
        wick::detail::throw_error(what, ": send timed out (peer not reading)");
      }
      continue;
    }
    wick::detail::throw_error(what, ": send failed: ", errno_text());
  }
}

ReceiveResult receive_exact(const Socket& socket, void* data, std::size_t size, Deadline deadline, const char* what) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < size) {
    if (!wait_ready(socket.fd(), POLLIN, deadline, what)) {
      wick::detail::throw_error(what, ": receive timed out after ", got, " of ", size, " bytes");
    }
    ssize_t n = ::recv(socket.fd(), p + got, size - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) {
      if (got == 0) return ReceiveResult::ClosedBeforeAnyByte;
      wick::detail::throw_error(what, ": connection closed after ", got, " of ", size, " bytes (truncated message)");
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    if (errno == ECONNRESET && got == 0) return ReceiveResult::ClosedBeforeAnyByte;
    wick::detail::throw_error(what, ": receive failed: ", errno_text());
  }
  return ReceiveResult::Complete;
}

bool peer_has_hung_up(const Socket& socket) {
  pollfd p{socket.fd(), POLLRDHUP, 0};
  int n;
  do {
    n = ::poll(&p, 1, 0);
  } while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

int find_free_port(const std::string& host) {
  Socket s = listen_tcp(host, 0, 1);
  return local_port(s);
}

}  // namespace wick::distributed
