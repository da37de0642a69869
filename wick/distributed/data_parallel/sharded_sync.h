#pragma once
// ShardedSync: data parallelism with the optimizer state sharded over the ranks (ZeRO-1,
// PyTorch's ZeroRedundancyOptimizer) and, optionally, the gradients too (ZeRO-2). The
// Trainer sees it as it sees DataParallelSync (wick/train/replicas.h); the user's optimizer
// is the template of one built over this rank's shards, which it steps.
//
// The layout: the parameters of each optimizer group are packed, in reverse registration
// order (the order backward finishes them), into flat units of about bucket_bytes, each
// padded to a multiple of the world size; every parameter's data becomes a view of its
// unit, and rank r owns slice r of every unit. Per step:
//   - backward: each gradient is copied into its unit as soon as it is final (a
//     post-accumulate hook); a complete unit is all-reduced (ZeRO-1: every rank keeps the
//     whole mean gradient, and .grad() stays a view of it as with DataParallelSync) or
//     reduce-scattered (ZeRO-2: the unit's full gradient lives only until its reduction
//     finishes; each rank keeps its slice, and .grad() is left undefined);
//   - clipping: the squared norms of the slices are summed over the ranks, so the norm is
//     the model's;
//   - step: the shard optimizer (same type and hyper-parameters as the user's, which it
//     reads before every step, so LR schedules apply) updates this rank's slices, then every
//     unit's all-gather is launched, not waited for: it overlaps what comes before the
//     next forward and, with shard_units, the forward itself (below).
// The gathers are waited for just before their parameters are read:
//   - with DataParallelOptions::shard_units (FSDP's SHARD_GRAD_OP, reshard_after_forward=
//     False), each named module ("wrapped", listed in forward order) has units of its own,
//     launched in forward order after the units of no wrapped module, and its forward
//     pre-hook (Module::call) waits for them: the first block's gather finishes while the
//     embeddings compute, the next while the first block does;
//   - the units of no wrapped module (all of them without shard_units) are waited for by
//     before_forward(), which the Trainer calls before every forward, after the batch is
//     loaded: the latest point that is safe without knowing which module reads what;
//   - everything else that reads the parameters waits for every unit first: the end of
//     the epoch (validation, checkpoints and the caller after training see the model
//     whole), broadcast_parameters, the next step (a module the forward did not call; the
//     step writes the slices the gathers send), and the destructor.
// While its gather is in flight a unit's parameters view a stand-in without memory, so a
// read nothing waited for (a wrapped module's forward not run through Module::call, a
// direct driver that does not call before_forward) throws from Tensor::data_ptr instead of
// reading a half-written unit. A parameter tied across a wrapped module and the rest of
// the model is refused (its other reader would run before the module's hook).
// Elementwise optimizers only (SGD, Adam, AdamW, RMSprop, Adagrad: a flat slice steps as
// its parameters would); each group's parameters on one device and of one dtype.
//
// Full (ZeRO-3, FSDP's FULL_SHARD) also shards the parameters of the wrapped modules
// (shard_units, required there). Between uses a rank keeps only its slice (a tensor of its own); the
// unit's flat buffer keeps its Storage, so the parameters and autograd's saved tensors stay
// views of it, but its bytes are released (StorageResidency). A wrapped module's forward
// hooks (Module::call) gather it before its forward, launch the next module's gather
// (prefetch), and release it after; a hook on its outputs' gradient gathers it again
// before its backward and launches the previous module's gather; it is released once all
// its parameters' gradients are final, their reduce-scatter launched as with Gradients.
// DataParallelOptions' forward_prefetch, backward_prefetch and reduce_scatters_in_flight
// give up those overlaps for memory. A wrapped module inside a checkpointed region runs its
// forward hooks again in the recomputation, inside backward: it is gathered for it and kept
// for its backward, which follows; nothing is prefetched ahead then.
//
// What a rank keeps of every unit, each kind in one allocation (pack_slices): its
// parameter slices (Full's wrapped units), its gradient slices (ZeRO-2, Full) and each of
// the shard optimizer's buffers (Optimizer::set_buffer_placement); the units' slices are
// views. The CPU allocator rounds a large block up to whole 2 MB pages once per kind, not
// once per slice.
// The step updates the slices and gathers no wrapped unit. The end of every epoch gathers
// every unit (the model whole, for validation, checkpoints and the caller), the next
// training forward releases them again. Parameters of no wrapped module are kept as with
// Gradients, their gathers overlapped as above.
//
// Mixed precision: with DataParallelOptions::reduce_dtype the units' gradients travel in it
// and land in the slices in their own dtype; with param_dtype (Full) a wrapped unit is
// gathered into a second, 16-bit flat buffer that its parameters view while training (the
// float32 `values` is whole only between epochs), so the forward and backward compute in
// 16 bits while the shard optimizer steps the float32 slices. Float16's loss scaler
// unscales and checks the shard optimizer's gradients, the slices (optimizer_to_step).
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/optim/optimizer.h>

