#include <wick/distributed/control/control_server.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <sstream>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <wick/distributed/control/control_message.h>
#include <wick/distributed/control/hmac_sha256.h>
#include <wick/distributed/control/tcp_socket.h>

#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

// How many connections one turn of the loop takes from the listener before it reads the
// Hellos that have come: a flood of new connections cannot starve the answers.
constexpr int kAcceptBatch = 64;

// Writes a whole frame now or not at all: a connection that is not registered is never
// waited for (a fresh socket's send buffer takes these few dozen bytes at once).
bool send_now(const Socket& socket, FrameType type, const Bytes& payload) {
  try {
    write_frame(socket, type, payload, Clock::now(), "ControlServer registration");
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::size_t open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return static_cast<std::size_t>(limit.rlim_cur);
}

}  // namespace

class ControlServer::Impl {
 public:
  Impl(const std::string& host, int port, int world_size, std::string job_token, ControlOptions options);
  ~Impl();
  void wait_for_followers(Milliseconds timeout);
  void broadcast(const Command& command);
  std::vector<Bytes> gather(Milliseconds timeout);
  Store& store();
  RendezvousStats rendezvous_stats() const;

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

struct ControlServer::Impl::Follower {
  Socket socket;
  std::mutex write_mutex;  // one frame at a time: the driver's thread and store replies share it
  std::thread reader;
  // Guarded by Impl::mutex_.
  std::deque<Bytes> inbox;
  bool disconnected = false;
  std::string why;
};

// The driver's store: a map in the driver's memory. Followers' get() requests for a key not
// yet set are parked here and answered when some rank sets it.
class ControlServer::Impl::ServerStore final : public Store {
 public:
  explicit ServerStore(Impl& server) : server_(server) {}

  void set(const std::string& key, const Bytes& value) override {
    std::vector<std::pair<int, uint64_t>> waiting;
    {
      std::lock_guard lock(mutex_);
      values_[key] = value;
      auto it = waiters_.find(key);
      if (it != waiters_.end()) {
        waiting = std::move(it->second);
        waiters_.erase(it);
      }
    }
    set_cv_.notify_all();
    for (auto [rank, request] : waiting) reply(rank, request, value);
  }

  Bytes get(const std::string& key, Milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    auto deadline = deadline_after(timeout);
    // A follower that is gone will never set its keys: fail now, naming it, rather than at
    // the deadline.
    std::optional<std::pair<int, std::string>> lost;
    bool found = set_cv_.wait_until(lock, deadline, [&] {
      if (values_.count(key) > 0) return true;
      lost = server_.first_disconnected();
      return lost.has_value();
    });
    if (found && values_.count(key) == 0)
      throw Error("Store::get (driver): rank " + std::to_string(lost->first) + " disconnected (" + lost->second +
                  ") while waiting for key '" + key + "'");
    WICK_CHECK(found, "Store::get (driver): key '", key, "' was not set within ", timeout.count(), " ms");
    return values_.at(key);
  }

  // Wakes the waiting get()s to look at the followers again.
  void follower_lost() {
    { std::lock_guard lock(mutex_); }
    set_cv_.notify_all();
  }

  // A follower's get: answered now, or parked until the key is set.
  void remote_get(int rank, uint64_t request, const std::string& key) {
    Bytes value;
    {
      std::lock_guard lock(mutex_);
      auto it = values_.find(key);
      if (it == values_.end()) {
        waiters_[key].emplace_back(rank, request);
        return;
      }
      value = it->second;
    }
    reply(rank, request, value);
  }

  void reply(int rank, uint64_t request, const Bytes& value) {
    PayloadWriter w;
    w.u64(request).bytes(value);
    try {
      server_.send_to(rank, FrameType::StoreReply, w.data(), "ControlServer store reply");
    } catch (const Error&) {
      // That follower is gone; its own connection's reader reports it.
    }
  }

