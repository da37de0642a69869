#pragma once
// PipelineModel: one model split into stages across the ranks of a communicator (model
// parallelism across processes and machines), stage r on rank r. Rank 0 drives: its
// forward() runs the whole model, sending activations from stage to stage with the
// communicator's send/recv (Gloo on CPU, NCCL on GPUs), and returns the last stage's output
// with a grad_fn, so that loss.backward() on rank 0 carries the gradient back through every
// stage. The other ranks serve() rank 0's requests until it stops them. Rank 0's commands
// (forward, step with its learning rates, stop...) travel on the job's control channel, as
// the data-parallel driver's do; tensors travel on the communicator.
//
//   // every rank, the same layers (same code, same seed) and stage boundaries:
//   PipelineModel model(comm, group.control(), layers, {0, 4, 7}, device);
//   if (comm.rank() == 0) {
//     Adam adam(model.named_parameters(), ...);      // stage 0's parameters
//     ... loss = mse_loss(model.forward(x), y); loss.backward(); model.step(adam); ...
//     ... or, pipelined over 8 micro-batches:
//     model.train_step(x, y, mse, 8); model.step(adam);
//     model.stop();
//   } else {
//     Adam adam(model.named_parameters(), ...);      // this stage's parameters
//     model.serve(adam);
//   }
//
// Named skip connections (StagedLayer::outputs / dependencies) go straight from the
// producing rank to the consuming rank, and their gradients straight back. Parameter names
// are the unsplit model's ("6.weight"); state_dict_of_all_stages() gathers every stage on
// rank 0 and load_state_dict_into_all_stages() hands each stage its part.
//
// Tensors travel with a small header (rank, shape, dtype) checked before anything is
// allocated. A rank that dies or hangs makes the others' next send/recv fail within the
// communicator's timeout, and a stage waits at most that long for rank 0's next command.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <wick/distributed/comm/communicator.h>
#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/distributed/pipeline/micro_batches.h>
#include <wick/nn/layer_spec.h>
#include <wick/optim/optimizer_spec.h>
#include <wick/nn/staged_model.h>
#include <wick/optim/optimizer.h>
#include <wick/data/batch_stream.h>
#include <wick/train/loop.h>

namespace wick::distributed {

class PipelineModel : public UnaryModule {
 public:
  // Every rank passes the same `layers` (built the same way) and `stage_starts` (one stage
  // per rank). Each rank keeps its own stage's layers (moved to `device`) as its children;
  // rank 0 also keeps the others' as the buffers that state_dict_of_all_stages fills.
  // `control`: this rank's end of a control channel over the same ranks (rank 0 the
  // driver; none needed for one stage); rank 0 sends its commands on it, and activations
  // travel on links of two ranks (one per direction) made over its store. A peer that does
  // not answer within `timeout` fails the operation.
  PipelineModel(Communicator& comm, ControlEndpoint control, std::vector<StagedLayer> layers,
                std::vector<size_t> stage_starts, Device device, Milliseconds timeout = std::chrono::seconds(30));
  ~PipelineModel() override;

  const char* type_name() const override { return "PipelineModel"; }
  // Rank 0 only. With set_micro_batches(m) the batch goes through the stages as m
  // micro-batches (micro_batch_sizes; a batch of fewer than m examples as one micro-batch
  // per example), pipelined (GPipe): any loss on the concatenated output, and the Trainer
  // and fit() on top, work unchanged.
  Variable forward(const Variable& x) override;
  void set_micro_batches(int64_t m) {
    WICK_CHECK(m >= 1, "PipelineModel::set_micro_batches: needs m >= 1, got ", m);
    micro_batches_ = m;
  }
  // The sizes of the m micro-batches of a batch of n examples: as even as possible, the
  // larger ones first (10 into 4: 3, 3, 2, 2; 9 into 4: 3, 2, 2, 2), as torch.tensor_split.
  // Refuses (wick::Error) m < 1 and n < m, which would leave a micro-batch empty.
  static std::vector<int64_t> micro_batch_sizes(int64_t n, int64_t m);

  // How BatchNorm layers in the stages update their running statistics when a batch goes
  // through as several micro-batches (micro_batches.h). Rank 0, before training; reaches
  // every stage with the next step.
  using BatchNormStatistics = distributed::BatchNormStatistics;
  void set_batch_norm_statistics(BatchNormStatistics s) { batch_norm_statistics_ = s; }

