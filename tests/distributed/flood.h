#pragma once
// Token-less clients for the control channel's rendezvous, all on one thread with
// non-blocking sockets (so a few hundred of them cost the test one thread): `silent` ones
// connect and say nothing, `closers` connect and close at once, `talkers` send a bogus Hello;
// each connects again as soon as its connection ends, as the attackers did. It runs
// until stop(), `max_connections` connections or `max_time`, whichever comes first.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace wick::distributed::test {

class Flood {
 public:
  struct Mix {
    int silent = 0;
    int closers = 0;
    int talkers = 0;
  };

  Flood(int port, Mix mix, uint64_t max_connections, std::chrono::milliseconds max_time)
      : port_(port), max_connections_(max_connections), until_(std::chrono::steady_clock::now() + max_time) {
    for (int i = 0; i < mix.silent; ++i) slots_.push_back({-1, Kind::Silent, false});
    for (int i = 0; i < mix.closers; ++i) slots_.push_back({-1, Kind::Closer, false});
    for (int i = 0; i < mix.talkers; ++i) slots_.push_back({-1, Kind::Talker, false});
    thread_ = std::thread([this] { run(); });
  }
  ~Flood() { stop(); }
  Flood(const Flood&) = delete;
  Flood& operator=(const Flood&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint64_t connections() const { return connections_; }
  // Connections the driver ended (dropped or refused) while the client still held them.
  uint64_t dropped() const { return dropped_; }

 private:
  enum class Kind { Silent, Closer, Talker };
  struct Slot {
    int fd;
    Kind kind;
    bool connected;
  };

  void open(Slot& s) {
    s.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    s.connected = false;
    if (s.fd < 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
      shut(s);
      return;
    }
    ++connections_;
  }
  static void shut(Slot& s) {
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
  }

  void run() {
    std::vector<pollfd> fds;
    char buffer[256];
    // A Hello frame header announcing 20 bytes, then 20 bytes that are no Hello.
    const char bogus[25] = {20, 0, 0, 0, 1, 'n', 'o', ' ', 't', 'o', 'k', 'e', 'n', ' ', 'h', 'e', 'r', 'e', '.', '.', '.', '.', '.', '.', '.'};
    while (!stop_ && std::chrono::steady_clock::now() < until_) {
      for (Slot& s : slots_)
        if (s.fd < 0 && connections_ < max_connections_) open(s);
      fds.clear();
      for (const Slot& s : slots_) fds.push_back({s.fd, static_cast<short>(s.connected ? POLLIN : POLLOUT), 0});
      if (::poll(fds.data(), fds.size(), 10) <= 0) continue;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        const short ev = fds[i].revents;
        if (s.fd < 0 || ev == 0) continue;
        if (!s.connected) {
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
          if (err != 0 || (ev & (POLLERR | POLLHUP))) {
            shut(s);
            continue;
          }
          s.connected = true;
          if (s.kind == Kind::Closer) shut(s);
          if (s.kind == Kind::Talker && ::send(s.fd, bogus, sizeof bogus, MSG_NOSIGNAL) < 0) shut(s);
          continue;
        }
        const ssize_t n = ::recv(s.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          ++dropped_;
          shut(s);  // and connect again next turn
        }
      }
    }
    for (Slot& s : slots_) shut(s);
  }

  int port_;
  uint64_t max_connections_;
  std::chrono::steady_clock::time_point until_;
  std::vector<Slot> slots_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> dropped_{0};
  std::thread thread_;
};

}  // namespace wick::distributed::test