 private:
  Impl& server_;
  std::mutex mutex_;
  std::condition_variable set_cv_;
  std::map<std::string, Bytes> values_;
  std::map<std::string, std::vector<std::pair<int, uint64_t>>> waiters_;
};

ControlServer::Impl::Impl(const std::string& host, int port, int world_size, std::string job_token,
                             ControlOptions options)
    : world_size_(world_size), job_token_(std::move(job_token)), options_(options) {
  WICK_CHECK(world_size >= 1, "ControlServer: world size must be at least 1, got ", world_size);
  // A deep accept queue: a burst of strangers should not push the followers' connections
  // out of it before the loop drains it.
  listener_ = listen_tcp(host, port, 1024);
  port_ = local_port(listener_);
  ::fcntl(listener_.fd(), F_SETFL, ::fcntl(listener_.fd(), F_GETFL) | O_NONBLOCK);
  connection_cap_ = std::max<std::size_t>(1, std::min(options_.max_unregistered_connections, open_file_limit() / 2));
  address_ = (host.empty() ? std::string("0.0.0.0") : host) + ":" + std::to_string(port_);
  followers_.resize(static_cast<std::size_t>(world_size));
  store_ = std::make_unique<ServerStore>(*this);
  if (world_size == 1) {
    registered_ = true;
    listener_.close();
  }
}

ControlServer::Impl::~Impl() {
  // Shutting the sockets down wakes the readers blocked on them; they see end-of-file and exit.
  for (auto& f : followers_) {
    if (f) f->socket.shutdown_both();
  }
  for (auto& f : followers_) {
    if (f && f->reader.joinable()) f->reader.join();
  }
}

std::vector<int> ControlServer::Impl::missing_ranks() const {
  std::lock_guard lock(mutex_);
  std::vector<int> missing;
  for (int r = 1; r < world_size_; ++r) {
    if (!followers_[static_cast<std::size_t>(r)]) missing.push_back(r);
  }
  return missing;
}

// An accepted connection that has not registered: its challenge nonce and the Hello as far
// as it has arrived (at most kMaxHelloBytes), nothing else.
struct ControlServer::Impl::Pending {
  Socket socket;
  Deadline deadline;
  Bytes nonce;
  char header[kFrameHeaderBytes] = {};
  std::size_t header_got = 0;
  FrameHeader frame;
  Bytes payload;  // grows as the bytes arrive, up to frame.length
  bool done = false;
};

ControlServer::RendezvousStats ControlServer::Impl::rendezvous_stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void ControlServer::Impl::wait_for_followers(Milliseconds timeout) {
  if (registered_) return;
  const Deadline deadline = deadline_after(timeout);
  std::deque<Pending> pending;  // oldest first
  std::vector<pollfd> fds;
  Deadline listen_again{};  // after running out of descriptors with nothing left to drop
  std::vector<int> missing;
  for (;;) {
    missing = missing_ranks();
    const Deadline now = Clock::now();
    if (missing.empty() || now >= deadline) break;
    for (Pending& p : pending) {
      if (!p.done && now >= p.deadline) {
        refuse(p, "no whole Hello within " + std::to_string(options_.hello_timeout.count()) + " ms (received " +
                      std::to_string(p.header_got + p.payload.size()) + " bytes)", &RendezvousStats::expired);
      }
    }
    std::erase_if(pending, [](const Pending& p) { return p.done; });

    Deadline wake = deadline;
    fds.clear();
    const bool listening = now >= listen_again;
    fds.push_back({listener_.fd(), static_cast<short>(listening ? POLLIN : 0), 0});
    if (!listening) wake = std::min(wake, listen_again);
    for (const Pending& p : pending) {
      fds.push_back({p.socket.fd(), POLLIN, 0});
      wake = std::min(wake, p.deadline);
    }
    const auto wait_ms = std::chrono::duration_cast<Milliseconds>(wake - now).count() + 1;
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait_ms, 0, 1000)));
    if (n < 0 && errno != EINTR)
      wick::detail::throw_error("ControlServer at ", address_, ": poll failed: ", errno_text());
    if (n <= 0) continue;
    // The answers first, then the newcomers.
    for (std::size_t i = 0; i < pending.size(); ++i) {
      if (fds[i + 1].revents != 0) serve(pending[i]);
    }
    std::erase_if(pending, [](const Pending& p) { return p.done; });
    if (fds[0].revents != 0 && !accept_connections(pending)) listen_again = Clock::now() + Milliseconds(50);
  }
  pending.clear();  // strays still registering (or late duplicates) are dropped unheard
  if (!missing.empty()) {
    std::lock_guard lock(mutex_);
    std::ostringstream os;
    os << "ControlServer at " << address_ << ": only " << (world_size_ - 1 - static_cast<int>(missing.size()))
       << " of " << (world_size_ - 1) << " followers registered within " << timeout.count()
       << " ms; missing rank" << (missing.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < missing.size(); ++i) os << (i ? ", " : "") << missing[i];
    if (!refusals_.empty()) {
      os << " (refused " << refusals_.size() << (refusals_.size() >= 100 ? "+" : "") << " connection"
         << (refusals_.size() > 1 ? "s" : "") << ": ";
      for (std::size_t i = 0; i < refusals_.size() && i < 5; ++i) os << (i ? "; " : "") << refusals_[i];
      os << ")";
    }
    if (stats_.closed_early + stats_.evicted > 0)
      os << " (" << stats_.closed_early << " connection(s) closed by the peer before a Hello, " << stats_.evicted
         << " dropped unheard to make room: more than " << connection_cap_ << " were registering at once)";
    throw Error(os.str());
  }
  registered_ = true;
  listener_.close();  // late strays now get "connection refused" from the kernel
}

