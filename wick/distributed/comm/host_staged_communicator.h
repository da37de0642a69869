#pragma once
// HostStagedCommunicator: a host communicator (Gloo) for replicas whose tensors live on a
// GPU, so that CPU and GPU replicas can train together (lamp's guide runs a model on the
// CPU and one on a GPU). Tensors are copied to host memory when an operation is issued and
// the results copied back by Work::wait(). For GPU-only jobs NCCL is the fast path; this is
// for mixed jobs.
#include <memory>

#include <wick/distributed/comm/communicator.h>

namespace wick::distributed {

class HostStagedCommunicator final : public Communicator {
 public:
  // `host` moves CPU tensors; `device` is where this rank's tensors live.
  HostStagedCommunicator(std::unique_ptr<Communicator> host, Device device);

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  Device device() const override { return device_; }
  std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(std::vector<Tensor> tensors, int root) override;
  std::shared_ptr<Work> reduce(std::vector<Tensor> tensors, int root, ReduceOp op) override;
  std::shared_ptr<Work> all_gather(const Tensor& input, Tensor output) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override;
  std::shared_ptr<Work> send(const Tensor& tensor, int peer) override;
  std::shared_ptr<Work> recv(Tensor tensor, int peer) override;
  std::shared_ptr<Work> send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor, int recv_peer) override;
  void barrier() override { host_->barrier(); }
  void abort() override { host_->abort(); }

 private:
  std::unique_ptr<Communicator> host_;
  Device device_;
};

}  // namespace wick::distributed
