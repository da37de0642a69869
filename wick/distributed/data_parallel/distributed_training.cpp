#include <wick/distributed/data_parallel/distributed_training.h>

#include <bit>
#include <cstring>
#include <exception>
#include <sstream>
#include <thread>

#include <wick/distributed/control/control_message.h>
#include <wick/distributed/data_parallel/daso.h>
#include <wick/distributed/data_parallel/sharded_sync.h>
#include <wick/distributed/comm/host_staged_communicator.h>
#include <wick/distributed/control/in_process_control.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick::distributed {
namespace {

Bytes encode_doubles(const std::vector<double>& values) {
  Bytes out(values.size() * sizeof(double));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}
std::vector<double> decode_doubles(const Bytes& bytes, const char* what) {
  WICK_CHECK(bytes.size() % sizeof(double) == 0, "follow_distributed_training: malformed ", what, " command (",
             bytes.size(), " bytes)");
  std::vector<double> out(bytes.size() / sizeof(double));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// The setup the driver sends first: the Trainer settings every rank must share, then the
// optimizer state's layout ("name dtype dims..." per line) for the broadcast that follows.
// A rank's default generator, as (seed, offset).
using GeneratorState = std::pair<uint64_t, uint64_t>;

Bytes encode_generator_state() {
  const Generator& g = default_generator();
  return PayloadWriter().u64(g.seed()).u64(g.offset()).take();
}

GeneratorState decode_generator_state(const Bytes& bytes) {
  PayloadReader r(bytes, "a follower's generator state");
  const uint64_t seed = r.u64();
  const uint64_t offset = r.u64();
  r.expect_end();
  return {seed, offset};
}

struct Setup {
  int64_t accumulate = 1;
  double clip_grad_norm = 0;
  bool blocking = true;
  // The precision, and with float16 the driver's loss scaler (its state after any resume:
  // scale, growth count and options), which every replica must start from.
  Precision precision = Precision::Float32;
  TensorMap scaler;
  // When resuming: every rank's generator as it was at the checkpoint ([0] unused); empty
  // otherwise, and each rank keeps its own.
  std::vector<GeneratorState> generators;
  std::vector<std::pair<std::string, Tensor>> optimizer_layout;  // zero tensors of the right shape

  Bytes encode() const {
    std::ostringstream s;
    s.precision(17);
    s << accumulate << ' ' << clip_grad_norm << ' ' << blocking << ' ' << static_cast<int>(precision) << ' '
      << scaler.size();
    for (const auto& [key, value] : scaler) s << ' ' << key << ' ' << value.item<double>();
    s << ' ' << generators.size();
    for (const auto& [seed, offset] : generators) s << ' ' << seed << ' ' << offset;
    s << ' ' << optimizer_layout.size() << '\n';
    for (const auto& [name, t] : optimizer_layout) {
      s << name << ' ' << static_cast<int>(t.dtype()) << ' ' << t.dim();
      for (int64_t d : t.shape()) s << ' ' << d;
      s << '\n';
    }
    std::string text = s.str();
    return Bytes(text.begin(), text.end());
  }
  static Setup decode(const Bytes& bytes, Device device) {
    std::istringstream s(std::string(bytes.begin(), bytes.end()));
    Setup out;
    size_t g = 0, n = 0, entries = 0;
    int precision = 0;
    s >> out.accumulate >> out.clip_grad_norm >> out.blocking >> precision >> entries;
    WICK_CHECK(s && precision >= 0 && precision <= 2 && entries <= 16,
               "follow_distributed_training: malformed setup command");
    out.precision = static_cast<Precision>(precision);
    for (size_t i = 0; i < entries && s; ++i) {
      std::string key;
      double value = 0;
      s >> key >> value;
      out.scaler[key] = scalar_tensor(value, DType::Float64);
    }
    s >> g;
    WICK_CHECK(s && g <= (1u << 20), "follow_distributed_training: malformed setup command");
    out.generators.resize(g);
    for (auto& [seed, offset] : out.generators) s >> seed >> offset;
    s >> n;
    for (size_t i = 0; i < n && s; ++i) {
      std::string name;
      int dtype = 0;
      int64_t dims = 0;
      s >> name >> dtype >> dims;
      Shape shape(static_cast<size_t>(std::max<int64_t>(dims, 0)));
      for (auto& d : shape) s >> d;
      if (s) out.optimizer_layout.emplace_back(name, zeros(shape, Options(static_cast<DType>(dtype), device)));
    }
    WICK_CHECK(s && out.optimizer_layout.size() == n, "follow_distributed_training: malformed setup command");
    return out;
  }
};

// The driver's optimizer state on the communicator's device, in a fixed order.
std::vector<std::pair<std::string, Tensor>> optimizer_state_for_broadcast(const Optimizer& optimizer, Device device) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : optimizer.state_dict())
    if (name.rfind("state.", 0) == 0) out.emplace_back(name, t.to(device).contiguous().clone());
  return out;
}

