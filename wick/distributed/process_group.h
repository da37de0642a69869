#pragma once
// ProcessGroup: this process's place in a multi-process job, joined from the environment
// that wickrun sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
// WICK_JOB_TOKEN): the control channel (rank 0 serves it) and a Communicator for `device`
// (NCCL for CUDA, Gloo for the CPU). Programs run the same code alone or under wickrun:
//
//   ProcessGroup group = ProcessGroup::from_environment(device);   // world of 1 when unset
//   LoopState s = train_in_group(group, model, optimizer, train, &valid, options);
#include <memory>

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/control/control_environment.h>
#include <wick/distributed/control/environment_timeouts.h>
#include <wick/distributed/data_parallel/distributed_training.h>

namespace wick::distributed {

struct ProcessGroup {
  ProcessGroupConfig config;  // world_size 1 when the job is not distributed
  std::unique_ptr<DriverChannel> driver;      // on rank 0 of a distributed job
  std::unique_ptr<FollowerChannel> follower;  // on the other ranks
  std::unique_ptr<Communicator> comm;         // when distributed
  // How long comm's collectives wait for a peer; train_in_group gives DASO's node and
  // cross-node groups the same unless DataParallelOptions::group_timeout says otherwise.
  Milliseconds timeout = kDefaultCollectiveTimeout;

  bool distributed() const { return config.world_size > 1; }
  bool is_driver() const { return config.rank == 0; }
  // This rank's end of the control channel (none in a world of one), for PipelineModel.
  ControlEndpoint control() const { return {driver.get(), follower.get()}; }

  // A world of one when WORLD_SIZE is unset; otherwise the job that the variables
  // describe (throws wick::Error naming a missing or garbled variable). A collective that
  // waits longer than `timeout` for a peer (dead, hung or never there) fails. The defaults
  // come from the environment where it sets them (wick/distributed/control/
  // environment_timeouts.h): `timeout` from WICK_COLLECTIVE_TIMEOUT (else 5 minutes),
  // options.rendezvous_timeout from WICK_RENDEZVOUS_TIMEOUT (else 60 s; every rank must
  // join within it, else rank 0 fails naming the missing ranks).
  static ProcessGroup from_environment(Device device, ControlOptions options = {},
                                       Milliseconds timeout = timeout_from_environment("WICK_COLLECTIVE_TIMEOUT",
                                                                                       kDefaultCollectiveTimeout));
};

// fit() alone; drive_distributed_training on rank 0 and follow_distributed_training on
// the others otherwise (the followers return an empty LoopState). `train` and
// `validation` must be sharded by the group's rank and world size. DASO's groups wait
// parallel.group_timeout, or group.timeout when it is unset.
LoopState train_in_group(ProcessGroup& group, SupervisedModel& model, Optimizer& optimizer, BatchSource& train,
                         BatchSource* validation, LoopOptions options, DataParallelOptions parallel = {});

}  // namespace wick::distributed
