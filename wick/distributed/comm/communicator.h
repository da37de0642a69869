#pragma once
// Communicator: collective operations over a group of ranks (processes or threads), each
// rank holding its own tensors. GlooCommunicator moves CPU tensors over TCP;
// NcclCommunicator moves CUDA tensors. Every operation is asynchronous: it returns a Work
// at once and runs in the order it was issued; the tensors passed in must stay alive and
// untouched until Work::wait() returns. The blocking idiom is
//   comm.all_reduce({grad}, ReduceOp::Mean)->wait();
//
// Failures (a peer that died or hangs, a timeout, abort()) make wait() throw wick::Error
// naming the operation and the cause. After such a failure the communicator is unusable:
// every pending and later operation fails at once with the first cause, because the ranks
// no longer agree on which messages belong to which operation.
//
// The reductions are wick::ReduceOp's (the tensor reductions' enum, wick/tensor/op_kinds.h):
// Sum, Mean (PyTorch's AVG), Max and Min; any other is refused with a wick::Error. Integer
// dtypes and ReduceOp::Mean: rejected too (sum and divide yourself if integer division is
// what you want); Mean is for floating dtypes only.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <wick/distributed/comm/store.h>
#include <wick/tensor/device.h>
#include <wick/tensor/op_kinds.h>
#include <wick/tensor/tensor.h>

namespace wick::distributed {

// The handle of an issued operation.
class Work {
 public:
  virtual ~Work();
  // Waits for the operation (for NCCL: orders the caller's current stream after it) and
  // rethrows its error as wick::Error.
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The device kind its tensors live on ("cpu" for Gloo, "cuda:N" for NCCL).
  virtual Device device() const = 0;

  // Every rank passes the same number of tensors with the same shapes and dtypes, in the
  // same order; the result replaces each tensor's values on every rank.
  virtual std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp op) = 0;
  // The root's values replace the others'.
  virtual std::shared_ptr<Work> broadcast(std::vector<Tensor> tensors, int root) = 0;
  // Like all_reduce, but only the root's tensors receive the result; the others' are left
  // unchanged.
  virtual std::shared_ptr<Work> reduce(std::vector<Tensor> tensors, int root, ReduceOp op) = 0;
  // output (size() * input.numel() elements, e.g. [size, ...input shape]) receives every
  // rank's input in rank order.
  virtual std::shared_ptr<Work> all_gather(const Tensor& input, Tensor output) = 0;
  // input holds size() * output.numel() elements; rank r receives the reduction of slice r.
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) = 0;
  // reduce_scatter for a caller done with input, whose values it leaves undefined: a
  // communicator that needs scratch space as large as input (Gloo all-reduces a copy of it)
  // works in input instead, so the reduction costs no second copy of a whole gradient
  // (sharded data parallelism). The others reduce-scatter as usual.
  virtual std::shared_ptr<Work> reduce_scatter_consuming(Tensor input, Tensor output, ReduceOp op) {
    return reduce_scatter(input, std::move(output), op);
  }
  // Point to point: a send to `peer` must be matched by a recv from this rank on `peer`,
  // in the same order. A send may not complete before the matching recv is issued, so two
  // ranks must not both send to each other first: exchange with send_recv instead.
  virtual std::shared_ptr<Work> send(const Tensor& tensor, int peer) = 0;
  virtual std::shared_ptr<Work> recv(Tensor tensor, int peer) = 0;
  // A send to `send_peer` and a recv from `recv_peer` issued as one operation (for NCCL: one
  // group), so neither waits for the other: two ranks exchanging in both directions (or a
  // ring of ranks each sending to the next) do not deadlock. It matches a send_recv, or a
  // send and a recv, on the peers, counted in the same order as send and recv.
  virtual std::shared_ptr<Work> send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor,
                                          int recv_peer) = 0;
  // Blocks until every rank reached the barrier (after this rank's pending operations).
  virtual void barrier() = 0;
  // Tears down: pending and later operations fail with a clear error instead of hanging.
  virtual void abort() = 0;
};

// Waits for each work in order; rethrows the first error after waiting for all of them.
void wait_all(const std::vector<std::shared_ptr<Work>>& works);

// An NcclCommunicator for a CUDA device, a GlooCommunicator for the CPU. Every rank calls it
// with the same store, size, device type and timeout (joining and every operation must
// finish within it, or fail saying so).
// With WICK_CUDA_COMMUNICATOR=gloo in the environment (of every rank), CUDA tensors go
// through host memory over Gloo instead (HostStagedCommunicator): slower than NCCL, but it
// needs no NCCL and lets ranks share one GPU whatever the NCCL version (before 2.30 NCCL
// refuses two ranks on one GPU). "nccl" or unset: NCCL; anything else throws wick::Error.
std::unique_ptr<Communicator> make_communicator(Store& store, int rank, int size, Device device,
                                                Milliseconds timeout = std::chrono::seconds(30));

// Small host values reduced over every rank of `comm` (loss sums, example counts, batch
// rounds), each rank getting the result: the element-wise sum of `values` (none: no
// collective), and the largest `value`.
std::vector<double> sum_over_ranks(Communicator& comm, std::vector<double> values);
int64_t max_over_ranks(Communicator& comm, int64_t value);

}  // namespace wick::distributed