void broadcast_tensors(Communicator& comm, std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::shared_ptr<Work>> works;
  for (auto& [name, t] : named) works.push_back(comm.broadcast({t}, 0));
  wait_all(works);
}

class DrivingLoop final : public TrainingLoop {
 public:
  DrivingLoop(DriverChannel& control, Communicator& comm, SupervisedModel& model, Optimizer& optimizer,
              BatchSource& train, BatchSource* validation, const LoopOptions& options, DistributedSync& sync,
              Milliseconds timeout)
      : TrainingLoop(model, optimizer, train, validation, options, sync),
        control_(control),
        comm_(comm),
        sync_(sync),
        timeout_(timeout),
        setup_{options.trainer.accumulate, options.trainer.clip_grad_norm, options.trainer.blocking, {}, {}} {}

 private:
  // Dropout draws from each rank's own generator: the followers' must be in the checkpoint
  // too, or a resumed job would not continue as the uninterrupted one.
  void after_train(int64_t) override {
    std::vector<Bytes> states = control_.gather(timeout_);
    generators_.assign(states.size(), {0, 0});
    for (std::size_t r = 1; r < states.size(); ++r) generators_[r] = decode_generator_state(states[r]);
  }
  TensorMap replica_state() const override {
    if (generators_.empty()) return {};
    std::vector<int64_t> flat;
    for (const auto& [seed, offset] : generators_) {
      flat.push_back(std::bit_cast<int64_t>(seed));
      flat.push_back(std::bit_cast<int64_t>(offset));
    }
    return {{"generators", tensor<int64_t>(flat, {static_cast<int64_t>(generators_.size()), 2})}};
  }
  void load_replica_state(const TensorMap& state) override {
    auto it = state.find("generators");
    if (it == state.end()) return;  // a checkpoint of one process
    const Tensor& t = it->second;
    WICK_CHECK(t.dtype() == DType::Int64 && t.dim() == 2 && t.shape()[1] == 2,
               "load_checkpoint: replicas.generators must be an int64 [ranks, 2] tensor, got ", shape_str(t.shape()));
    // Saved by a job with another number of ranks: the ranks start their own generators.
    if (t.shape()[0] != control_.world_size()) return;
    std::vector<int64_t> flat = t.to_vector<int64_t>();
    generators_.clear();
    for (std::size_t i = 0; i + 1 < flat.size(); i += 2)
      generators_.emplace_back(std::bit_cast<uint64_t>(flat[i]), std::bit_cast<uint64_t>(flat[i + 1]));
    setup_.generators = generators_;
  }
  void before_first_epoch() override {
    auto state = optimizer_state_for_broadcast(optimizer_, comm_.device());
    setup_.optimizer_layout = state;
    setup_.precision = trainer().options().precision;
    setup_.scaler = trainer().state_dict();
    control_.broadcast({CommandType::Custom, setup_.encode()});
    sync_.broadcast_parameters(0);
    sync_.broadcast_buffers(0);
    broadcast_tensors(comm_, state);
  }
  void before_train(int64_t epoch, const std::vector<double>& lrs) override {
    // A sharded checkpoint's files are named by the epochs trained when they are written.
    if (auto* sharded = dynamic_cast<ShardedSync*>(&sync_)) sharded->set_checkpoint_generation(epoch + 1);
    std::vector<double> payload{static_cast<double>(epoch)};
    payload.insert(payload.end(), lrs.begin(), lrs.end());
    control_.broadcast({CommandType::Train, encode_doubles(payload)});
  }
  void before_validate(int64_t epoch) override {
    control_.broadcast({CommandType::Validate, encode_doubles({static_cast<double>(epoch)})});
    sync_.broadcast_buffers(0);
  }
  void after_last_epoch() override {
    control_.broadcast({CommandType::Stop, {}});
    sync_.broadcast_parameters(0);
    sync_.broadcast_buffers(0);
  }

