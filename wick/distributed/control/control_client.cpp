#include <wick/distributed/control/control_client.h>

#include <algorithm>
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

class ControlClient::Impl {
 public:
  Impl(const std::string& host, int port, int rank, int world_size, const std::string& job_token,
       ControlOptions options);
  ~Impl();
  Command receive(Milliseconds timeout);
  void send_to_driver(const Bytes& message);
  Store& store();

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

class ControlClient::Impl::ClientStore final : public Store {
 public:
  explicit ClientStore(Impl& client) : client_(client) {}

  void set(const std::string& key, const Bytes& value) override {
    PayloadWriter w;
    w.string(key).bytes(value);
    // Waiting for the acknowledgement makes set() "done" mean "visible to every rank".
    client_.store_request(FrameType::StoreSet, w.data(), deadline_after(client_.options_.send_timeout), key,
                          client_.options_.send_timeout);
  }

  Bytes get(const std::string& key, Milliseconds timeout) override {
    PayloadWriter w;
    w.string(key);
    return client_.store_request(FrameType::StoreGet, w.data(), deadline_after(timeout), key, timeout);
  }

 private:
  Impl& client_;
};

ControlClient::Impl::Impl(const std::string& host, int port, int rank, int world_size, const std::string& job_token,
                          ControlOptions options)
    : rank_(rank), world_size_(world_size), options_(options), address_(host + ":" + std::to_string(port)) {
  WICK_CHECK(world_size >= 2, "ControlClient: world size must be at least 2 for a follower, got ", world_size);
  WICK_CHECK(rank >= 1 && rank < world_size, "ControlClient: follower rank ", rank, " is out of range 1..",
             world_size - 1);
  Deadline deadline = deadline_after(options.rendezvous_timeout);
  // A driver busy with strangers may close a connection unheard: try again.
  for (int attempt = 1;; ++attempt) {
    if (try_register(host, port, job_token, deadline)) break;
    // One more attempt needs time for a connection and two round trips.
    constexpr Milliseconds kLastAttempt{250};
    const auto left = deadline - Clock::now();
    if (left <= kLastAttempt) {
      wick::detail::throw_error("ControlClient rank ", rank, ": the driver at ", address_, " closed the connection ",
                                attempt, " time(s) before registration (too many strangers connecting?), until the ",
                                "rendezvous timeout of ", options.rendezvous_timeout.count(), " ms; the last time: ",
                                retry_reason_);
    }
    // Backing off, but never past the point where one more attempt still has time.
    std::this_thread::sleep_for(std::min<Clock::duration>(Milliseconds(std::min(100 * attempt, 1000)),
                                                          left - kLastAttempt));
  }
  store_ = std::make_unique<ClientStore>(*this);
  reader_ = std::thread([this] { read_loop(); });
}

bool ControlClient::Impl::try_register(const std::string& host, int port, const std::string& job_token, Deadline deadline) {
  try {
    socket_ = connect_tcp(host, port, deadline);
  } catch (const Error& e) {
    wick::detail::throw_error("ControlClient rank ", rank_, ": cannot reach the driver at ", address_, " within ",
                              options_.rendezvous_timeout.count(), " ms (", e.what(), ")");
  }
  Hello hello;
  hello.world_size = static_cast<uint32_t>(world_size_);
  hello.rank = static_cast<uint32_t>(rank_);
  const std::vector<uint8_t> nonce = random_bytes(kNonceBytes);
  hello.nonce.assign(nonce.begin(), nonce.end());
  Bytes driver_nonce;
  std::optional<Frame> reply;
  try {
    std::optional<Frame> challenge = read_frame(socket_, deadline, "ControlClient registration");
    if (!challenge) {
      retry_reason_ = "closed before its challenge";
      return false;
    }
    if (challenge->type == FrameType::Challenge) {
      PayloadReader r(challenge->payload, "Challenge message");
      driver_nonce = r.bytes();
      r.expect_end();
      WICK_CHECK(driver_nonce.size() == kNonceBytes, "Challenge message: a nonce of ", driver_nonce.size(),
                 " bytes, expected ", kNonceBytes);
      hello.proof = hello_proof(job_token, driver_nonce, hello);
      write_frame(socket_, FrameType::Hello, encode_hello(hello), deadline, "ControlClient registration");
      reply = read_frame(socket_, deadline, "ControlClient registration");
    } else {
      reply = std::move(challenge);  // a refusal before any challenge
    }
  } catch (const Error& e) {
    // A driver flooded by strangers drops the connection it has held longest without a
    // Hello, with no reason given; that is worth another try, a timeout or garbage is not.
    retry_reason_ = e.what();
    if (Clock::now() < deadline && peer_has_hung_up(socket_)) return false;
    wick::detail::throw_error("ControlClient rank ", rank_, ": registration with the driver at ", address_,
                              " failed: ", e.what());
  }
  // Closed without a word (see above): try again.
  if (!reply) {
    retry_reason_ = "closed after the Hello, without a reason";
    return false;
  }
  if (reply->type == FrameType::Refused) {
    std::string reason;
    try {
      PayloadReader r(reply->payload, "Refused message");
      reason = r.string();
    } catch (const Error&) {
      reason = "no reason given";
    }
    wick::detail::throw_error("ControlClient rank ", rank_, ": the driver at ", address_,
                              " refused registration: ", reason);
  }
  WICK_CHECK(reply->type == FrameType::Welcome, "ControlClient rank ", rank_, ": expected Welcome from the driver at ",
             address_, ", got ", frame_type_name(reply->type));
  Bytes proof;
  try {
    PayloadReader r(reply->payload, "Welcome message");
    proof = r.bytes();
    r.expect_end();
  } catch (const Error& e) {
    wick::detail::throw_error("ControlClient rank ", rank_, ": ", e.what());
  }
  WICK_CHECK(proofs_match(proof, welcome_proof(job_token, driver_nonce, hello.nonce)), "ControlClient rank ", rank_,
             ": the driver at ", address_, " does not know this job's token (the driver of another job?)");
  return true;
}

ControlClient::Impl::~Impl() {
  socket_.shutdown_both();  // wakes the reader with end-of-file
  if (reader_.joinable()) reader_.join();
}

void ControlClient::Impl::read_loop() {
  std::string why;
  try {
    for (;;) {
      std::optional<Frame> frame = read_frame(socket_, kNoDeadline, "ControlClient");
      if (!frame) {
        why = "connection closed by the driver";
        break;
      }
      if (frame->type == FrameType::Command) {
        PayloadReader r(frame->payload, "Command message");
        Command command;
        uint8_t type = r.u8();
        WICK_CHECK(known_command_type(type), "ControlClient: unknown command type ", static_cast<int>(type));
        command.type = static_cast<CommandType>(type);
        command.payload = r.bytes();
        r.expect_end();
        {
          std::lock_guard lock(mutex_);
          commands_.push_back(std::move(command));
        }
        changed_.notify_all();
      } else if (frame->type == FrameType::StoreReply) {
        PayloadReader r(frame->payload, "StoreReply message");
        uint64_t request = r.u64();
        Bytes value = r.bytes();
        r.expect_end();
        {
          std::lock_guard lock(mutex_);
          auto it = pending_.find(request);
          if (it != pending_.end()) it->second = std::move(value);  // else: a get that timed out
        }
        changed_.notify_all();
      } else {
        why = std::string("protocol error: unexpected ") + frame_type_name(frame->type) + " message";
        break;
      }
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  {
    std::lock_guard lock(mutex_);
    gone_ = true;
    why_gone_ = why;
  }
  changed_.notify_all();
}

void ControlClient::Impl::throw_if_gone(const char* what) const {
  if (gone_) {
    wick::detail::throw_error("ControlClient rank ", rank_, " ", what, ": lost the connection to the driver at ", address_,
                        " (", why_gone_, ")");
  }
}

void ControlClient::Impl::send(FrameType type, const Bytes& payload, const char* what) {
  {
    std::lock_guard lock(mutex_);
    throw_if_gone(what);
  }
  try {
    std::lock_guard lock(write_mutex_);
    write_frame(socket_, type, payload, deadline_after(options_.send_timeout), what);
  } catch (const Error& e) {
    wick::detail::throw_error("ControlClient rank ", rank_, " ", what, ": lost the connection to the driver at ", address_,
                        " (", e.what(), ")");
  }
}

Command ControlClient::Impl::receive(Milliseconds timeout) {
  Deadline deadline = deadline_after(timeout);
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline, [&] { return !commands_.empty() || gone_; });
  if (!commands_.empty()) {
    Command command = std::move(commands_.front());
    commands_.pop_front();
    return command;
  }
  throw_if_gone("receive");
  wick::detail::throw_error("ControlClient rank ", rank_, " receive: no command from the driver at ", address_, " within ",
                      timeout.count(), " ms");
}

void ControlClient::Impl::send_to_driver(const Bytes& message) { send(FrameType::ToDriver, message, "send_to_driver"); }

Store& ControlClient::Impl::store() { return *store_; }

Bytes ControlClient::Impl::store_request(FrameType type, const Bytes& payload_after_id, Deadline deadline,
                                   const std::string& key, Milliseconds timeout) {
  const char* what = type == FrameType::StoreSet ? "Store::set" : "Store::get";
  uint64_t request;
  {
    std::lock_guard lock(mutex_);
    throw_if_gone(what);
    request = next_request_++;
    pending_.emplace(request, std::nullopt);
  }
  PayloadWriter w;
  w.u64(request);
  Bytes payload = w.take();
  payload.insert(payload.end(), payload_after_id.begin(), payload_after_id.end());
  try {
    send(type, payload, what);
  } catch (...) {
    std::lock_guard lock(mutex_);
    pending_.erase(request);
    throw;
  }
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline, [&] { return pending_.at(request).has_value() || gone_; });
  std::optional<Bytes> reply = std::move(pending_.at(request));
  pending_.erase(request);
  if (reply) return std::move(*reply);
  throw_if_gone(what);
  if (type == FrameType::StoreSet) {
    wick::detail::throw_error("ControlClient rank ", rank_, " Store::set: the driver did not acknowledge key '", key,
                        "' within ", timeout.count(), " ms");
  }
  wick::detail::throw_error("Store::get (rank ", rank_, "): key '", key, "' was not set within ", timeout.count(), " ms");
}

ControlClient::ControlClient(const std::string& host, int port, int rank, int world_size,
                             const std::string& job_token, ControlOptions options)
    : impl_(std::make_unique<Impl>(host, port, rank, world_size, job_token, options)) {}
ControlClient::~ControlClient() = default;
int ControlClient::rank() const { return impl_->rank_; }
int ControlClient::world_size() const { return impl_->world_size_; }
Command ControlClient::receive(Milliseconds timeout) { return impl_->receive(timeout); }
void ControlClient::send_to_driver(const Bytes& message) { impl_->send_to_driver(message); }
Store& ControlClient::store() { return impl_->store(); }

}  // namespace wick::distributed
