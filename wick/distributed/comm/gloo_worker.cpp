#include <wick/distributed/comm/gloo_worker.h>

#include <wick/tensor/error.h>

namespace wick::distributed::detail {

void QueuedWork::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

void QueuedWork::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
  }
  finished_.notify_all();
}

bool QueuedWork::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

namespace {
std::exception_ptr error_for(const std::string& what, const std::string& cause) {
  return std::make_exception_ptr(Error(what + ": " + cause));
}
}  // namespace

GlooWorker::GlooWorker(std::function<std::string(const std::string&)> explain)
    : explain_(std::move(explain)), thread_([this] { loop(); }) {}

GlooWorker::~GlooWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    fail_queued_locked(broken_.empty() ? "communicator destroyed" : broken_);
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<Work> GlooWorker::enqueue(std::string what, std::function<void()> run) {
  auto work = std::make_shared<QueuedWork>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!broken_.empty()) {
      work->finish(error_for(what, "communicator is unusable after an earlier failure: " + broken_));
      return work;
    }
    queue_.push_back(Item{std::move(what), std::move(run), work});
  }
  wake_.notify_one();
  return work;
}

void GlooWorker::break_with(const std::string& cause) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken_.empty()) broken_ = cause;
  if (running_) running_->finish(std::make_exception_ptr(Error(cause)));
  fail_queued_locked(broken_);
}

void GlooWorker::fail_queued_locked(const std::string& cause) {
  for (Item& item : queue_) item.work->finish(error_for(item.what, cause));
  queue_.clear();
}

void GlooWorker::loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      item = std::move(queue_.front());
      queue_.pop_front();
      if (!broken_.empty()) {
        item.work->finish(error_for(item.what, "communicator is unusable after an earlier failure: " + broken_));
        continue;
      }
      running_ = item.work;
    }
    std::exception_ptr error;
    try {
      item.run();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      std::string cause = item.what + ": " + (explain_ ? explain_(e.what()) : std::string(e.what()));
      if (broken_.empty()) broken_ = cause;
      error = std::make_exception_ptr(Error(cause));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      std::string cause = item.what + ": unknown exception";
      if (broken_.empty()) broken_ = cause;
      error = std::make_exception_ptr(Error(cause));
    }
    item.run = nullptr;  // releases the op's tensors before completion is signalled
    item.work->finish(error);
    std::lock_guard<std::mutex> lock(mutex_);
    running_.reset();
  }
}

}  // namespace wick::distributed::detail
