#pragma once
// GlooCommunicator: collectives over CPU tensors with Gloo's TCP transport. The ranks meet
// through a Store (gloo's full-mesh rendezvous: every rank publishes its addresses under
// `prefix`), then every operation runs on one worker thread per communicator, in issue
// order, each bounded by `timeout`. A CUDA tensor is rejected (use NcclCommunicator).
//
// Reductions: float32, float64, float16, bfloat16 (16-bit values are summed pairwise in
// float and rounded, as NCCL does), int32, int64, uint8. Broadcast, all_gather, send and
// recv move bytes and take every dtype, bool included.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/comm/store.h>

namespace gloo {
class Context;
}

namespace wick::distributed {

namespace detail {
class GlooWorker;
// Whether `message` names `address` ("[127.0.0.1]:602") as a whole: not as the start of a
// longer port ("[127.0.0.1]:6021"), which is another peer.
bool mentions_address(const std::string& message, const std::string& address);
}  // namespace detail

struct GlooOptions {
  // Rendezvous and every operation must finish within this; a dead or missing peer makes
  // the waiting ranks fail after it.
  Milliseconds timeout{std::chrono::seconds(30)};
  // The address to listen on and publish. Empty: $WICK_GLOO_HOST, else 127.0.0.1 (set it to
  // this machine's address for ranks on several machines).
  std::string hostname;
  // A network interface to use instead of a hostname ("eth0"). Empty: $GLOO_SOCKET_IFNAME,
  // else the hostname is used.
  std::string interface;
  // Key prefix in the store; communicators sharing a store need distinct prefixes.
  std::string prefix = "gloo/";
};

class GlooCommunicator final : public Communicator {
 public:
  // Blocks until all `size` ranks have joined (or throws wick::Error after the timeout).
  GlooCommunicator(Store& store, int rank, int size, GlooOptions options = {});
  // Pending operations fail ("communicator destroyed"); the worker thread is joined and the
  // connections closed.
  ~GlooCommunicator() override;
  GlooCommunicator(const GlooCommunicator&) = delete;
  GlooCommunicator& operator=(const GlooCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::cpu(); }

  std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(std::vector<Tensor> tensors, int root) override;
  std::shared_ptr<Work> reduce(std::vector<Tensor> tensors, int root, ReduceOp op) override;
  std::shared_ptr<Work> all_gather(const Tensor& input, Tensor output) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override;
  std::shared_ptr<Work> reduce_scatter_consuming(Tensor input, Tensor output, ReduceOp op) override;
  std::shared_ptr<Work> send(const Tensor& tensor, int peer) override;
  std::shared_ptr<Work> recv(Tensor tensor, int peer) override;
  std::shared_ptr<Work> send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor, int recv_peer) override;
  void barrier() override;
  // Fails every pending and later work at once and closes the connections, so the peers'
  // pending operations fail at once too. A Gloo call already running on the worker thread
  // cannot be interrupted: it ends at its timeout, and the destructor waits for that.
  void abort() override;

  // The connected gloo context (for benchmarks that call gloo directly on the same mesh).
  const std::shared_ptr<gloo::Context>& gloo_context() const { return context_; }

 private:
  std::string op_name(const char* op, const std::string& args) const;
  // Both reduce-scatters: all-reduces input itself when the caller is done with it.
  std::shared_ptr<Work> reduce_scatter_into(const Tensor& input, Tensor output, ReduceOp op, bool input_is_scratch);
  // Gloo's errors name a peer by its address only; this appends the rank (and host) the
  // address belongs to, so a timeout or a closed connection says which rank failed.
  std::string name_peers(const std::string& message) const;

  int rank_;
  int size_;
  GlooOptions options_;
  std::shared_ptr<gloo::Context> context_;
  std::vector<uint64_t> sent_;      // per peer: sends issued (worker thread only)
  std::vector<uint64_t> received_;  // per peer: recvs issued (worker thread only)
  // Per rank: the addresses by which our end of the pair with it may name it in errors.
  std::vector<std::vector<std::string>> peer_addresses_;
  std::unique_ptr<detail::GlooWorker> worker_;
};

}  // namespace wick::distributed
