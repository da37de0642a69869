#pragma once
// MeteredCommunicator: forwards every operation to another communicator and counts the
// payload bytes this rank hands it (the tensors' sizes: for all_gather the input, for
// reduce_scatter the output, for send_recv the sent tensor), so schemes can be compared by
// what they ask the network to carry. The bytes on the wire depend on the algorithm (a ring
// all-reduce sends about 2 (n-1)/n of its payload); the payload is what the scheme controls.
#include <atomic>
#include <memory>

#include <wick/distributed/comm/communicator.h>

namespace wick::distributed {

class MeteredCommunicator final : public Communicator {
 public:
  explicit MeteredCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int64_t bytes() const { return bytes_.load(); }
  int64_t operations() const { return operations_.load(); }
  Communicator& inner() { return *inner_; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Device device() const override { return inner_->device(); }
  std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp op) override {
    for (const Tensor& t : tensors) count(t);
    return inner_->all_reduce(std::move(tensors), op);
  }
  std::shared_ptr<Work> broadcast(std::vector<Tensor> tensors, int root) override {
    for (const Tensor& t : tensors) count(t);
    return inner_->broadcast(std::move(tensors), root);
  }
  std::shared_ptr<Work> reduce(std::vector<Tensor> tensors, int root, ReduceOp op) override {
    for (const Tensor& t : tensors) count(t);
    return inner_->reduce(std::move(tensors), root, op);
  }
  std::shared_ptr<Work> all_gather(const Tensor& input, Tensor output) override {
    count(input);
    return inner_->all_gather(input, std::move(output));
  }
  std::shared_ptr<Work> reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override {
    count(output);
    return inner_->reduce_scatter(input, std::move(output), op);
  }
  std::shared_ptr<Work> reduce_scatter_consuming(Tensor input, Tensor output, ReduceOp op) override {
    count(output);
    return inner_->reduce_scatter_consuming(std::move(input), std::move(output), op);
  }
  std::shared_ptr<Work> send(const Tensor& tensor, int peer) override {
    count(tensor);
    return inner_->send(tensor, peer);
  }
  std::shared_ptr<Work> recv(Tensor tensor, int peer) override { return inner_->recv(std::move(tensor), peer); }
  std::shared_ptr<Work> send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor,
                                  int recv_peer) override {
    count(send_tensor);
    return inner_->send_recv(send_tensor, send_peer, std::move(recv_tensor), recv_peer);
  }
  void barrier() override { inner_->barrier(); }
  void abort() override { inner_->abort(); }

 private:
  void count(const Tensor& t) {
    bytes_ += t.numel() * static_cast<int64_t>(element_size(t.dtype()));
    operations_ += 1;
  }
  std::unique_ptr<Communicator> inner_;
  std::atomic<int64_t> bytes_{0};
  std::atomic<int64_t> operations_{0};
};

}  // namespace wick::distributed
