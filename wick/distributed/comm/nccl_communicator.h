#pragma once
// NcclCommunicator: collectives over CUDA tensors of one device with NCCL. Rank 0 creates
// the NCCL unique id and publishes it in the Store under `prefix`; the communicator is
// initialised non-blocking and polled, so a rank that never shows up makes the others
// throw after `timeout` (the NCCL communicator is aborted, not leaked).
//
// Streams: every operation runs on the communicator's own stream, after the work already
// queued on the caller's current stream (an event orders them). Work::wait() makes the
// caller's current stream wait for the operation (no host block) and checks NCCL's
// asynchronous error state on the host. A watchdog thread checks every launched operation
// against its deadline (launch + timeout): a late one (a peer died or hangs) aborts the
// communicator, so the hung kernels end and every later wait() throws naming the op.
// abort() and a failed check call ncclCommAbort; destruction otherwise finalises (bounded
// by the timeout) and calls ncclCommDestroy.
//
// A build without CUDA has this class too; constructing it throws "wick was built without
// CUDA".
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/comm/store.h>

namespace wick::distributed {

struct NcclOptions {
  Milliseconds timeout{std::chrono::seconds(30)};
  // Key prefix in the store; communicators sharing a store need distinct prefixes.
  std::string prefix = "nccl/";
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Store& store, int rank, int size, int device, NcclOptions options = {});
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override;
  int size() const override;
  Device device() const override;

  std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(std::vector<Tensor> tensors, int root) override;
  std::shared_ptr<Work> reduce(std::vector<Tensor> tensors, int root, ReduceOp op) override;
  std::shared_ptr<Work> all_gather(const Tensor& input, Tensor output) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override;
  std::shared_ptr<Work> send(const Tensor& tensor, int peer) override;
  std::shared_ptr<Work> recv(Tensor tensor, int peer) override;
  std::shared_ptr<Work> send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor, int recv_peer) override;
  void barrier() override;
  void abort() override;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;  // shared with the works it returned
};

// Whether this build can make an NcclCommunicator (built with CUDA); a device is still needed.
bool nccl_is_built();
// The version of the NCCL library this process loaded, as "2.28.3" (ncclGetVersion: no GPU
// needed); empty in a build without CUDA.
std::string nccl_version();

}  // namespace wick::distributed
