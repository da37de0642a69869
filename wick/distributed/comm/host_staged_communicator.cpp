#include <wick/distributed/comm/host_staged_communicator.h>

namespace wick::distributed {
namespace {

// Host copies of tensors, and what to copy back once the host operation is done.
struct Staged {
  std::vector<Tensor> host;
  std::vector<Tensor> results;  // device tensors that receive host[i] (undefined: nothing)

  Tensor stage(const Tensor& t, bool receives) {
    Tensor h = t.device().is_cpu() ? t : t.cpu();
    host.push_back(h);
    results.push_back(receives && !h.shares_storage(t) ? t : Tensor());
    return h;
  }
};

class StagedWork final : public Work {
 public:
  StagedWork(std::shared_ptr<Work> inner, Staged staged) : inner_(std::move(inner)), staged_(std::move(staged)) {}
  void wait() override {
    inner_->wait();
    for (size_t i = 0; i < staged_.host.size(); ++i)
      if (staged_.results[i].defined()) staged_.results[i].copy_(staged_.host[i]);
  }

 private:
  std::shared_ptr<Work> inner_;
  Staged staged_;
};

}  // namespace

HostStagedCommunicator::HostStagedCommunicator(std::unique_ptr<Communicator> host, Device device)
    : host_(std::move(host)), device_(device) {}

std::shared_ptr<Work> HostStagedCommunicator::all_reduce(std::vector<Tensor> tensors, ReduceOp op) {
  Staged s;
  std::vector<Tensor> host;
  for (const Tensor& t : tensors) host.push_back(s.stage(t, true));
  return std::make_shared<StagedWork>(host_->all_reduce(host, op), std::move(s));
}

std::shared_ptr<Work> HostStagedCommunicator::broadcast(std::vector<Tensor> tensors, int root) {
  Staged s;
  std::vector<Tensor> host;
  for (const Tensor& t : tensors) host.push_back(s.stage(t, rank() != root));
  return std::make_shared<StagedWork>(host_->broadcast(host, root), std::move(s));
}

std::shared_ptr<Work> HostStagedCommunicator::reduce(std::vector<Tensor> tensors, int root, ReduceOp op) {
  Staged s;
  std::vector<Tensor> host;
  for (const Tensor& t : tensors) host.push_back(s.stage(t, rank() == root));
  return std::make_shared<StagedWork>(host_->reduce(host, root, op), std::move(s));
}

std::shared_ptr<Work> HostStagedCommunicator::all_gather(const Tensor& input, Tensor output) {
  Staged s;
  Tensor in = s.stage(input, false), out = s.stage(output, true);
  return std::make_shared<StagedWork>(host_->all_gather(in, out), std::move(s));
}

std::shared_ptr<Work> HostStagedCommunicator::reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) {
  Staged s;
  Tensor in = s.stage(input, false), out = s.stage(output, true);
  return std::make_shared<StagedWork>(host_->reduce_scatter(in, out, op), std::move(s));
}

std::shared_ptr<Work> HostStagedCommunicator::send(const Tensor& tensor, int peer) {
  Staged s;
  Tensor h = s.stage(tensor, false);
  return std::make_shared<StagedWork>(host_->send(h, peer), std::move(s));
}

std::shared_ptr<Work> HostStagedCommunicator::recv(Tensor tensor, int peer) {
  Staged s;
  Tensor h = s.stage(tensor, true);
  return std::make_shared<StagedWork>(host_->recv(h, peer), std::move(s));
}

std::shared_ptr<Work> HostStagedCommunicator::send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor,
                                                        int recv_peer) {
  Staged s;
  Tensor out = s.stage(send_tensor, false), in = s.stage(recv_tensor, true);
  return std::make_shared<StagedWork>(host_->send_recv(out, send_peer, in, recv_peer), std::move(s));
}

}  // namespace wick::distributed
