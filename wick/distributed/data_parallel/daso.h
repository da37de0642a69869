#pragma once
// DasoSync: DASO (Heat's heat.optim.DASO) as the gradient reducer, step policy and metrics
// of the training loop (wick/train/replicas.h), so the Trainer, the epochs loop and
// drive/follow_distributed_training run it unchanged.
//
// The ranks form nodes (NodeTopology). Inside a node, gradients are averaged every batch the
// schedule says (a bucketed DataParallelSync on the node's ranks); across nodes, only the
// parameters travel, on the group of ranks with the same local rank, non-blocking, merged
// `batches_to_wait` batches later and then broadcast inside the node, the sending local rank
// rotating from batch to batch (DasoSchedule has the decisions). Every batch of the warm-up
// and cool-down epochs and the last batch of every epoch are blocking averages.
//
// Usage: DataParallelOptions::daso for drive/follow_distributed_training (and the examples'
// --daso), or a DasoSync passed to a Trainer; the Trainer calls start_epoch and end_epoch
// (the epoch's loss averaged over all ranks drives the skips).
#include <deque>
#include <functional>
#include <memory>

#include <wick/distributed/data_parallel/daso_schedule.h>
#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/distributed/comm/metered_communicator.h>
#include <wick/distributed/comm/subgroup.h>

namespace wick::distributed {

class DasoSync final : public DistributedSync {
 public:
  // Every rank of `world` constructs it at the same point (it makes the node and cross-node
  // groups over `store`). `module`'s trainable parameters must share one floating dtype.
  // `wrap_cross_node`, when given, wraps this rank's cross-node communicator (benchmarks
  // use it to emulate a slow network between the nodes: ThrottledCommunicator).
  using CommunicatorWrapper = std::function<std::unique_ptr<Communicator>(std::unique_ptr<Communicator>)>;
  DasoSync(Communicator& world, Store& store, Module& module, DasoOptions options, NodeTopology topology,
           Milliseconds timeout = std::chrono::seconds(30), const CommunicatorWrapper& wrap_cross_node = {});
  ~DasoSync() override;

  int64_t ranks() const override { return world_.size(); }
  std::vector<double> sum(std::vector<double> values) override;
  int64_t max(int64_t value) override;
  // The schedule's step: parameters sent across nodes, merged and broadcast in the node.
  void after_step() override;
  void start_epoch(int64_t steps) override;
  void end_epoch(double mean_loss) override;

  // The schedule's state ("daso.schedule"), for checkpoints. Taken at an epoch's end, when
  // no send is in flight.
  TensorMap state_dict() const override;
  void load_state_dict(const TensorMap& state) override;

  // Every rank's parameters (or buffers) become `root`'s, over the whole job.
  void broadcast_parameters(int root = 0) override;
  void broadcast_buffers(int root = 0) override;

  DasoSchedule& schedule() { return schedule_; }
  const NodeTopology& topology() const { return topology_; }
  // The payload bytes this rank handed to the cross-node group so far.
  int64_t global_bytes() const { return global_->bytes(); }

 protected:
  // The node's average of the gradients when the schedule says (a DataParallelSync over the
  // node's ranks), else this rank's own.
  void start(double examples, int64_t earlier_backwards) override;
  Tensor count_before_backward() override;
  void reduce(double examples, bool divide) override;

 private:
  struct Send {
    std::vector<std::shared_ptr<Work>> works;
    std::vector<Tensor> chunks;  // all_reduce: the sums; cast: all_gather outputs [nodes, chunk]
    bool cast = false;
  };
  template <class F>
  void in_group(bool cross_node, F&& f);
  // The trainable parameters as one flat tensor of the wire dtype (downcast_type when
  // `cast`), and its non-blocking average over the nodes.
  Tensor pack(bool cast) const;
  void start_send(const Tensor& flat, bool cast);
  // Before a send leaves this rank: a parameter that is NaN or infinite (or does not fit
  // the wire dtype) would be averaged into every node's model. Throws a wick::Error naming
  // this rank and the parameter, after aborting the node and cross-node groups so that the
  // peers fail at once instead of at their timeout (Heat raises at the send too).
  void refuse_non_finite(const Tensor& flat);
  // The sum over the nodes of a send's parameters, flat, in float32 or wider.
  Tensor finish_send(Send& send);
  void merge(Send& send, int64_t batches_to_wait);
  void replace(Send& send);

  Communicator& world_;
  DasoSchedule schedule_;
  NodeTopology topology_;
  std::unique_ptr<Communicator> local_;
  std::unique_ptr<MeteredCommunicator> global_;
  std::unique_ptr<DataParallelSync> local_sync_;
  Module& module_;
  std::vector<Variable> params_;
  std::vector<std::string> names_;  // by parameter, as module.named_parameters()
  int64_t numel_ = 0;
  DType dtype_;
  std::deque<Send> sends_;
  bool armed_ = false;  // the node's reducer is armed for this step
};

}  // namespace wick::distributed
