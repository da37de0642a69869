#pragma once
// Data-parallel training over several ranks, lamp's contract: one rank drives
// (drive_distributed_training, rank 0) and runs the training loop of wick/train/loop.h; the
// others follow (follow_distributed_training) and do what the driver's commands say. Each
// rank has its own model replica, batch sources (sharded: BatchStreamOptions::rank and
// world_size, or a DataLoader with a DistributedSampler) and Communicator; the control
// channel carries the commands.
//
// What happens:
//   - setup: the driver sends the loop's accumulate / clipping settings; parameters,
//     buffers and (after a resume) the optimizer state are broadcast from the driver;
//   - every epoch: Train (epoch, learning rates) then, when due, Validate: each rank runs
//     the Trainer over its own shard; gradients are summed in buckets during backward
//     (DataParallelSync), losses and accuracy are summed over the global example count;
//     buffers (BatchNorm statistics) are broadcast from the driver before validation;
//   - ranks may have different numbers of batches; a rank that dies or hangs makes the
//     others' next collective or control call throw wick::Error within the timeouts;
//   - at the end (Stop) every rank receives the driver's final (best) parameters.
// Checkpoints are written by the driver only (LoopOptions::checkpoint_path); resuming
// loads them on the driver, and the setup broadcast hands the state to the followers. With
// sharding and DataParallelOptions::state_dict_type = Sharded, every rank also writes its
// slices of the optimizer state (sharded_checkpoint.h) and reads them back itself.
#include <functional>
#include <memory>
#include <vector>

#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/train/loop.h>

namespace wick::distributed {

// On rank 0. `optimizer` steps the driver's replica.
LoopState drive_distributed_training(DriverChannel& control, Communicator& comm, SupervisedModel& model,
                                     Optimizer& optimizer, BatchSource& train, BatchSource* validation,
                                     LoopOptions options, DataParallelOptions parallel = {});

// On every other rank. `optimizer` must be built like the driver's (same parameters and
// hyper-parameters); it may be null with DataParallelOptions::only_driver_steps.
void follow_distributed_training(FollowerChannel& control, Communicator& comm, SupervisedModel& model,
                                 Optimizer* optimizer, BatchSource& train, BatchSource* validation,
                                 DataParallelOptions parallel = {});

// One replica of single-process data parallelism: a model on its own device and its
// batch streams (sharded across the replicas).
struct LocalReplica {
  SupervisedModel model;
  BatchSource* train = nullptr;
  BatchSource* validation = nullptr;
};
using OptimizerFactory = std::function<std::unique_ptr<Optimizer>(Module& module)>;

// lamp's localDataParallelTrainingLoop: one thread per replica in this process, the same
// protocol as the distributed loop over an in-process control channel and communicators
// (Gloo for CPU replicas, NCCL when every replica is on a GPU, Gloo through host memory
// when CPU and GPU replicas train together). The trained (best) model ends in every
// replica; the first one drives (checkpoints, learning curve).
LoopState local_data_parallel_training(std::vector<LocalReplica>& replicas, const OptimizerFactory& make_optimizer,
                                       LoopOptions options, DataParallelOptions parallel = {});

}  // namespace wick::distributed