  // Rank 0: forward and backward of a whole batch split into exactly `micro_batches` along
  // its first dimension (micro_batch_sizes: a batch smaller than that is refused),
  // pipelined: while a stage works on one micro-batch the others work on others. `loss`
  // maps a micro-batch's output and target to its mean loss; the gradients (accumulated
  // into every stage's parameters) and the returned loss are those of the whole batch's
  // mean loss, the micro-batches' means weighted by their sizes (for layers that treat
  // examples independently; BatchNorm: see BatchNormStatistics). The activations of a
  // micro-batch are freed as soon as its backward has run on a stage.
  using Schedule = PipelineSchedule;  // GPipe or OneFOneB (micro_batches.h)
  using LossFn = std::function<Variable(const Variable& output, const Variable& target)>;
  double train_step(const Tensor& input, const Tensor& target, const LossFn& loss, int64_t micro_batches,
                    Schedule schedule = Schedule::OneFOneB);

  // Rank 0: steps `optimizer` (stage 0's) and every other stage's optimizer, whose
  // gradients are then cleared (set to none).
  void step(Optimizer& optimizer);
  // Rank 0: steps every stage's optimizer but stage 0's with `optimizer`'s learning rates,
  // one per group, as absolute values: the whole model follows rank 0's schedule as one
  // optimizer over the unsplit model would. A stage whose optimizer has another number of
  // groups is refused (wick::Error on that rank, and rank 0's next message fails); an
  // optimizer of no groups (stage 0 without parameters) leaves each stage its own.
  void step_other_stages(const Optimizer& optimizer);
  // Rank 0: clips the gradients of all stages together to a total 2-norm of `max_norm`;
  // returns the norm before clipping.
  double clip_grad_norm(double max_norm);
  // Sets train/eval mode on every stage (from rank 0).
  void train(bool on = true) override;
  // Rank 0: the whole model's parameters and buffers, named as the unsplit model's.
  StateDict state_dict_of_all_stages();
  void load_state_dict_into_all_stages(const StateDict& dict);
  // Rank 0: the other stages' optimizer states ("stage<s>.<name>"), and loading them back
  // (the names travel on the control channel, the tensors on the communicator).
  TensorMap optimizer_state_of_other_stages();
  void load_optimizer_state_of_other_stages(const TensorMap& state);
  // Rank 0: every stage's default random generator (the one Dropout draws from), as int64
  // [stages, 2] rows of (seed, offset), row s from rank s; and setting every stage's but
  // rank 0's from such rows (rank 0's is the training loop's own "rng." entry). Both on
  // the control channel.
  Tensor generators_of_all_stages();
  void load_generators_into_other_stages(const Tensor& generators);
  // On rank 0 the same as the two above (strict), so checkpoints and the best model of the
  // training loop cover every stage; on the other ranks, this stage's.
  StateDict state_dict() const override;
  LoadResult load_state_dict(const StateDict& dict, bool strict = true) override;
  // Pipeline x data parallelism: `replicas` connects this stage with the same stage of the
  // other replicas (each replica is a pipeline with its own communicator and its own control
  // channel, its rank 0 training on its shard of the data). Called on every rank before
  // training; PipelineSync then sums gradients and statistics over the replicas.
  void set_replicas(Communicator* replicas);
  Communicator* replicas() const { return replicas_; }
  // Rank 0: every stage's gradients, sums over the examples of this replica's step (the
  // backward seeded with n), become their mean over the examples of all replicas: summed
  // over the replicas (each stage with a DataParallelSync over its own parameters: buckets,
  // the gradients left as views of them) and divided by `examples` summed over the replicas.
  // `examples`: this replica's, since the last step.
  void average_gradients(double examples);

  // Rank 0: ends the other ranks' serve().
  void stop();
  // Tears down this rank's communicators, so that the other ranks fail at their next message
  // instead of waiting for their timeout (after an error); on rank 0 it also tells the
  // serving ranks, whose serve() then throws.
  void abort();

  // Ranks > 0: answers rank 0 until it calls stop(). `optimizer` steps this stage.
  void serve(Optimizer& optimizer);