bool ControlServer::Impl::accept_connections(std::deque<Pending>& pending) {
  for (int k = 0; k < kAcceptBatch; ++k) {
    const int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: a silent stranger gives way, else the caller waits a little.
        auto oldest = std::find_if(pending.begin(), pending.end(), [](const Pending& p) { return !p.done; });
        if (oldest == pending.end()) return false;
        oldest->socket.close();
        oldest->done = true;
        std::lock_guard lock(mutex_);
        ++stats_.evicted;
        continue;
      }
      wick::detail::throw_error("ControlServer at ", address_, ": accept failed: ", errno_text());
    }
    Socket socket(fd);
    std::size_t live = 0;
    for (const Pending& p : pending) live += !p.done;
    if (live >= connection_cap_) {
      // The oldest has had the longest to say who it is; a follower answers its challenge
      // within a round trip, so it is a stray. Dropping the newcomer instead would let a
      // few silent sockets that reconnect at once keep every follower out.
      auto oldest = std::find_if(pending.begin(), pending.end(), [](const Pending& p) { return !p.done; });
      oldest->socket.close();
      oldest->done = true;
      --live;
      std::lock_guard lock(mutex_);
      ++stats_.evicted;
    }
    Pending p;
    p.socket = std::move(socket);
    p.deadline = deadline_after(options_.hello_timeout);
    const std::vector<uint8_t> nonce = random_bytes(kNonceBytes);
    p.nonce.assign(nonce.begin(), nonce.end());
    {
      std::lock_guard lock(mutex_);
      ++stats_.accepted;
      stats_.peak_pending = std::max(stats_.peak_pending, live + 1);
    }
    if (!send_now(p.socket, FrameType::Challenge, PayloadWriter().bytes(p.nonce).take())) {
      std::lock_guard lock(mutex_);
      ++stats_.closed_early;
      continue;  // already gone
    }
    pending.push_back(std::move(p));
  }
  return true;
}

void ControlServer::Impl::note_refusal(const std::string& reason) {
  if (refusals_.size() < 100) refusals_.push_back(reason);  // a flood of strays must not grow it forever
}

