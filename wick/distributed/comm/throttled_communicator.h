#pragma once
// ThrottledCommunicator: forwards to another communicator and makes every operation take at
// least as long as it would over a slow link: a fixed latency plus the payload over a
// bandwidth, operations sharing the link one after another. The delay is served when the
// operation is waited for, from the time it was issued, so work done meanwhile overlaps it
// as it would overlap a real transfer. For benchmarks of schemes meant for slow networks
// (DASO) on one machine.
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include <wick/distributed/comm/communicator.h>

namespace wick::distributed {

class ThrottledCommunicator final : public Communicator {
 public:
  using Clock = std::chrono::steady_clock;
  ThrottledCommunicator(std::unique_ptr<Communicator> inner, std::chrono::microseconds latency,
                        double bytes_per_second)
      : inner_(std::move(inner)), latency_(latency), bytes_per_second_(bytes_per_second) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Device device() const override { return inner_->device(); }
  std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp op) override {
    const int64_t n = bytes(tensors);
    return delayed(inner_->all_reduce(std::move(tensors), op), n);
  }
  std::shared_ptr<Work> broadcast(std::vector<Tensor> tensors, int root) override {
    const int64_t n = bytes(tensors);
    return delayed(inner_->broadcast(std::move(tensors), root), n);
  }
  std::shared_ptr<Work> reduce(std::vector<Tensor> tensors, int root, ReduceOp op) override {
    const int64_t n = bytes(tensors);
    return delayed(inner_->reduce(std::move(tensors), root, op), n);
  }
  std::shared_ptr<Work> all_gather(const Tensor& input, Tensor output) override {
    return delayed(inner_->all_gather(input, std::move(output)), bytes({input}) * std::max(size() - 1, 1));
  }
  std::shared_ptr<Work> reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override {
    return delayed(inner_->reduce_scatter(input, std::move(output), op), bytes({input}));
  }
  std::shared_ptr<Work> send(const Tensor& tensor, int peer) override {
    return delayed(inner_->send(tensor, peer), bytes({tensor}));
  }
  std::shared_ptr<Work> recv(Tensor tensor, int peer) override {
    const int64_t n = bytes({tensor});
    return delayed(inner_->recv(std::move(tensor), peer), n);
  }
  std::shared_ptr<Work> send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor,
                                  int recv_peer) override {
    return delayed(inner_->send_recv(send_tensor, send_peer, std::move(recv_tensor), recv_peer), bytes({send_tensor}));
  }
  void barrier() override {
    delayed(nullptr, 0)->wait();
    inner_->barrier();
  }
  void abort() override { inner_->abort(); }

 private:
  class DelayedWork final : public Work {
   public:
    DelayedWork(std::shared_ptr<Work> inner, Clock::time_point done) : inner_(std::move(inner)), done_(done) {}
    void wait() override {
      if (inner_) inner_->wait();
      std::this_thread::sleep_until(done_);
    }

   private:
    std::shared_ptr<Work> inner_;
    Clock::time_point done_;
  };

  static int64_t bytes(const std::vector<Tensor>& tensors) {
    int64_t n = 0;
    for (const Tensor& t : tensors) n += t.numel() * static_cast<int64_t>(element_size(t.dtype()));
    return n;
  }
  // The operation's completion time on the link: queued behind the link's earlier traffic.
  std::shared_ptr<Work> delayed(std::shared_ptr<Work> inner, int64_t payload) {
    std::lock_guard<std::mutex> lock(mutex_);
    const Clock::time_point start = std::max(Clock::now(), link_free_);
    link_free_ = start + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(static_cast<double>(payload) / bytes_per_second_));
    return std::make_shared<DelayedWork>(std::move(inner), link_free_ + latency_);
  }

  std::unique_ptr<Communicator> inner_;
  std::chrono::microseconds latency_;
  double bytes_per_second_;
  std::mutex mutex_;
  Clock::time_point link_free_{};
};

}  // namespace wick::distributed
