#pragma once
// The worker thread behind GlooCommunicator: it runs queued operations one at a time, in the
// order they were issued, so that issuing returns at once (backward keeps computing while
// a bucket is being all-reduced) and every rank runs its operations in the same order.
// The first failure breaks the queue: that op and every later one fail with the cause,
// because after a timeout the ranks no longer agree on which message belongs to which op.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <wick/distributed/comm/communicator.h>

namespace wick::distributed::detail {

// Completion state shared by the worker and the caller; finishing twice keeps the first.
class QueuedWork : public Work {
 public:
  void wait() override;
  void finish(std::exception_ptr error);
  bool done() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::exception_ptr error_;
};

class GlooWorker {
 public:
  // `explain` (optional) rewrites the text of a failed op's exception, e.g. to name the
  // rank behind a peer address in Gloo's messages.
  explicit GlooWorker(std::function<std::string(const std::string&)> explain = {});
  // Fails what is still queued ("communicator destroyed"), then joins the thread; an op that
  // is running finishes or times out first.
  ~GlooWorker();
  GlooWorker(const GlooWorker&) = delete;
  GlooWorker& operator=(const GlooWorker&) = delete;

  // Queues `run`, named `what` in errors ("GlooCommunicator::all_reduce (rank 0 of 2, ...)").
  std::shared_ptr<Work> enqueue(std::string what, std::function<void()> run);
  // Breaks the queue: the running op's work fails now (its tensors stay alive until it
  // returns), queued and later ones fail with `cause`.
  void break_with(const std::string& cause);

 private:
  struct Item {
    std::string what;
    std::function<void()> run;
    std::shared_ptr<QueuedWork> work;
  };
  void loop();
  void fail_queued_locked(const std::string& cause);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  std::shared_ptr<QueuedWork> running_;
  std::string broken_;  // empty while healthy
  bool stopping_ = false;
  std::function<std::string(const std::string&)> explain_;
  std::thread thread_;
};

}  // namespace wick::distributed::detail
