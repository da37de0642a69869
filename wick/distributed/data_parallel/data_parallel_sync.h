#pragma once
// DataParallelSync: data-parallel training over a Communicator (one per rank, threads or
// processes) as the Trainer's three parts: the gradient reducer, the step policy and the
// metrics (wick/train/replicas.h). Gradients are summed in buckets (about bucket_bytes each,
// parameters in reverse registration order, the order backward usually finishes them)
// whose all-reduce starts from a post-accumulate gradient hook as soon as the bucket's last
// gradient is final, while backward still runs; finishing launches whatever did not start
// (unused parameters, a rank that ran out of batches: zeros), waits, divides each bucket by
// the summed example count in one pass (unless the seed took the mean), and makes each
// gradient its slot of the bucket (a view: the sums are not copied out; a compressed bucket
// is converted back instead). The step's example count is all-reduced from arm on, before
// the buckets, so the backward can be seeded with the mean's share. Everything is launched
// in the same order on every rank, as the collectives require. Per step the gradients are
// copied once, into the buckets.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/control/environment_timeouts.h>
#include <wick/distributed/data_parallel/daso_schedule.h>
#include <wick/nn/module.h>
#include <wick/train/replicas.h>

namespace wick::distributed {

// What each rank keeps whole (PyTorch FSDP's ShardingStrategy, DeepSpeed's ZeRO stages):
// None (plain data parallelism), Optimizer (ZeRO-1: the optimizer state is sharded),
// Gradients (ZeRO-2: the reduced gradients too) or Full (ZeRO-3, FSDP's FULL_SHARD: the
// parameters of the units named in DataParallelOptions::shard_units too). See ShardedSync.
enum class ShardStrategy : uint8_t { None, Optimizer, Gradients, Full };
const char* shard_strategy_name(ShardStrategy s);
// What a sharded job's checkpoint holds, as FSDP's StateDictType: Full (FULL_STATE_DICT)
// gathers the optimizer state on rank 0 into the driver's one file; Sharded
// (SHARDED_STATE_DICT) has every rank write its own slices (sharded_checkpoint.h).
enum class StateDictType : uint8_t { Full, Sharded };

struct DataParallelOptions {
  int64_t bucket_bytes = 25 * 1024 * 1024;  // as PyTorch DDP
  // Only rank 0 steps its optimizer and broadcasts the parameters after each step
  // (instead of every rank stepping its own optimizer on the same summed gradients).
  bool only_driver_steps = false;
  // How long a follower waits for the driver's next command, and the driver for replies.
  // Default: WICK_DATA_PARALLEL_TIMEOUT when set, else 10 minutes (environment_timeouts.h).
  std::chrono::milliseconds timeout =
      timeout_from_environment("WICK_DATA_PARALLEL_TIMEOUT", kDefaultDataParallelTimeout);
  // Heat's DASO instead of plain data parallelism (drive/follow_distributed_training only):
  // the node layout comes from LOCAL_RANK / LOCAL_WORLD_SIZE (wickrun sets them), and the
  // node and cross-node groups it makes wait up to group_timeout for a peer (a stopped
  // rank is reported after it). Unset: train_in_group's ProcessGroup's collective timeout
  // (the examples' --collective-timeout), else 5 minutes.
  std::optional<DasoOptions> daso;
  // Gradients all-reduced in this 16-bit dtype (BFloat16 or Float16) instead of their own,
  // as PyTorch's bf16/fp16 compression hooks: half the traffic, each gradient rounded once
  // into the bucket and each pairwise sum rounded once (Gloo and NCCL add 16-bit values in
  // float32). With accumulation the buckets hold sums over examples, where float16 can
  // overflow and bfloat16 does not (with Precision::Float16 the scaler then skips the step);
  // a step of one batch sends means. Unset: no compression.
  // With sharding the units' gradients are all-reduced (ZeRO-1) or reduce-scattered in it
  // and land in the float32 slices; there Float32 is allowed too (param_dtype's 16-bit
  // gradients reduced in float32). Not with DASO (it has its own downcast_type).
  std::optional<DType> reduce_dtype;
  std::optional<std::chrono::milliseconds> group_timeout;
  // Shard the optimizer state (and the gradients) over the ranks instead of keeping them on
  // every rank (drive/follow_distributed_training and local_data_parallel_training; not with
  // DASO or only_driver_steps).
  ShardStrategy shard = ShardStrategy::None;
  // The submodules (dotted names, "h.0"), in forward order, that get units of their own.
  // ShardStrategy::Full (required): their parameters are sharded between uses, as FSDP's
  // fully_shard(module) per block: each is gathered before its forward and its backward and
  // released after. The parameters of no listed module (the root's: embeddings, the final
  // norm) stay whole, as with Gradients.
  // Optimizer and Gradients (optional; FSDP's SHARD_GRAD_OP units, reshard_after_forward=
  // False): the modules whose all-gathers after the step overlap the next forward, each
  // waited for as its forward starts, the first block's while the embeddings compute and so
  // on; without them every gather is waited for before the forward. Their forward must run
  // through Module::call (PyTorch's hooks run from nn.Module.__call__); a parameter shared
  // with the rest of the model is refused.
  std::vector<std::string> shard_units;
  // With sharding and LoopOptions::checkpoint_path: Sharded has every rank write its slices
  // of the optimizer state at each epoch's end (no rank holds the whole of it), the driver
  // its file last, once every rank's is written; any world size resumes from it.
  StateDictType state_dict_type = StateDictType::Full;
  // Where ShardedSync trades memory for overlap (PyTorch FSDP's knobs of the same names).
  // ShardStrategy::Full: a unit's pre-forward hook launches the next unit's all-gather, so
  // it arrives while this one computes; off, each unit is gathered when its own forward
  // starts: one unit whole at a time instead of two, its gather not hidden.
  bool forward_prefetch = true;
  // ShardStrategy::Full: the same in backward (FSDP's BACKWARD_PRE): the previous unit's
  // all-gather launched as this one's backward starts.
  bool backward_prefetch = true;
  // ShardStrategy::Gradients and Full: how many units' whole gradients may stay in reduction
  // (reduce-scatter launched, not waited for) while backward fills the next unit's. Each
  // costs a unit's gradient in memory and buys overlap of its reduction with the backward
  // of the units before it; 0 waits for every reduction as it is launched.
  int64_t reduce_scatters_in_flight = 1;
  // ShardStrategy::Full: the 16-bit dtype (BFloat16 or Float16) the shard_units' parameters
  // are gathered and computed in, as FSDP's MixedPrecisionPolicy(param_dtype): half the
  // gather traffic and the gathered memory. Each rank's float32 slices stay the master
  // weights the optimizer steps; the gradients come back in this dtype and are reduced in
  // reduce_dtype (unset: this dtype, as FSDP) into float32 slices. The forward runs under
  // autocast (TrainerOptions::precision bf16 or fp16). The root's parameters stay float32;
  // between epochs the model is whole in float32. Unset: their own dtype.
  std::optional<DType> param_dtype;
};

// The three parts of a rank's training, and what the distributed loops need besides:
// making every rank's parameters and buffers the driver's (DataParallelSync, DasoSync).
class DistributedSync : public GradientReducer, public StepPolicy, public ReplicaMetrics {
 public:
  virtual void broadcast_parameters(int root = 0) = 0;
  virtual void broadcast_buffers(int root = 0) = 0;
};

// Every rank's `tensors` take root's values: one collective per (dtype, device), issued in
// the same order on every rank; non-contiguous tensors are staged and copied back.
void broadcast_values(Communicator& comm, std::vector<Tensor> tensors, int root);

class DataParallelSync final : public DistributedSync {
 public:
  DataParallelSync(Communicator& comm, Module& module, DataParallelOptions options = {});
  ~DataParallelSync() override;
  DataParallelSync(const DataParallelSync&) = delete;
  DataParallelSync& operator=(const DataParallelSync&) = delete;