void ControlServer::Impl::refuse(Pending& p, const std::string& reason, uint64_t RendezvousStats::*counter) {
  {
    std::lock_guard lock(mutex_);
    note_refusal(reason);
    ++(stats_.*counter);
  }
  send_now(p.socket, FrameType::Refused, PayloadWriter().string(reason).take());  // the stray may be gone
  p.socket.close();
  p.done = true;
}

void ControlServer::Impl::serve(Pending& p) {
  const char* what = "ControlServer registration";
  auto closed = [&](const char* how) {
    const std::size_t got = p.header_got + p.payload.size();
    if (got == 0) {
      std::lock_guard lock(mutex_);
      ++stats_.closed_early;
      p.socket.close();
      p.done = true;
      return;
    }
    std::ostringstream os;
    os << what << ": connection " << how << " after " << got << " of the "
       << (p.header_got < kFrameHeaderBytes ? std::string("5 header") : std::to_string(kFrameHeaderBytes + p.frame.length))
       << " bytes of a message (truncated message)";
    refuse(p, os.str());
  };
  char buffer[512];
  for (;;) {
    const bool in_header = p.header_got < kFrameHeaderBytes;
    if (!in_header && p.payload.size() == p.frame.length) break;
    char* into = in_header ? p.header + p.header_got : buffer;
    const std::size_t want = in_header ? kFrameHeaderBytes - p.header_got
                                       : std::min(sizeof buffer, p.frame.length - p.payload.size());
    const ssize_t n = ::recv(p.socket.fd(), into, want, MSG_DONTWAIT);
    if (n == 0) return closed("closed");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // the rest comes later
      if (errno == ECONNRESET) return closed("reset");
      return refuse(p, std::string(what) + ": receive failed: " + errno_text());
    }
    if (!in_header) {
      p.payload.insert(p.payload.end(), buffer, buffer + n);
      continue;
    }
    p.header_got += static_cast<std::size_t>(n);
    if (p.header_got < kFrameHeaderBytes) continue;
    try {
      p.frame = parse_frame_header(p.header, kMaxHelloBytes, what);
    } catch (const Error& e) {
      return refuse(p, e.what());
    }
  }
  handle_hello(p);
}

void ControlServer::Impl::handle_hello(Pending& p) {
  if (p.frame.type != FrameType::Hello)
    return refuse(p, std::string("expected a Hello message, got ") + frame_type_name(p.frame.type));
  Hello hello;
  try {
    hello = decode_hello(p.payload);
  } catch (const Error& e) {
    return refuse(p, e.what());
  }
  if (hello.version != kControlProtocolVersion) {
    return refuse(p, "protocol version " + std::to_string(hello.version) + " does not match the driver's version " +
                         std::to_string(kControlProtocolVersion));
  }
  if (!proofs_match(hello.proof, hello_proof(job_token_, p.nonce, hello)))
    return refuse(p, "job token does not match (a process from another job?)");
  if (hello.world_size != static_cast<uint32_t>(world_size_)) {
    return refuse(p, "world size " + std::to_string(hello.world_size) + " does not match the driver's world size " +
                         std::to_string(world_size_));
  }
  if (hello.rank < 1 || hello.rank >= static_cast<uint32_t>(world_size_))
    return refuse(p, "rank " + std::to_string(hello.rank) + " is out of range 1.." + std::to_string(world_size_ - 1));
  const int rank = static_cast<int>(hello.rank);
  // A Hello left in the backlog by a follower that gave up (timed out and closed) must not
  // take the rank from the one that retries.
  if (peer_has_hung_up(p.socket)) {
    std::lock_guard lock(mutex_);
    note_refusal("rank " + std::to_string(rank) + "'s Hello came on a connection its sender had closed");
    ++stats_.closed_early;
    p.socket.close();
    p.done = true;
    return;
  }
  Follower* f = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& slot = followers_[static_cast<std::size_t>(rank)];
    if (!slot) {
      slot = std::make_unique<Follower>();
      slot->socket = std::move(p.socket);
      f = slot.get();
    }
  }
  if (f == nullptr) return refuse(p, "rank " + std::to_string(rank) + " is already registered (duplicate rank)");
  p.done = true;
  // From here the connection is a follower's: blocking I/O on its own reader thread.
  const int fd = f->socket.fd();
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  try {
    write_frame(f->socket, FrameType::Welcome, PayloadWriter().bytes(welcome_proof(job_token_, p.nonce, hello.nonce)).take(),
                deadline_after(options_.send_timeout), "ControlServer welcome");
  } catch (const Error& e) {
    std::lock_guard lock(mutex_);
    note_refusal("rank " + std::to_string(rank) + "'s Welcome could not be sent: " + e.what());
    followers_[static_cast<std::size_t>(rank)].reset();  // the rank is free for a retry
    return;
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_.registered;
  }
  f->reader = std::thread([this, rank] { read_loop(rank); });
}