  DriverChannel& control_;
  Communicator& comm_;
  DistributedSync& sync_;
  Milliseconds timeout_;
  Setup setup_;
  std::vector<GeneratorState> generators_;  // every rank's after the last epoch's training; [0] unused
};

// Plain data parallelism, sharded (ZeRO-1/2), or DASO, as the options ask.
std::unique_ptr<DistributedSync> make_sync(Communicator& comm, Store& store, Module& module, Optimizer* optimizer,
                                           const DataParallelOptions& parallel) {
  if (parallel.shard != ShardStrategy::None) {
    WICK_CHECK(optimizer != nullptr, "sharded data parallelism (shard=", shard_strategy_name(parallel.shard),
               "): every rank needs its optimizer, built like the driver's");
    return std::make_unique<ShardedSync>(comm, module, *optimizer, parallel.shard, parallel);
  }
  WICK_CHECK(!parallel.param_dtype, "data parallelism without sharding: param_dtype (",
             dtype_name(parallel.param_dtype.value_or(DType::Float32)),
             ") gathers full sharding's units in 16 bits; plain data parallelism keeps whole float32 parameters "
             "(use autocast alone: TrainerOptions::precision, or shard=full)");
  if (!parallel.daso) return std::make_unique<DataParallelSync>(comm, module, parallel);
  WICK_CHECK(!parallel.only_driver_steps,
             "DASO: every rank steps its own optimizer (only_driver_steps is not "
             "supported)");
  WICK_CHECK(!parallel.reduce_dtype,
             "DASO: reduce_dtype compresses plain data parallelism; DASO sends 16 bits "
             "with DasoOptions::downcast_type");
  return std::make_unique<DasoSync>(comm, store, module, *parallel.daso, node_topology(comm),
                                    parallel.group_timeout.value_or(std::chrono::minutes(5)));
}

void check_world(int channel_size, const Communicator& comm, const char* who) {
  WICK_CHECK(channel_size == comm.size(), who, ": the control channel has ", channel_size,
             " ranks but the communicator has ", comm.size());
}

}  // namespace