  int64_t ranks() const override { return comm_.size(); }
  std::vector<double> sum(std::vector<double> values) override;
  int64_t max(int64_t value) override;
  // The driver steps and broadcasts its parameters (only_driver_steps), or every rank steps.
  void after_step() override;
  bool steps_optimizer() const override { return !options_.only_driver_steps || comm_.rank() == 0; }

  // Every rank's parameters (or buffers) become `root`'s.
  void broadcast_parameters(int root = 0) override;
  void broadcast_buffers(int root = 0) override;
  // The number of buckets (for tests and logs).
  size_t num_buckets() const { return buckets_.size(); }

 protected:
  // The reducer's parts: the count's all-reduce from arm on; that count (waited for); the
  // buckets not launched by their hooks; the wait, division and views.
  void start(double examples, int64_t earlier_backwards) override;
  Tensor count_before_backward() override;
  void launch_reduction() override;
  void reduce(double examples, bool divide) override;

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // element offset of each in `flat`
    Tensor flat;
    size_t pending = 0;          // gradients not final yet in this backward
    std::shared_ptr<Work> work;  // set once launched
  };
  void on_gradient_final(size_t param);
  // Parameter i of the bucket's slot in `flat`, in the parameter's shape.
  Tensor slot(const Bucket& bucket, size_t i) const;
  void fill(Bucket& bucket);
  // Launches the buckets that are ready, in bucket order, stopping at the first that is not.
  void launch_in_order();

  Communicator& comm_;
  DataParallelOptions options_;
  std::vector<Variable> params_;
  std::vector<size_t> bucket_of_;  // by parameter
  std::vector<Bucket> buckets_;
  std::vector<Variable::HookId> hooks_;
  Module& module_;
  std::mutex mu_;
  bool armed_ = false;
  std::vector<bool> final_;  // by parameter, in the armed backward
  size_t next_launch_ = 0;
  Tensor count_;                      // the step's example count, summed before the buckets
  std::shared_ptr<Work> count_work_;  // set from start to reduce
  bool count_ready_ = false;          // count_work_ waited for (count_before_backward)
};

}  // namespace wick::distributed
