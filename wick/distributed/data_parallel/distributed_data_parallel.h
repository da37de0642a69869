#pragma once
// DistributedDataParallel: data parallelism for a training loop you write yourself, as
// PyTorch's DDP. Every rank holds a copy of the model and runs its own batches; after each
// backward the gradients are averaged over the ranks (bucketed all-reduces that start from
// gradient hooks while backward still runs: DataParallelSync), so every rank's optimizer
// takes the same step.
//
//   ProcessGroup group = ProcessGroup::from_environment(device);  // wickrun, torchrun, srun, mpirun
//   DistributedDataParallel ddp(*model, group.comm.get());         // rank 0's parameters everywhere
//   for (...) {
//     Variable loss = my_step(*model, batch);
//     ddp.backward(loss);          // = loss.backward() + gradients averaged over ranks
//     optimizer.step();
//     optimizer.zero_grad();
//   }
//
// Accumulation: backward() inside a no_sync() scope only accumulates locally; the next
// backward() outside it averages the accumulated gradients (one all-reduce per bucket for
// the whole group, as PyTorch's no_sync):
//
//   { auto local = ddp.no_sync(); ddp.backward(loss_a); }
//   ddp.backward(loss_b);          // averages grad(loss_a + loss_b) over ranks
//
// With a null communicator (a world of one) backward() is loss.backward(). Every rank must
// call backward() (synced) the same number of times, as with any collective. Buffers
// (BatchNorm's running statistics) are not averaged: sync_buffers() gives every rank rank
// 0's, as PyTorch does before each forward with broadcast_buffers=True.
#include <cstdint>
#include <memory>

#include <wick/autograd/variable.h>
#include <wick/distributed/comm/communicator.h>
#include <wick/nn/module.h>

namespace wick::distributed {

class DataParallelSync;

struct DdpOptions {
  int64_t bucket_bytes = 25 * 1024 * 1024;  // as PyTorch's DDP
};

class DistributedDataParallel {
 public:
  // Broadcasts rank 0's parameters and buffers to every rank (a collective: every rank
  // constructs its DistributedDataParallel at the same point). `module` and `comm` must
  // outlive this object; the module's parameters must not change while it lives.
  DistributedDataParallel(Module& module, Communicator* comm, DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // loss.backward(gradient), then, unless inside no_sync(), every parameter's gradient
  // averaged over the ranks (a parameter this rank did not use counts as zero here).
  void backward(const Variable& loss, const Tensor& gradient = Tensor());

  // While the returned guard lives, backward() does not communicate.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool was_syncing_;
  };
  NoSync no_sync() { return NoSync(*this); }

  // Every rank's buffers become rank 0's.
  void sync_buffers();

  Module& module() { return module_; }
  int rank() const;
  int world_size() const;

 private:
  Module& module_;
  Communicator* comm_;
  std::unique_ptr<DataParallelSync> sync_;
  bool syncing_ = true;
  int64_t unsynced_backwards_ = 0;  // under no_sync since the last averaged backward
};

}  // namespace wick::distributed