namespace wick::distributed {

class ShardedSync final : public DistributedSync {
 public:
  // `optimizer` is the user's (over module's parameters); it is read, never stepped.
  ShardedSync(Communicator& comm, Module& module, Optimizer& optimizer, ShardStrategy strategy,
              DataParallelOptions options = {});
  ~ShardedSync() override;
  ShardedSync(const ShardedSync&) = delete;
  ShardedSync& operator=(const ShardedSync&) = delete;

  int64_t ranks() const override { return comm_.size(); }
  std::vector<double> sum(std::vector<double> values) override;
  int64_t max(int64_t value) override;
  // The shard optimizer steps instead of the user's, which is never stepped; with float16
  // the loss scaler unscales and checks this rank's slices (the found-inf flag is combined
  // over the ranks by the Trainer, so every rank skips the same steps).
  bool steps_optimizer() const override { return false; }
  Optimizer* optimizer_to_step(Optimizer* given, double loss_scale) override;
  void clip(const std::vector<Variable>& params, double max_norm) override;
  // Launches every unit's all-gather (Full: the units of no wrapped module) and returns.
  void after_step() override;
  // Waits for the gathers of the units of no wrapped module: call it before every forward
  // that follows a step when driving ShardedSync without a Trainer.
  void before_forward() override;

  // Every rank's parameters become root's; when root holds a checkpoint's optimizer state
  // (load_state_dict), every rank also takes its slices of it, whatever the world size it
  // was saved with.
  void broadcast_parameters(int root = 0) override;
  void broadcast_buffers(int root = 0) override;

  // Checkpoints of sharded training, consolidated on rank 0 (FSDP's full optimizer state
  // dict): with consolidate_for_checkpoints(true) on rank 0, the end of every training epoch
  // gathers the optimizer state's slices there, one unit's buffer at a time, and
  // state_dict() returns it by unit ("unit<j>.exp_avg" without padding, "unit<j>.numel");
  // the other ranks learn from rank 0 whether to take part. load_state_dict on rank 0 checks
  // the layout and keeps the state for the next broadcast_parameters. Units do not depend
  // on the world size, so a checkpoint of N ranks resumes on M.
  void consolidate_for_checkpoints(bool on) { consolidate_ = on; }
  // Sharded checkpoints (StateDictType::Sharded, sharded_checkpoint.h), set on rank 0: the
  // end of every training epoch has each rank write its slices (of the optimizer state, and
  // with Full of the wrapped units' parameters) to shard_checkpoint_file(path, generation,
  // rank) and confirm it to the others; state_dict() then describes the layout for the
  // driver's file at `path`, written last. set_checkpoint also names the file that
  // load_state_dict's sharded layouts refer to.
  void set_checkpoint(const std::string& path, bool sharded) {
    checkpoint_path_ = path;
    sharded_checkpoints_ = sharded;
  }
  // The generation the coming epoch's end writes: the epochs trained by then.
  void set_checkpoint_generation(int64_t generation) { generation_ = generation; }
  // Rank 0, once the driver's file of the last generation is in place: the files of every
  // other generation are deleted.
  void checkpoint_complete();
  void start_epoch(int64_t steps) override;
  void end_epoch(double mean_loss) override;
  TensorMap state_dict() const override;
  void load_state_dict(const TensorMap& state) override;
  // Full with sharded checkpoints: the wrapped modules' parameters, whose slices the rank
  // files hold (the state's "sharded.values"), so the driver's file leaves them out.
  std::vector<std::string> checkpointed_parameters(const TensorMap& state) const override;