LoopState drive_distributed_training(DriverChannel& control, Communicator& comm, SupervisedModel& model,
                                     Optimizer& optimizer, BatchSource& train, BatchSource* validation,
                                     LoopOptions options, DataParallelOptions parallel) {
  check_world(control.world_size(), comm, "drive_distributed_training");
  WICK_CHECK(comm.rank() == 0, "drive_distributed_training: runs on rank 0, this is rank ", comm.rank());
  // The wrapped modules' 16-bit parameters meet float32 activations: autocast casts them.
  WICK_CHECK(!parallel.param_dtype || options.trainer.precision != Precision::Float32,
             "drive_distributed_training: param_dtype (", dtype_name(parallel.param_dtype.value_or(DType::Float32)),
             ") computes the shard_units in 16 bits under autocast; set TrainerOptions::precision to bf16 or fp16 "
             "(the model's float32 activations would meet 16-bit weights)");
  std::unique_ptr<DistributedSync> sync = make_sync(comm, control.store(), *model.module, &optimizer, parallel);
  WICK_CHECK(parallel.state_dict_type == StateDictType::Full || parallel.shard != ShardStrategy::None,
             "drive_distributed_training: state_dict_type=Sharded writes the slices of sharded training; "
             "shard=none has none (each rank holds the whole state)");
  // The checkpoint goes through the driver: it gathers the sharded optimizer state for it,
  // or (sharded checkpoints) writes its file once every rank wrote its slices.
  if (auto* sharded = dynamic_cast<ShardedSync*>(sync.get())) {
    const bool shards = parallel.state_dict_type == StateDictType::Sharded;
    sharded->consolidate_for_checkpoints(!options.checkpoint_path.empty() && !shards);
    sharded->set_checkpoint(options.checkpoint_path, shards);
    if (shards && !options.checkpoint_path.empty())
      // The loop calls on_epoch after its checkpoint is written: only then may the files
      // of the generation before go.
      options.on_epoch = [sharded, user = std::move(options.on_epoch)](const CurvePoint& point) {
        sharded->checkpoint_complete();
        if (user) user(point);
      };
  }
  DrivingLoop loop(control, comm, model, optimizer, train, validation, options, *sync, parallel.timeout);
  try {
    return loop.run();
  } catch (...) {
    // Followers blocked in a collective must not wait for their timeout as well.
    comm.abort();
    throw;
  }
}

void follow_distributed_training(FollowerChannel& control, Communicator& comm, SupervisedModel& model,
                                 Optimizer* optimizer, BatchSource& train, BatchSource* validation,
                                 DataParallelOptions parallel) {
  check_world(control.world_size(), comm, "follow_distributed_training");
  WICK_CHECK(comm.rank() == control.rank(), "follow_distributed_training: the control channel says rank ",
             control.rank(), " but the communicator says ", comm.rank());
  std::unique_ptr<DistributedSync> sync_owner = make_sync(comm, control.store(), *model.module, optimizer, parallel);
  DistributedSync& sync = *sync_owner;
  try {
    Command first = control.receive(parallel.timeout);
    WICK_CHECK(first.type == CommandType::Custom, "follow_distributed_training: expected the driver's setup, got ",
               command_type_name(first.type));
    Setup setup = Setup::decode(first.payload, comm.device());
    if (!setup.generators.empty()) {
      WICK_CHECK(setup.generators.size() == static_cast<std::size_t>(comm.size()),
                 "follow_distributed_training: the setup has generator states for ", setup.generators.size(),
                 " ranks, the job has ", comm.size());
      const auto& [seed, offset] = setup.generators[static_cast<std::size_t>(comm.rank())];
      default_generator().set_state(seed, offset);
    }
    sync.broadcast_parameters(0);
    sync.broadcast_buffers(0);
    broadcast_tensors(comm, setup.optimizer_layout);
    if (optimizer != nullptr && !setup.optimizer_layout.empty()) {
      TensorMap state;
      for (auto& [name, t] : setup.optimizer_layout) state[name] = t;
      optimizer->load_state_dict(state);
    }
    TrainerOptions trainer_options;
    trainer_options.accumulate = setup.accumulate;
    trainer_options.clip_grad_norm = setup.clip_grad_norm;
    trainer_options.blocking = setup.blocking;
    trainer_options.progress = Progress::Style::Off;
    trainer_options.precision = setup.precision;
    Trainer trainer(model, optimizer, sync, trainer_options);
    trainer.load_state_dict(setup.scaler);  // the driver's scale, growth count and options
    while (true) {
      Command c = control.receive(parallel.timeout);
      if (c.type == CommandType::Train) {
        std::vector<double> v = decode_doubles(c.payload, "Train");
        WICK_CHECK(!v.empty(), "follow_distributed_training: empty Train command");
        if (optimizer != nullptr) {
          WICK_CHECK(v.size() - 1 == optimizer->num_groups(), "follow_distributed_training: the driver has ",
                     v.size() - 1, " parameter groups, this rank's optimizer ", optimizer->num_groups());
          for (size_t g = 0; g + 1 < v.size(); ++g) optimizer->set_lr(g, v[g + 1]);
        }
        trainer.train_epoch(train, static_cast<int64_t>(v[0]));
        control.send_to_driver(encode_generator_state());
      } else if (c.type == CommandType::Validate) {
        std::vector<double> v = decode_doubles(c.payload, "Validate");
        WICK_CHECK(v.size() == 1, "follow_distributed_training: malformed Validate command");
        sync.broadcast_buffers(0);
        // The driver validates on its shard too; a rank without a validation stream
        // still takes part in the sums with nothing.
        if (validation != nullptr) {
          trainer.evaluate(*validation, static_cast<int64_t>(v[0]));
        } else {
          sync.sum({0, 0, 0});
        }
      } else if (c.type == CommandType::Stop) {
        sync.broadcast_parameters(0);
        sync.broadcast_buffers(0);
        return;
      } else {
        throw Error(std::string("follow_distributed_training: unexpected command ") + command_type_name(c.type));
      }
    }
  } catch (...) {
    comm.abort();
    throw;
  }
}

