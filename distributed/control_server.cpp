#include <wick/distributed/control_server.h>

#include <sys/socket.h>

#include <algorithm>
#include <sstream>

#include <wick/distributed/hmac_sha256.h>

#include <wick/tensor/error.h>

namespace wick::distributed {

struct ControlServer::Follower {
  Socket socket;
  std::mutex write_mutex;  // one frame at a time: the driver's thread and store replies share it
  std::thread reader;
  // Guarded by ControlServer::mutex_.
  std::deque<Bytes> inbox;
  bool disconnected = false;
  std::string why;
};

// The driver's store: a map in the driver's memory. Followers' get() requests for a key not
// yet set are parked here and answered when some rank sets it.
class ControlServer::ServerStore final : public Store {
 public:
  explicit ServerStore(ControlServer& server) : server_(server) {}

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
  ControlServer& server_;
  std::mutex mutex_;
  std::condition_variable set_cv_;
  std::map<std::string, Bytes> values_;
  std::map<std::string, std::vector<std::pair<int, uint64_t>>> waiters_;
};

ControlServer::ControlServer(const std::string& host, int port, int world_size, std::string job_token,
                             ControlOptions options)
    : world_size_(world_size), job_token_(std::move(job_token)), options_(options) {
  WICK_CHECK(world_size >= 1, "ControlServer: world size must be at least 1, got ", world_size);
  listener_ = listen_tcp(host, port);
  port_ = local_port(listener_);
  address_ = (host.empty() ? std::string("0.0.0.0") : host) + ":" + std::to_string(port_);
  followers_.resize(static_cast<std::size_t>(world_size));
  store_ = std::make_unique<ServerStore>(*this);
  if (world_size == 1) {
    registered_ = true;
    listener_.close();
  }
}

ControlServer::~ControlServer() {
  stop_registrations();
  // Shutting the sockets down wakes the readers blocked on them; they see end-of-file and exit.
  for (auto& f : followers_) {
    if (f) f->socket.shutdown_both();
  }
  for (auto& f : followers_) {
    if (f && f->reader.joinable()) f->reader.join();
  }
}

std::vector<int> ControlServer::missing_ranks() const {
  std::lock_guard lock(mutex_);
  std::vector<int> missing;
  for (int r = 1; r < world_size_; ++r) {
    if (!followers_[static_cast<std::size_t>(r)]) missing.push_back(r);
  }
  return missing;
}

void ControlServer::wait_for_followers(Milliseconds timeout) {
  if (registered_) return;
  Deadline deadline = deadline_after(timeout);
  std::vector<int> missing;
  for (;;) {
    missing = missing_ranks();
    const bool expired = Clock::now() >= deadline;
    if (missing.empty() || expired) {
      // Registrations still under way are strays (or late duplicates): end them, then look
      // again, since a follower whose Welcome could not be sent gave its rank back.
      stop_registrations();
      missing = missing_ranks();
      if (missing.empty() || expired) break;
    }
    // Short slices, so that a registration completed by a handler thread is seen soon.
    std::optional<Socket> socket = accept_tcp(listener_, std::min(deadline, deadline_after(Milliseconds(50))));
    if (socket) admit(std::move(*socket), std::min(deadline, deadline_after(options_.hello_timeout)));
  }
  if (!missing.empty()) {
    std::lock_guard lock(mutex_);
    std::ostringstream os;
    os << "ControlServer at " << address_ << ": only " << (world_size_ - 1 - static_cast<int>(missing.size()))
       << " of " << (world_size_ - 1) << " followers registered within " << timeout.count()
       << " ms; missing rank" << (missing.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < missing.size(); ++i) os << (i ? ", " : "") << missing[i];
    if (!refusals_.empty()) {
      os << " (refused " << refusals_.size() << " connection" << (refusals_.size() > 1 ? "s" : "") << ": ";
      for (std::size_t i = 0; i < refusals_.size() && i < 5; ++i) os << (i ? "; " : "") << refusals_[i];
      os << ")";
    }
    throw Error(os.str());
  }
  registered_ = true;
  listener_.close();  // late strays now get "connection refused" from the kernel
}

void ControlServer::admit(Socket socket, Deadline deadline) {
  std::lock_guard lock(mutex_);
  if (registering_.size() >= options_.max_unregistered_connections) {
    // Silent sockets must not queue up ahead of the real followers: past the cap a new
    // connection is closed at once (a follower's client retries such a connection).
    note_refusal("a connection was closed unheard: " + std::to_string(registering_.size()) +
                 " others were still registering (the limit)");
    return;
  }
  registering_.insert(socket.fd());
  handlers_.emplace_back([this, s = std::move(socket), deadline]() mutable { register_connection(std::move(s), deadline); });
}

void ControlServer::stop_registrations() {
  std::vector<std::thread> handlers;
  {
    std::lock_guard lock(mutex_);
    for (int fd : registering_) ::shutdown(fd, SHUT_RDWR);  // wakes the handler blocked on it
    handlers.swap(handlers_);
  }
  for (auto& h : handlers) h.join();
}

void ControlServer::note_refusal(const std::string& reason) {
  if (refusals_.size() < 100) refusals_.push_back(reason);  // a flood of strays must not grow it forever
}

void ControlServer::register_connection(Socket socket, Deadline deadline) {
  // While listed in registering_, stop_registrations() may shut the socket down; it leaves
  // the list before it is closed or becomes a follower's.
  bool listed = true;
  auto unlist = [&] {
    if (!listed) return;
    std::lock_guard lock(mutex_);
    registering_.erase(socket.fd());
    listed = false;
  };
  auto refuse = [&](const std::string& reason) {
    {
      std::lock_guard lock(mutex_);
      note_refusal(reason);
    }
    try {
      write_frame(socket, FrameType::Refused, PayloadWriter().string(reason).take(), deadline, "ControlServer refusal");
    } catch (const Error&) {
      // The stray may already be gone; nothing more to tell it.
    }
    unlist();
  };
  int rank = -1;
  Bytes driver_nonce;
  Hello hello;
  try {
    const std::vector<uint8_t> nonce = random_bytes(kNonceBytes);
    driver_nonce.assign(nonce.begin(), nonce.end());
    write_frame(socket, FrameType::Challenge, PayloadWriter().bytes(driver_nonce).take(), deadline,
                "ControlServer challenge");
    std::optional<Frame> frame = read_frame(socket, deadline, "ControlServer registration", kMaxHelloBytes);
    if (!frame) {
      {
        std::lock_guard lock(mutex_);
        note_refusal("a connection closed before registering");
      }
      return unlist();
    }
    if (frame->type != FrameType::Hello) {
      return refuse(std::string("expected a Hello message, got ") + frame_type_name(frame->type));
    }
    hello = decode_hello(frame->payload);
    if (hello.version != kControlProtocolVersion) {
      return refuse("protocol version " + std::to_string(hello.version) + " does not match the driver's version " +
                    std::to_string(kControlProtocolVersion));
    }
    if (!proofs_match(hello.proof, hello_proof(job_token_, driver_nonce, hello)))
      return refuse("job token does not match (a process from another job?)");
    if (hello.world_size != static_cast<uint32_t>(world_size_)) {
      return refuse("world size " + std::to_string(hello.world_size) + " does not match the driver's world size " +
                    std::to_string(world_size_));
    }
    if (hello.rank < 1 || hello.rank >= static_cast<uint32_t>(world_size_)) {
      return refuse("rank " + std::to_string(hello.rank) + " is out of range 1.." + std::to_string(world_size_ - 1));
    }
    rank = static_cast<int>(hello.rank);
    // A Hello left in the backlog by a follower that gave up (timed out and closed) must
    // not take the rank from the one that retries.
    if (peer_has_hung_up(socket)) {
      {
        std::lock_guard lock(mutex_);
        note_refusal("rank " + std::to_string(rank) + "'s Hello came on a connection its sender had closed");
      }
      return unlist();
    }
  } catch (const Error& e) {
    return refuse(e.what());
  }
  Follower* f = nullptr;
  {
    // Checked and taken in one step: two connections claiming one rank cannot both get it.
    std::lock_guard lock(mutex_);
    auto& slot = followers_[static_cast<std::size_t>(rank)];
    if (!slot) {
      registering_.erase(socket.fd());
      listed = false;
      slot = std::make_unique<Follower>();
      slot->socket = std::move(socket);
      f = slot.get();
    }
  }
  if (f == nullptr) return refuse("rank " + std::to_string(rank) + " is already registered (duplicate rank)");
  try {
    write_frame(f->socket, FrameType::Welcome, PayloadWriter().bytes(welcome_proof(job_token_, driver_nonce, hello.nonce)).take(),
                deadline_after(options_.send_timeout), "ControlServer welcome");
  } catch (const Error& e) {
    std::lock_guard lock(mutex_);
    note_refusal("rank " + std::to_string(rank) + "'s Welcome could not be sent: " + e.what());
    followers_[static_cast<std::size_t>(rank)].reset();  // the rank is free for a retry
    return;
  }
  f->reader = std::thread([this, rank] { read_loop(rank); });
}

void ControlServer::read_loop(int rank) {
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

void ControlServer::mark_disconnected(int rank, const std::string& why) {
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

std::optional<std::pair<int, std::string>> ControlServer::first_disconnected() {
  std::lock_guard lock(mutex_);
  for (std::size_t r = 1; r < followers_.size(); ++r)
    if (followers_[r] && followers_[r]->disconnected) return std::make_pair(static_cast<int>(r), followers_[r]->why);
  return std::nullopt;
}

void ControlServer::send_to(int rank, FrameType type, const Bytes& payload, const char* what) {
  Follower& f = *followers_[static_cast<std::size_t>(rank)];
  std::lock_guard lock(f.write_mutex);
  write_frame(f.socket, type, payload, deadline_after(options_.send_timeout), what);
}

void ControlServer::handle_store_set(int rank, const Bytes& payload) {
  PayloadReader r(payload, "StoreSet message");
  uint64_t request = r.u64();
  std::string key = r.string();
  Bytes value = r.bytes();
  r.expect_end();
  store_->set(key, value);
  store_->reply(rank, request, {});
}

void ControlServer::handle_store_get(int rank, const Bytes& payload) {
  PayloadReader r(payload, "StoreGet message");
  uint64_t request = r.u64();
  std::string key = r.string();
  r.expect_end();
  store_->remote_get(rank, request, key);
}

void ControlServer::require_registered(const char* what) const {
  WICK_CHECK(registered_, "ControlServer::", what, ": followers have not registered yet (call wait_for_followers first)");
}

void ControlServer::broadcast(const Command& command) {
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

std::vector<Bytes> ControlServer::gather(Milliseconds timeout) {
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

Store& ControlServer::store() { return *store_; }

}  // namespace wick::distributed