  // Bytes this rank holds for the model's state between steps, counted exactly from the
  // tensors: the parameters (the flat units, padding included), the gradients it keeps
  // (ZeRO-1: whole units; ZeRO-2: its slices) and the shard optimizer's state.
  struct StateBytes {
    int64_t parameters = 0, gradients = 0, optimizer = 0;
    // ZeRO-2: the largest unit, whose full gradient exists while it is reduced.
    int64_t largest_unit = 0;
    // Not in total(), as largest_unit: the copies of this rank's slices that the gathers
    // after a step send, each held until its gather is waited for (by the next forward).
    int64_t sending = 0;
    int64_t total() const { return parameters + gradients + optimizer; }
  };
  StateBytes state_bytes() const;
  size_t num_units() const { return units_.size(); }
  // What the gathers and the reductions did since the last reset.
  struct GatherStats {
    int64_t gathers = 0;        // all-gathers of a wrapped module, launched in forward or backward
    int64_t prefetched = 0;     // of them, launched by the previous module's hook (forward or backward)
    int64_t most_gathered = 0;  // the most wrapped modules whose parameters were whole at once
    // ZeRO-2 and Full: the most units whose whole gradient existed at once (being filled by
    // backward or in reduction).
    int64_t most_whole_gradients = 0;
    int64_t bytes = 0;  // the gathered buffers' bytes (param_dtype: in that dtype)
    // The units all-gathered after the steps (every unit; Full: those of no wrapped module),
    // and where each was waited for: by its wrapped module's forward pre-hook, by
    // before_forward(), or later (the end of the epoch, a broadcast, the next step).
    int64_t after_step = 0;
    int64_t waited_by_module = 0, waited_before_forward = 0, waited_later = 0;
  };
  GatherStats gather_stats() const { return stats_; }
  void reset_gather_stats() { stats_ = {}; }
  // Full: how many wrapped modules' parameters are whole (gathered or in flight) now.
  int64_t wrapped_gathered() const;
  // ZeRO-2 and Full: how many units' whole gradients exist now (being filled, or their
  // reduce-scatter not waited for).
  size_t whole_gradients_held() const {
    size_t n = 0;
    for (const Unit& u : units_) n += u.grads.defined() || u.work ? 1 : 0;
    return n;
  }
  // The optimizer that steps this rank's slices (for tests and checkpoints).
  const Optimizer& shard_optimizer() const { return *shard_optimizer_; }

 protected:
  void start(double examples, int64_t earlier_backwards) override;
  Tensor count_before_backward() override;
  void launch_reduction() override;
  void reduce(double examples, bool divide) override;

 private:
  struct Unit {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // of each in `values`
    int64_t shard = 0;             // elements per rank (the padded numel / ranks)
    Tensor values;                 // the parameters, flat and padded; they are views of it
    Tensor grads;                  // ZeRO-1: always; ZeRO-2: from the first gradient to the end of its reduction
    Tensor grad_shard;             // this rank's slice of the mean gradient
    Variable shard_param;          // this rank's slice of `values`, what the shard optimizer steps
    size_t pending = 0;
    std::shared_ptr<Work> work;
    int64_t wrapped = -1;          // Full: the wrapped module it belongs to, or -1
    std::shared_ptr<Work> gather;  // Full: its all-gather in flight
    // What its gradients travel in (DataParallelOptions::reduce_dtype), and while they are
    // reduced in a dtype other than where the sums land, the whole gradient (ZeRO-1) or this
    // rank's slice (ZeRO-2, Full) in it, copied back by reduce().
    DType reduce_dtype = DType::Float32;
    Tensor wire;
    // Full with param_dtype: the parameters gathered in param_dtype for the forward and
    // backward (they are views of it while training; `values`, float32, is then released and
    // whole only between epochs), and the slice its gather sends: converted, or (the gather
    // after a step) copied, since the gather writes the slice it reads.
    Tensor compute, gather_input;
    // What the parameters view while the gather after a step is in flight: `values`' shape
    // over a Storage without memory, so that reading one throws.
    Tensor in_flight;
  };
  // A module of DataParallelOptions::shard_units.
  struct Wrapped {
    std::string name;
    Module* module = nullptr;
    std::vector<size_t> units;
    size_t params = 0;             // how many of params_ are its
    size_t final_in_backward = 0;  // of them, with their gradient final in this backward
    Module::ForwardHookId hooks = 0;
  };
  Tensor slot(const Unit& u, const Tensor& flat, size_t i) const;
  // Uninitialised slices (by unit: units_.size() entries, undefined for units not listed)
  // of `units`, one allocation per dtype and device: the units' own, or `options`.
  std::vector<Tensor> pack_slices(const std::vector<size_t>& units, std::optional<Options> options) const;
  // A zero buffer for the unit's whole gradient: in the dtype it keeps (ZeRO-1) or travels in.
  Tensor whole_gradient(const Unit& u) const;
  // The unit's elements without the padding.
  int64_t numel_of(const Unit& u) const { return u.offsets.back() + params_[u.params.back()].numel(); }
  void on_gradient_final(size_t param);
  // Copies parameter i of the unit's gradient into the unit (zeros when it has none).
  void take_gradient(Unit& u, size_t i);
  void launch_in_order();
  void copy_hyper_parameters();
  // broadcast_parameters' part for the optimizer state (a flag, then names and tensors).
  void hand_out_state(int root);
  // Sharded checkpoints (sharded_sync_state.cpp): this rank's file of the generation, then
  // every rank's outcome; throws on every rank, naming the ranks, when one failed.
  void write_shard(const std::string& path, int64_t generation);
  // This rank's slices of a sharded checkpoint of `world` ranks, read from the files that
  // hold them, into the shard optimizer, and with `values` (Full) into the wrapped units'
  // slices, which are then gathered so the model is whole.
  void read_shards(const std::string& path, int64_t generation, int64_t world, bool values);
  // Each parameter's unit, offset, name and shape, one a line (a shard file's metadata).
  std::string parameter_layout() const;
  // Full: the wrapped modules' parameters by the model's state-dict names (a tied
  // parameter under each of its names), with their index in params_.
  std::vector<std::pair<std::string, size_t>> wrapped_parameter_names() const;
  // The same lines as parameter_layout's for them, by those names (the "values" metadata).
  std::string values_layout() const;
  // Full: how many units hold wrapped modules' parameters (0 otherwise).
  int64_t wrapped_units() const;

