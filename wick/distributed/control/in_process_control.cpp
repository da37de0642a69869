#include <wick/distributed/control/in_process_control.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <sstream>
#include <vector>

#include <wick/distributed/comm/in_process_store.h>
#include <wick/distributed/control/tcp_socket.h>
#include <wick/tensor/error.h>

namespace wick::distributed {

struct InProcessControl::State {
  struct FollowerSlot {
    bool taken = false;
    bool gone = false;            // its endpoint was destroyed
    std::deque<Command> commands;  // driver -> follower
    std::deque<Bytes> inbox;       // follower -> driver
  };

  explicit State(int world) : world_size(world), followers(static_cast<std::size_t>(world)) {}

  const int world_size;
  std::mutex mutex;
  std::condition_variable changed;
  bool driver_taken = false;
  bool driver_gone = false;
  std::vector<FollowerSlot> followers;  // index = rank; [0] unused
  InProcessStore store;
};

namespace {

using State = InProcessControl::State;

class InProcessDriver final : public DriverChannel {
 public:
  explicit InProcessDriver(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~InProcessDriver() override {
    {
      std::lock_guard lock(state_->mutex);
      state_->driver_gone = true;
    }
    state_->changed.notify_all();
  }

  int world_size() const override { return state_->world_size; }

  void broadcast(const Command& command) override {
    std::vector<int> gone;
    {
      std::lock_guard lock(state_->mutex);
      for (int r = 1; r < state_->world_size; ++r) {
        auto& slot = state_->followers[static_cast<std::size_t>(r)];
        if (slot.gone) {
          gone.push_back(r);
        } else {
          slot.commands.push_back(command);
        }
      }
    }
    state_->changed.notify_all();
    if (!gone.empty()) {
      std::ostringstream os;
      os << "InProcessControl broadcast(" << command_type_name(command.type) << "): follower ";
      for (std::size_t i = 0; i < gone.size(); ++i) {
        os << (i ? "; " : "") << "rank " << gone[i] << " disconnected (its endpoint was destroyed)";
      }
      throw Error(os.str());
    }
  }

  std::vector<Bytes> gather(Milliseconds timeout) override {
    std::unique_lock lock(state_->mutex);
    auto& followers = state_->followers;
    state_->changed.wait_until(lock, deadline_after(timeout), [&] {
      for (std::size_t r = 1; r < followers.size(); ++r) {
        if (followers[r].inbox.empty() && !followers[r].gone) return false;
      }
      return true;
    });
    std::vector<std::string> failures;
    for (std::size_t r = 1; r < followers.size(); ++r) {
      if (!followers[r].inbox.empty()) continue;
      failures.push_back("rank " + std::to_string(r) +
                         (followers[r].gone ? std::string(" disconnected (its endpoint was destroyed)")
                                            : " sent nothing within " + std::to_string(timeout.count()) + " ms"));
    }
    if (!failures.empty()) {
      std::ostringstream os;
      os << "InProcessControl gather: follower ";
      for (std::size_t i = 0; i < failures.size(); ++i) os << (i ? "; " : "") << failures[i];
      throw Error(os.str());
    }
    std::vector<Bytes> messages(followers.size());
    for (std::size_t r = 1; r < followers.size(); ++r) {
      messages[r] = std::move(followers[r].inbox.front());
      followers[r].inbox.pop_front();
    }
    return messages;
  }

  Store& store() override { return state_->store; }

 private:
  std::shared_ptr<State> state_;
};

class InProcessFollower final : public FollowerChannel {
 public:
  InProcessFollower(std::shared_ptr<State> state, int rank) : state_(std::move(state)), rank_(rank) {}
  ~InProcessFollower() override {
    {
      std::lock_guard lock(state_->mutex);
      slot().gone = true;
    }
    state_->changed.notify_all();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return state_->world_size; }

  Command receive(Milliseconds timeout) override {
    std::unique_lock lock(state_->mutex);
    auto& commands = slot().commands;
    state_->changed.wait_until(lock, deadline_after(timeout),
                               [&] { return !commands.empty() || state_->driver_gone; });
    if (!commands.empty()) {
      Command command = std::move(commands.front());
      commands.pop_front();
      return command;
    }
    WICK_CHECK(!state_->driver_gone, "InProcessControl rank ", rank_,
               " receive: the driver has gone (its endpoint was destroyed)");
    wick::detail::throw_error("InProcessControl rank ", rank_, " receive: no command from the driver within ",
                        timeout.count(), " ms");
  }

  void send_to_driver(const Bytes& message) override {
    {
      std::lock_guard lock(state_->mutex);
      WICK_CHECK(!state_->driver_gone, "InProcessControl rank ", rank_,
                 " send_to_driver: the driver has gone (its endpoint was destroyed)");
      slot().inbox.push_back(message);
    }
    state_->changed.notify_all();
  }

  Store& store() override { return state_->store; }

 private:
  State::FollowerSlot& slot() { return state_->followers[static_cast<std::size_t>(rank_)]; }

  std::shared_ptr<State> state_;
  int rank_;
};

}  // namespace

InProcessControl::InProcessControl(int world_size) {
  WICK_CHECK(world_size >= 1, "InProcessControl: world size must be at least 1, got ", world_size);
  state_ = std::make_shared<State>(world_size);
}

InProcessControl::~InProcessControl() = default;

int InProcessControl::world_size() const { return state_->world_size; }

std::unique_ptr<DriverChannel> InProcessControl::driver() {
  std::lock_guard lock(state_->mutex);
  WICK_CHECK(!state_->driver_taken, "InProcessControl::driver: the driver endpoint was already taken");
  state_->driver_taken = true;
  return std::make_unique<InProcessDriver>(state_);
}

std::unique_ptr<FollowerChannel> InProcessControl::follower(int rank) {
  std::lock_guard lock(state_->mutex);
  WICK_CHECK(rank >= 1 && rank < state_->world_size, "InProcessControl::follower: rank ", rank,
             " is out of range 1..", state_->world_size - 1);
  auto& slot = state_->followers[static_cast<std::size_t>(rank)];
  WICK_CHECK(!slot.taken, "InProcessControl::follower: rank ", rank, " was already taken (duplicate rank)");
  slot.taken = true;
  return std::make_unique<InProcessFollower>(state_, rank);
}

InProcessControl::Endpoint InProcessControl::endpoint(int rank) {
  Endpoint out;
  if (rank == 0)
    out.driver = driver();
  else
    out.follower = follower(rank);
  return out;
}

Store& InProcessControl::store() { return state_->store; }

}  // namespace wick::distributed