void ControlServer::Impl::read_loop(int rank) {
  Follower& f = *followers_[static_cast<std::size_t>(rank)];
  try {
    for (;;) {
      std::optional<Frame> frame = read_frame(f.socket, kNoDeadline, "ControlServer");
      if (!frame) return mark_disconnected(rank, "connection closed by the follower");
      switch (frame->type) {
        case FrameType::ToDriver: {
          {
            std::lock_guard lock(mutex_);
            f.inbox.push_back(std::move(frame->payload));
          }
          changed_.notify_all();
          break;
        }
        case FrameType::StoreSet: handle_store_set(rank, frame->payload); break;
        case FrameType::StoreGet: handle_store_get(rank, frame->payload); break;
        default:
          return mark_disconnected(rank, std::string("protocol error: unexpected ") + frame_type_name(frame->type) +
                                             " message");
      }
    }
  } catch (const std::exception& e) {
    mark_disconnected(rank, e.what());
  }
}

void ControlServer::Impl::mark_disconnected(int rank, const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    Follower& f = *followers_[static_cast<std::size_t>(rank)];
    if (!f.disconnected) {
      f.disconnected = true;
      f.why = why;
    }
  }
  changed_.notify_all();
  store_->follower_lost();
}

std::optional<std::pair<int, std::string>> ControlServer::Impl::first_disconnected() {
  std::lock_guard lock(mutex_);
  for (std::size_t r = 1; r < followers_.size(); ++r)
    if (followers_[r] && followers_[r]->disconnected) return std::make_pair(static_cast<int>(r), followers_[r]->why);
  return std::nullopt;
}

void ControlServer::Impl::send_to(int rank, FrameType type, const Bytes& payload, const char* what) {
  Follower& f = *followers_[static_cast<std::size_t>(rank)];
  std::lock_guard lock(f.write_mutex);
  write_frame(f.socket, type, payload, deadline_after(options_.send_timeout), what);
}

void ControlServer::Impl::handle_store_set(int rank, const Bytes& payload) {
  PayloadReader r(payload, "StoreSet message");
  uint64_t request = r.u64();
  std::string key = r.string();
  Bytes value = r.bytes();
  r.expect_end();
  store_->set(key, value);
  store_->reply(rank, request, {});
}

void ControlServer::Impl::handle_store_get(int rank, const Bytes& payload) {
  PayloadReader r(payload, "StoreGet message");
  uint64_t request = r.u64();
  std::string key = r.string();
  r.expect_end();
  store_->remote_get(rank, request, key);
}

void ControlServer::Impl::require_registered(const char* what) const {
  WICK_CHECK(registered_, "ControlServer::", what, ": followers have not registered yet (call wait_for_followers first)");
}