  int stage() const { return comm_.rank(); }
  int num_stages() const { return comm_.size(); }
  // The most micro-batches whose activations this stage held at once in the last
  // train_step (rank 0: its own stage), for tests of the schedules' memory.
  size_t peak_passes() const { return peak_passes_; }

 private:
  struct Message {
    int peer;
    std::string name;  // "" for the main activation
  };
  // One forward's graph on this stage, kept for its backward.
  struct Pass {
    std::vector<Variable> inputs;   // received (leaves), in receive order
    Variable output;                // the stage's main output
    std::map<std::string, Variable> kept;  // named outputs of this stage
  };
  // Sends in flight and the tensors they read, waited for at the end of an operation.
  struct Outbox {
    std::vector<std::shared_ptr<Work>> works;
    std::vector<int> peers;  // by work
    std::vector<Tensor> keep;
    void wait();
  };
  friend class PipelineBackward;
  friend class StageWorker;  // serve()'s handling of each of rank 0's commands

  static constexpr int kActivations = 0, kGradients = 1;  // the two kinds of links
  Communicator& to(int peer, int kind) { return *out_[kind].at(peer); }
  Communicator& from(int peer, int kind) { return *in_[kind].at(peer); }
  void send(const Tensor& t, int peer, int kind, Outbox& outbox);
  Tensor receive(int peer, int kind);
  // Tells every other rank what to do next, on the control channel: a StageCommand
  // encoded by encode_stage_command (stage_command.h).
  void command(const distributed::Command& encoded);
  // Rank 0: every other stage's answer to the last command (decoded, checked to be of the
  // kind that command asks for, by the caller).
  std::vector<Bytes> gather_replies(const char* what);
  // A serving rank: rank 0's learning rates, sent with a Step, into `optimizer`.
  void set_learning_rates(Optimizer& optimizer, const std::vector<double>& lrs);
  // This stage's layers on `input` (and the received named outputs).
  Pass run_stage(Variable input, std::map<std::string, Variable> received);
  void send_outputs(const Pass& pass, Outbox& outbox);
  // A serving rank's part of one micro-batch.
  void worker_forward(bool grad, int64_t id, Outbox& outbox);
  void worker_backward(int64_t id, Outbox& outbox);
  void worker_train_step(int64_t micro_batches, Schedule schedule, BatchNormStatistics statistics);
  // Around the micro-batches of one step: this stage's BatchNorm layers defer their
  // running statistics (PerStep with more than one micro-batch) and update them once.
  void begin_micro_batches(int64_t count, BatchNormStatistics statistics);
  void end_micro_batches();
  // Runs backward from what `pass` sent on, with the gradients received for it.
  void backward_from_sent(Pass& pass, std::vector<Tensor> grads);
  // The gradients of rank 0's sent activations, for PipelineBackward.
  std::vector<Variable> driver_backward(const Variable& grad_output);
  double local_square_norm() const;
  // This stage's part of average_gradients.
  void average_own_gradients(double examples);
  std::vector<std::pair<std::string, Tensor>> stage_state(int stage) const;
  void note_passes();