  // The gathers after a step: one unit's launched, its parameters pointed at the stand-in;
  // waited for, the parameters pointed back at `values`, counted in `waited`. Under mu_.
  void launch_step_gather(Unit& u);
  void wait_step_gather(Unit& u, int64_t& waited);
  // Every unit's gather after the step waited for (the model readable), counted as later.
  void wait_step_gathers();

  // The wrapped modules (sharded_sync_units.cpp).
  bool fully_sharded() const { return strategy_ == ShardStrategy::Full; }
  // Which wrapped module each parameter is in (-1: none); checks the names.
  std::vector<int64_t> find_wrapped_modules();
  void install_forward_hooks();
  bool sharded_between_uses(const Unit& u) const { return fully_sharded() && u.wrapped >= 0; }
  // What a wrapped unit is gathered into while training: `compute` with param_dtype, else `values`.
  const Tensor& gathered(const Unit& u) const { return u.compute.defined() ? u.compute : u.values; }
  // Points the unit's parameters at `flat` (values or compute).
  void point_parameters(const Unit& u, const Tensor& flat);
  void launch_gather(size_t w, bool prefetch);
  void wait_gathered(size_t w);
  void release(size_t w);
  // Its pre-hook: Full gathers its units; ZeRO-1/2 waits for their gathers after the step.
  void before_forward(size_t w);
  void after_forward(size_t w, const std::vector<Variable>& outputs);
  void before_backward(size_t w);
  // A parameter's gradient is final in this backward: its module may be released.
  void note_final(size_t param);
  // Every unit whole (end of an epoch, broadcasts; every gather after the step waited for)
  // / each rank's slice taken and the wrapped modules released (Full: the first training
  // forward after).
  void gather_everything();
  void shard_everything();

  Communicator& comm_;
  Module& module_;
  Optimizer& user_optimizer_;
  ShardStrategy strategy_;
  DataParallelOptions options_;
  std::vector<Variable> params_;
  std::vector<size_t> unit_of_, index_in_unit_;
  std::vector<Unit> units_;
  std::vector<size_t> group_of_unit_;
  std::unique_ptr<Optimizer> shard_optimizer_;
  // The shard optimizer's buffers, by "<buffer>/<dtype>/<device>": each unit's slice.
  std::map<std::string, std::vector<Tensor>> state_slices_;
  std::vector<Variable::HookId> hooks_;
  std::mutex mu_;
  bool armed_ = false;
  std::vector<bool> taken_;  // by parameter: its gradient is in its unit this step
  size_t next_launch_ = 0;
  // ZeRO-2: the units whose reduce-scatter may still hold their whole gradient (at most
  // DataParallelOptions::reduce_scatters_in_flight).
  std::deque<size_t> in_flight_;
  Tensor count_;
  std::shared_ptr<Work> count_work_;
  bool count_ready_ = false;
  bool consolidate_ = false;
  TensorMap consolidated_;  // rank 0: the whole optimizer state at the last epoch's end
  TensorMap pending_;       // rank 0: a checkpoint's, until it is handed out
  // Sharded checkpoints, on rank 0.
  std::string checkpoint_path_;
  bool sharded_checkpoints_ = false;
  int64_t generation_ = 0;                               // the next one written
  int64_t written_generation_ = -1;                      // the last one every rank wrote
  int64_t pending_generation_ = -1, pending_world_ = 0;  // a sharded checkpoint loaded, until handed out
  bool pending_values_ = false;                          // its files hold the wrapped units' values
  // The wrapped modules (shard_units).
  std::vector<Wrapped> wrapped_;
  std::vector<int64_t> wrapped_of_;  // by parameter
  bool whole_ = true;                // Full: every unit's values resident and current (the slices are copies)
  GatherStats stats_;
};

}  // namespace wick::distributed