void ControlServer::Impl::broadcast(const Command& command) {
  require_registered("broadcast");
  PayloadWriter w;
  w.u8(static_cast<uint8_t>(command.type)).bytes(command.payload);
  std::vector<std::string> failures;
  for (int r = 1; r < world_size_; ++r) {
    Follower& f = *followers_[static_cast<std::size_t>(r)];
    std::string why;
    {
      std::lock_guard lock(mutex_);
      if (f.disconnected) why = f.why;
    }
    // The reader may not have noticed yet that a killed follower's socket closed.
    if (why.empty() && peer_has_hung_up(f.socket)) why = "connection closed by the follower";
    if (why.empty()) {
      try {
        send_to(r, FrameType::Command, w.data(), "ControlServer::broadcast");
      } catch (const Error& e) {
        why = e.what();
      }
    }
    if (!why.empty()) failures.push_back("rank " + std::to_string(r) + " disconnected (" + why + ")");
  }
  if (!failures.empty()) {
    std::ostringstream os;
    os << "ControlServer::broadcast(" << command_type_name(command.type) << "): follower ";
    for (std::size_t i = 0; i < failures.size(); ++i) os << (i ? "; " : "") << failures[i];
    throw Error(os.str());
  }
}

std::vector<Bytes> ControlServer::Impl::gather(Milliseconds timeout) {
  require_registered("gather");
  Deadline deadline = deadline_after(timeout);
  std::unique_lock lock(mutex_);
  auto settled = [&] {
    for (int r = 1; r < world_size_; ++r) {
      const Follower& f = *followers_[static_cast<std::size_t>(r)];
      if (f.inbox.empty() && !f.disconnected) return false;
    }
    return true;
  };
  changed_.wait_until(lock, deadline, settled);
  std::vector<std::string> failures;
  for (int r = 1; r < world_size_; ++r) {
    const Follower& f = *followers_[static_cast<std::size_t>(r)];
    if (!f.inbox.empty()) continue;
    if (f.disconnected) {
      failures.push_back("rank " + std::to_string(r) + " disconnected (" + f.why + ")");
    } else {
      failures.push_back("rank " + std::to_string(r) + " sent nothing within " + std::to_string(timeout.count()) +
                         " ms");
    }
  }
  if (!failures.empty()) {
    std::ostringstream os;
    os << "ControlServer::gather: follower ";
    for (std::size_t i = 0; i < failures.size(); ++i) os << (i ? "; " : "") << failures[i];
    throw Error(os.str());
  }
  std::vector<Bytes> messages(static_cast<std::size_t>(world_size_));
  for (int r = 1; r < world_size_; ++r) {
    Follower& f = *followers_[static_cast<std::size_t>(r)];
    messages[static_cast<std::size_t>(r)] = std::move(f.inbox.front());
    f.inbox.pop_front();
  }
  return messages;
}

Store& ControlServer::Impl::store() { return *store_; }

ControlServer::ControlServer(const std::string& host, int port, int world_size, std::string job_token,
                             ControlOptions options)
    : impl_(std::make_unique<Impl>(host, port, world_size, std::move(job_token), options)) {}
ControlServer::~ControlServer() = default;
int ControlServer::port() const { return impl_->port_; }
int ControlServer::world_size() const { return impl_->world_size_; }
void ControlServer::wait_for_followers(Milliseconds timeout) { impl_->wait_for_followers(timeout); }
void ControlServer::wait_for_followers() { impl_->wait_for_followers(impl_->options_.rendezvous_timeout); }
void ControlServer::broadcast(const Command& command) { impl_->broadcast(command); }
std::vector<Bytes> ControlServer::gather(Milliseconds timeout) { return impl_->gather(timeout); }
Store& ControlServer::store() { return impl_->store(); }
ControlServer::RendezvousStats ControlServer::rendezvous_stats() const { return impl_->rendezvous_stats(); }
std::size_t ControlServer::connection_cap() const { return impl_->connection_cap_; }

}  // namespace wick::distributed