  Communicator& comm_;
  ControlEndpoint control_;
  Milliseconds timeout_;  // for a serving rank's wait for the next command
  Device device_;
  std::vector<StagedLayer> layers_;
  std::vector<int> stage_of_;  // by layer
  std::vector<size_t> starts_;
  std::map<std::string, int> producer_stage_;
  // What this stage receives and sends in a forward, in order (the backward mirrors it).
  std::vector<Message> receives_, sends_;
  // Links to and from other ranks, by kind.
  std::map<int, std::unique_ptr<Communicator>> out_[2], in_[2];
  std::map<int64_t, Pass> passes_;  // by micro-batch
  int64_t micro_batches_ = 1;                // of forward()
  Communicator* replicas_ = nullptr;         // this stage in the other replicas
  std::unique_ptr<DataParallelSync> replica_gradients_;  // over replicas_, when set
  std::vector<int64_t> micro_batch_sizes_;   // of the last forward(), for its backward
  BatchNormStatistics batch_norm_statistics_ = BatchNormStatistics::PerStep;
  bool deferring_statistics_ = false;         // between begin_ and end_micro_batches
  size_t peak_passes_ = 0;
  bool stopped_ = false;
};

// A pipeline described by rank 0 and built on every rank (the seed's host/worker set-up):
// rank 0 calls distribute_pipeline with the description, the other ranks join_pipeline
// and receive it. Every rank builds the layers from `seed` (so all start from rank 0's
// initial weights), keeps its stage and makes its own optimizer from `optimizer`.
struct PipelineDescription {
  std::vector<LayerSpec> layers;
  std::vector<size_t> stage_starts;  // empty: stages of about equal parameter counts
  OptimizerSpec optimizer;
  uint64_t seed = 0;
  // One example's shape and dtype: when given, rank 0 runs two zero examples through the
  // whole model before anything is distributed, so that a layer that does not fit its input
  // refuses the description (on every rank) before training.
  Shape input_shape;
  DType input_dtype = DType::Float32;
};
struct DistributedPipeline {
  std::shared_ptr<PipelineModel> model;
  std::unique_ptr<Optimizer> optimizer;  // this stage's
  PipelineDescription description;
};
// Checks the description (layout, layer arguments, shapes) and hands it to every rank on the
// control channel; a refusal is raised on every rank with the same message. Descriptions
// travel as text of at most 16 MiB, checked before anything is allocated.
DistributedPipeline distribute_pipeline(Communicator& comm, ControlEndpoint control,
                                        const PipelineDescription& description, Device device,
                                        Milliseconds timeout = std::chrono::seconds(30));
DistributedPipeline join_pipeline(Communicator& comm, ControlEndpoint control, Device device,
                                  Milliseconds timeout = std::chrono::seconds(30));

// Rank 0 training a PipelineModel in the Trainer or the epochs loop: its gradient reducer
// (every stage's gradients averaged, over the replicas when there are some), its step policy
// (the optimizer step also steps the other stages, clipping takes the norm over all stages)
// and its metrics (over the replicas).
class PipelineSync final : public GradientReducer, public StepPolicy, public ReplicaMetrics {
 public:
  // `optimizer`: stage 0's, whose learning rates (the loop's schedule sets them) every
  // other stage takes at each step.
  PipelineSync(PipelineModel& model, const Optimizer& optimizer) : model_(model), optimizer_(optimizer) {}
  int64_t ranks() const override { return model_.replicas() ? model_.replicas()->size() : 1; }
  std::vector<double> sum(std::vector<double> values) override;
  int64_t max(int64_t value) override;
  void clip(const std::vector<Variable>&, double max_norm) override { model_.clip_grad_norm(max_norm); }
  void after_step() override { model_.step_other_stages(optimizer_); }
  // The other stages' optimizer states ("stage<s>.*") and every stage's random generator
  // ("generators": Dropout on any stage) travel in checkpoints as the policy's state, so a
  // resumed run continues bit for bit. A checkpoint without "generators" (older ones)
  // leaves the stages' generators as they are.
  TensorMap state_dict() const override;
  void load_state_dict(const TensorMap& state) override;

 protected:
  void start(double examples, int64_t) override { examples_ = examples; }
  // Without replicas, this replica's own examples; with replicas the count is not known
  // before the backward (the stages reduce it with their gradients).
  Tensor count_before_backward() override;
  // Every stage's sums become means (PipelineModel::average_gradients).
  void reduce(double examples, bool divide) override {
    if (divide) model_.average_gradients(examples);
  }

 private:
  PipelineModel& model_;
  const Optimizer& optimizer_;
  double examples_ = 0;  // this replica's in the armed group
};

// The epochs loop (wick/train/loop.h: validation, best model, schedules, accumulation,
// checkpoints of every stage's parameters) over a PipelineModel: on rank 0 it trains with
// `optimizer` (stage 0's); on the other ranks it serves with theirs until rank 0 calls
// model->stop() (or drops the model), and returns an empty state. Checkpoints hold every
// stage's parameters and optimizer state, so a resume is exact.
// `loss` and the streams matter only on rank 0 (the others may pass {} and null).
LoopState fit_pipeline(const std::shared_ptr<PipelineModel>& model, const LossFunction& loss, Optimizer& optimizer,
                       BatchStream* train, BatchStream* validation, LoopOptions options, bool count_correct = false);

}  // namespace wick::distributed