LoopState local_data_parallel_training(std::vector<LocalReplica>& replicas, const OptimizerFactory& make_optimizer,
                                       LoopOptions options, DataParallelOptions parallel) {
  const int n = static_cast<int>(replicas.size());
  WICK_CHECK(n >= 1, "local_data_parallel_training: no replicas");
  WICK_CHECK(!parallel.daso,
             "local_data_parallel_training: DASO needs ranks laid out on nodes (processes under "
             "wickrun); one process has one node");
  auto device_of = [&](int r) { return replicas[r].model.module->parameters().at(0).device(); };
  bool mixed = false;
  for (int r = 0; r < n; ++r) {
    WICK_CHECK(replicas[r].model.module && replicas[r].train,
               "local_data_parallel_training: every replica needs a model and a train stream");
    mixed = mixed || device_of(r).type != device_of(0).type;
  }
  InProcessControl control(n);
  std::vector<std::unique_ptr<Optimizer>> optimizers(n);
  for (int r = 0; r < n; ++r) optimizers[r] = make_optimizer(*replicas[r].model.module);
  std::vector<std::exception_ptr> errors(n);
  LoopState result;
  auto run_rank = [&](int r, std::unique_ptr<DriverChannel> driver, std::unique_ptr<FollowerChannel> follower) {
    try {
      // One kind of device: Gloo or NCCL directly. CPU and GPU replicas together: Gloo,
      // with the GPU replicas' tensors staged through host memory.
      Device device = device_of(r);
      std::unique_ptr<Communicator> comm = mixed ? std::make_unique<HostStagedCommunicator>(
                                                       make_communicator(control.store(), r, n, Device::cpu()), device)
                                                 : make_communicator(control.store(), r, n, device);
      if (r == 0)
        result = drive_distributed_training(*driver, *comm, replicas[0].model, *optimizers[0], *replicas[0].train,
                                            replicas[0].validation, options, parallel);
      else
        follow_distributed_training(*follower, *comm, replicas[r].model, optimizers[r].get(), *replicas[r].train,
                                    replicas[r].validation, parallel);
    } catch (...) {
      errors[r] = std::current_exception();
    }
    // Dropping the channel endpoints here tells the other ranks this one is gone.
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < n; ++r) threads.emplace_back(run_rank, r, nullptr, control.follower(r));
  run_rank(0, control.driver(), nullptr);
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return result;
}

}  // namespace wick::distributed
