// Sharded data parallelism (ZeRO-1: optimizer state; ZeRO-2: + gradients; full: + each
// block's parameters), ranks as threads over Gloo: the GPT example trains to DDP's
// parameters (float64, accumulation, clipping, a learning-rate schedule, several padded
// units), each rank's model state at 4 ranks is the share of DDP's that ZeRO promises,
// counted exactly from the tensors, and full sharding gathers and releases each block on
// schedule.
#include <wick/autograd/autocast.h>
#include <wick/distributed/comm/in_process_store.h>
#include <wick/distributed/comm/metered_communicator.h>
#include <wick/distributed/data_parallel/distributed_training.h>
#include <wick/distributed/data_parallel/sharded_checkpoint.h>
#include <wick/distributed/data_parallel/sharded_sync.h>
#include <wick/data/data_loader.h>
#include <wick/data/token_dataset.h>
#include <wick/optim/adam.h>
#include <wick/optim/sgd.h>
#include <wick/tensor/cpu_memory_stats.h>
#include <wick/tensor/safetensors.h>
#include <wick/train/trainer.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unistd.h>
#include <cstdio>
#include <thread>

#include "examples/gpt/model.h"
#include <wick/tensor/cuda.h>

#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using wick::test::expect_error;

examples::GPTConfig tiny_gpt() { return {.vocab_size = 32, .block_size = 8, .n_layer = 2, .n_head = 2, .n_embd = 8}; }

std::vector<Tensor> parameters_of(Module& m) {
  std::vector<Tensor> out;
  for (const Variable& p : m.parameters()) out.push_back(p.data().clone());
  return out;
}

// Trains `world` replicas of the tiny GPT in float64 for `epochs` epochs of 10 optimizer
// steps (accumulating 2 batches each, clipped to a norm of 0.05, the epochs after the first at
// 0.3 times the learning rate) and returns each replica's parameters. With `sgd`: SGD with
// momentum and no clipping instead (AdamW after clipping hardly sees the gradients' scale:
// a sum left undivided would change its result only through eps). With `cuda`: replica r on
// cuda:r, over NCCL (the simulator's in CI). With `checkpoint`: written after every epoch
// and resumed from when it exists.
struct GptRun {
  int world = 2;
  ShardStrategy shard = ShardStrategy::None;
  bool sgd = false, cuda = false;
  int64_t epochs = 2;
  std::string checkpoint;
  bool fp32 = false;                    // float32 parameters instead of float64
  bool bf16 = false;                    // and under bfloat16 autocast
  std::string import_model;             // a safetensors file every replica's model loads before training
  std::string export_model;             // rank 0's model saved here (safetensors, by the module's names) after
  bool checkpoint_activations = false;  // each block recomputed in backward (wick::checkpoint)
  examples::GPT::ShardUnit units = examples::GPT::ShardUnit::Block;  // full sharding's shard_units (and zero_units')
  std::optional<DType> reduce_dtype;                                 // DataParallelOptions::reduce_dtype
  std::optional<DType> param_dtype;                                  // DataParallelOptions::param_dtype (full sharding)
  bool sharded_checkpoint = false;  // StateDictType::Sharded: every rank writes its slices
  int killed_rank = -1;             // this rank throws when its epoch `killed_in_epoch` starts
  int64_t killed_in_epoch = -1;
  bool zero_units = false;  // ZeRO-1/2 with `units` as shard_units (Full always has them)
};

// A rank that dies: its batch source throws when the epoch starts.
class Dies final : public BatchSource {
 public:
  Dies(BatchSource& inner, int64_t epoch) : inner_(inner), epoch_(epoch) {}
  int64_t num_batches() const override { return inner_.num_batches(); }
  void start_epoch(int64_t epoch) override {
    if (epoch == epoch_) throw Error("this rank was killed");
    inner_.start_epoch(epoch);
  }
  std::optional<Batch> next() override { return inner_.next(); }

 private:
  BatchSource& inner_;
  int64_t epoch_;
};

std::vector<std::vector<Tensor>> train_gpt(const GptRun& run) {
  const int world = run.world;
  const ShardStrategy shard = run.shard;
  const bool sgd = run.sgd, cuda = run.cuda;
  const int64_t global_batch = 8, steps = 10, accumulate = 2;
  Generator text_generator(5);
  const Tensor text = randint(0, tiny_gpt().vocab_size, {2000}, Options(DType::Int64), &text_generator);
  auto windows = std::make_shared<TokenWindows>(text.to(DType::UInt8), tiny_gpt().block_size, true);
  auto set = subset(windows, 0, global_batch * steps * accumulate);
  std::vector<std::shared_ptr<examples::GPT>> models;
  std::vector<std::unique_ptr<DataLoader>> loaders;
  std::vector<std::unique_ptr<BatchSource>> batches;
  std::vector<LocalReplica> replicas;
  // The models keep their generator (checkpointing replays its draws): it lives as they do.
  std::deque<Generator> inits;
  for (int r = 0; r < world; ++r) {
    Generator& init = inits.emplace_back(11);
    const Device device = cuda ? Device::cuda(r) : Device::cpu();
    examples::GPTConfig config = tiny_gpt();
    config.checkpoint_activations = run.checkpoint_activations;
    models.push_back(std::make_shared<examples::GPT>(
        config, Options(run.fp32 || run.bf16 ? DType::Float32 : DType::Float64), &init));
    if (!run.import_model.empty()) models.back()->load_state_dict(StateDict(load_safetensors(run.import_model)));
    models.back()->to(device);
    loaders.push_back(std::make_unique<DataLoader>(
        set, DataLoaderOptions{.batch_size = global_batch / world,
                               .seed = 3,
                               .sampler = std::make_shared<DistributedSampler>(set->size(), r, world, true, 3),
                               .device = device}));
    batches.push_back(std::make_unique<DataLoaderBatches>(*loaders.back()));
    if (r == run.killed_rank) batches.push_back(std::make_unique<Dies>(*batches.back(), run.killed_in_epoch));
    replicas.push_back({custom_model(models.back(),
                                     [](Module& m, const Batch& b) -> StepOutput {
                                       return {static_cast<examples::GPT&>(m).loss(b.inputs, b.targets), {}};
                                     }),
                        batches.back().get(), nullptr});
  }
  LoopOptions options;
  options.max_epochs = run.epochs;
  options.checkpoint_path = run.checkpoint;
  options.resume = !run.checkpoint.empty();
  options.log_epochs = false;
  options.lr_factor = [](int64_t epoch, std::optional<double>) { return epoch == 0 ? 1.0 : 0.3; };
  options.trainer.progress = Progress::Style::Off;
  options.trainer.accumulate = accumulate;
  if (run.bf16) options.trainer.precision = Precision::BFloat16;
  options.trainer.clip_grad_norm = sgd ? 0.0 : 0.05;
  auto make_adamw = [sgd](Module& m) -> std::unique_ptr<Optimizer> {
    if (sgd) return std::make_unique<SGD>(m.named_parameters(), SGDOptions{.lr = 0.05, .momentum = 0.9});
    return std::make_unique<AdamW>(m.named_parameters(), AdamOptions{.lr = 1e-2, .weight_decay = 0.1});
  };
  // Small units: several per group, each padded to the world size. Full: each block a unit.
  local_data_parallel_training(
      replicas, make_adamw, options,
      {.bucket_bytes = 2048,
       .reduce_dtype = run.reduce_dtype,
       .shard = shard,
       .shard_units = shard == ShardStrategy::Full || run.zero_units ? models[0]->shard_units(run.units)
                                                                     : std::vector<std::string>{},
       .state_dict_type = run.sharded_checkpoint ? StateDictType::Sharded : StateDictType::Full,
       .param_dtype = run.param_dtype});
  if (!run.export_model.empty()) save_safetensors(run.export_model, models[0]->state_dict().to_map());
  std::vector<std::vector<Tensor>> out;
  for (auto& m : models) out.push_back(parameters_of(*m));
  for (auto& replica : out)
    for (Tensor& t : replica) t = t.to(Device::cpu());
  return out;
}

std::vector<std::vector<Tensor>> train_gpt(int world, ShardStrategy shard, bool sgd = false, bool cuda = false) {
  return train_gpt(GptRun{.world = world, .shard = shard, .sgd = sgd, .cuda = cuda});
}

double max_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1e-3, max(abs(a[i])).item<double>());
    worst = std::max(worst, max(abs(a[i] - b[i])).item<double>() / scale);
  }
  return worst;
}

void expect_trains_like_ddp(int world) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::vector<Tensor>> ddp = train_gpt(world, ShardStrategy::None);
  Generator init(11);
  examples::GPT untrained(tiny_gpt(), Options(DType::Float64), &init);
  ASSERT_GT(max_relative_difference(ddp[0], parameters_of(untrained)), 1e-3) << "DDP did not train";
  double worst = 0;
  // ZeRO-1/2 with the blocks as shard_units: each block's gather after the step waited for
  // as its forward starts; without: every gather before the forward.
  for (auto [shard, units] : {std::pair{ShardStrategy::Optimizer, false},
                              {ShardStrategy::Optimizer, true},
                              {ShardStrategy::Gradients, false},
                              {ShardStrategy::Gradients, true},
                              {ShardStrategy::Full, true}}) {
    SCOPED_TRACE(std::string(shard_strategy_name(shard)) + (units ? " with shard_units" : ""));
    const std::vector<std::vector<Tensor>> sharded =
        train_gpt(GptRun{.world = world, .shard = shard, .zero_units = units});
    for (int r = 0; r < world; ++r) {
      // Only the order of float64 sums differs (Gloo's ring, the clipping norm by slices).
      const double d = max_relative_difference(ddp[0], sharded[static_cast<size_t>(r)]);
      EXPECT_LT(d, 1e-10) << "rank " << r;
      worst = std::max(worst, d);
    }
  }
  std::printf(
      "%d ranks: every rank of ZeRO-1 and ZeRO-2 (with and without shard_units) and full sharding within %.1e "
      "(relative) of DDP; the six runs in %.1f s\n",
      world, worst, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

TEST(ShardedSync, TrainsTheGptLikeDdpOnTwoRanks) { expect_trains_like_ddp(2); }
TEST(ShardedSync, TrainsTheGptLikeDdpOnFourRanks) { expect_trains_like_ddp(4); }

TEST(ShardedSync, SgdWithoutClippingTrainsLikeDdp) {
  const std::vector<std::vector<Tensor>> ddp = train_gpt(2, ShardStrategy::None, /*sgd=*/true);
  Generator init(11);
  examples::GPT untrained(tiny_gpt(), Options(DType::Float64), &init);
  ASSERT_GT(max_relative_difference(ddp[0], parameters_of(untrained)), 1e-3) << "DDP did not train";
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    const std::vector<std::vector<Tensor>> sharded = train_gpt(2, shard, /*sgd=*/true);
    for (size_t r = 0; r < sharded.size(); ++r)
      EXPECT_LT(max_relative_difference(ddp[0], sharded[r]), 1e-10) << "rank " << r;
  }
}

// The same on GPUs: NCCL's all-reduce, reduce-scatter and all-gather, CUDA's fused AdamW.
TEST(ShardedSync, TrainsTheGptLikeDdpOverNccl) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices (the simulator has them)";
  // ZeRO-2 only: its collectives (reduce-scatter, all-gather) include ZeRO-1's all-gather, and
  // ZeRO-1's all-reduce is DDP's; with and without shard_units (the gathers after the step
  // waited for, on the stream, as each block starts or before the forward).
  // One epoch (10 steps): the simulator runs every kernel on the CPU.
  const auto ddp = train_gpt(GptRun{.world = 2, .cuda = true, .epochs = 1});
  for (auto [shard, units] :
       {std::pair{ShardStrategy::Gradients, false}, {ShardStrategy::Gradients, true}, {ShardStrategy::Full, true}}) {
    SCOPED_TRACE(std::string(shard_strategy_name(shard)) + (units ? " with shard_units" : ""));
    const auto sharded = train_gpt(GptRun{.world = 2, .shard = shard, .cuda = true, .epochs = 1, .zero_units = units});
    for (size_t r = 0; r < sharded.size(); ++r)
      EXPECT_LT(max_relative_difference(ddp[0], sharded[r]), 1e-10) << "rank " << r;
  }
}

// A scratch checkpoint path, removed when it goes.
struct ScratchCheckpoint {
  std::string path;
  explicit ScratchCheckpoint(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("wick-" + name + "-" + std::to_string(::getpid()) + ".ckpt"))
                 .string()) {
    std::filesystem::remove(path);
  }
  ~ScratchCheckpoint() { std::filesystem::remove(path); }
};

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].shape() != b[i].shape() || !all(eq(a[i], b[i])).item<bool>()) return false;
  return true;
}

// The driver's checkpoint holds the optimizer state gathered from every rank's slices; a
// run of 1 epoch resumed to 2 ends where 2 uninterrupted epochs do, bit for bit.
TEST(ShardedSync, ResumesFromItsCheckpointBitForBit) {
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    const auto whole = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2});
    ScratchCheckpoint ckpt(std::string("resume-") + shard_strategy_name(shard));
    train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 1, .checkpoint = ckpt.path});
    ASSERT_TRUE(std::filesystem::exists(ckpt.path));
    const auto resumed = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2, .checkpoint = ckpt.path});
    for (size_t r = 0; r < resumed.size(); ++r) EXPECT_TRUE(same_bits(whole[0], resumed[r])) << "rank " << r;
  }
}

// Units do not depend on the world size: 4 ranks' checkpoint resumes on 2, and ends where 2
// ranks do without interruption (to the order of the first epoch's sums).
TEST(ShardedSync, ACheckpointOfFourRanksResumesOnTwo) {
  for (ShardStrategy shard : {ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    const auto whole = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2});
    ScratchCheckpoint ckpt(std::string("reshard-") + shard_strategy_name(shard));
    train_gpt(GptRun{.world = 4, .shard = shard, .epochs = 1, .checkpoint = ckpt.path});
    const auto resumed = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2, .checkpoint = ckpt.path});
    for (size_t r = 0; r < resumed.size(); ++r)
      EXPECT_LT(max_relative_difference(whole[0], resumed[r]), 1e-10) << "rank " << r;
  }
}

// Activation checkpointing inside the units: each block's forward runs again in backward,
// after the hook on its output's gradient gathered its parameters again.
TEST(ShardedSync, FullShardWithActivationCheckpointingTrainsLikeDdp) {
  const auto ddp = train_gpt(GptRun{.world = 2});
  const auto sharded = train_gpt(GptRun{.world = 2, .shard = ShardStrategy::Full, .checkpoint_activations = true});
  for (size_t r = 0; r < sharded.size(); ++r)
    EXPECT_LT(max_relative_difference(ddp[0], sharded[r]), 1e-10) << "rank " << r;
}

// Each block's attention and MLP layers as units (the blocks' norms then stay whole, as the
// root's parameters), with and without the blocks checkpointed around them.
TEST(ShardedSync, FullShardOfSublayersTrainsLikeDdp) {
  const auto ddp = train_gpt(GptRun{.world = 2});
  for (bool checkpoint : {false, true}) {
    SCOPED_TRACE(checkpoint ? "checkpointed blocks" : "no checkpointing");
    const auto sharded = train_gpt(GptRun{.world = 2,
                                          .shard = ShardStrategy::Full,
                                          .checkpoint_activations = checkpoint,
                                          .units = examples::GPT::ShardUnit::Sublayer});
    for (size_t r = 0; r < sharded.size(); ++r)
      EXPECT_LT(max_relative_difference(ddp[0], sharded[r]), 1e-10) << "rank " << r;
  }
}

// The whole model of a sharded job is a plain state dict (ZeRO-1 and ZeRO-2 shard the
// optimizer state and gradients, not the parameters): exported as safetensors by 4 ranks, it
// is what DDP trained to, and a 2-rank sharded job started from it trains as DDP started from it.
TEST(ShardedSync, ItsModelExportsAsSafetensorsAndAnotherShardedJobStartsFromIt) {
  ScratchCheckpoint exported("export"), from_ddp("export-ddp");
  const auto sharded =
      train_gpt(GptRun{.world = 4, .shard = ShardStrategy::Gradients, .epochs = 1, .export_model = exported.path});
  const auto ddp = train_gpt(GptRun{.world = 4, .epochs = 1, .export_model = from_ddp.path});
  const TensorMap file = load_safetensors(exported.path), ddp_file = load_safetensors(from_ddp.path);
  ASSERT_EQ(file.size(), ddp_file.size());
  for (const auto& [name, t] : file) {
    ASSERT_TRUE(ddp_file.count(name)) << name;
    EXPECT_LT(max_relative_difference({t}, {ddp_file.at(name)}), 1e-10) << name;
  }
  const auto resumed_sharded =
      train_gpt(GptRun{.world = 2, .shard = ShardStrategy::Optimizer, .epochs = 1, .import_model = exported.path});
  const auto resumed_ddp = train_gpt(GptRun{.world = 2, .epochs = 1, .import_model = exported.path});
  ASSERT_GT(max_relative_difference(resumed_ddp[0], sharded[0]), 1e-6) << "the second job did not train";
  for (size_t r = 0; r < resumed_sharded.size(); ++r)
    EXPECT_LT(max_relative_difference(resumed_ddp[0], resumed_sharded[r]), 1e-10) << "rank " << r;
}

TEST(ShardedSync, CheckpointsOfShardedAndWholeOptimizerStateDoNotMix) {
  ScratchCheckpoint whole("unsharded");
  train_gpt(GptRun{.world = 2, .epochs = 1, .checkpoint = whole.path});
  expect_error(
      [&] { train_gpt(GptRun{.world = 2, .shard = ShardStrategy::Optimizer, .epochs = 2, .checkpoint = whole.path}); },
      {"the checkpoint is of unsharded training", "resume it without sharding"});
  ScratchCheckpoint sharded("sharded");
  train_gpt(GptRun{.world = 2, .shard = ShardStrategy::Optimizer, .epochs = 1, .checkpoint = sharded.path});
  expect_error([&] { train_gpt(GptRun{.world = 2, .epochs = 2, .checkpoint = sharded.path}); },
               {"state of another data-parallel scheme", "sync.unit"});
}

// float32, and float32 under bfloat16 autocast: the same within their rounding.
TEST(ShardedSync, TrainsLikeDdpInFloat32AndUnderBf16Autocast) {
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 autocast" : "float32");
    const auto ddp = train_gpt(GptRun{.world = 2, .fp32 = true, .bf16 = bf16});
    for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
      SCOPED_TRACE(shard_strategy_name(shard));
      const auto sharded = train_gpt(GptRun{.world = 2, .shard = shard, .fp32 = true, .bf16 = bf16});
      for (size_t r = 0; r < sharded.size(); ++r) {
        const double d = max_relative_difference(ddp[0], sharded[r]);
        // Measured: 7.6e-6 in float32, 7.8e-3 (two bfloat16 steps of a cast flipped by a
        // float32 ulp) under autocast; a wrong step is off by 0.1 and more.
        if (r == 0)
          std::printf("%s, %s: within %.1e of DDP\n", bf16 ? "bf16 autocast" : "float32", shard_strategy_name(shard),
                      d);
        EXPECT_LT(d, bf16 ? 2e-2 : 2e-5) << "rank " << r;
      }
    }
  }
}

// Gradients reduced in 16 bits (reduce_dtype): each one rounded once into its unit, each
// sum rounded once, widened into float32 shards: what DDP's compressed buckets do.
TEST(ShardedSync, ReducesInReduceDtypeAsDdpDoes) {
  const auto ddp32 = train_gpt(GptRun{.world = 2, .fp32 = true});
  for (DType dtype : {DType::BFloat16, DType::Float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto ddp = train_gpt(GptRun{.world = 2, .fp32 = true, .reduce_dtype = dtype});
    const double rounding = max_relative_difference(ddp32[0], ddp[0]);
    for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
      SCOPED_TRACE(shard_strategy_name(shard));
      const auto sharded = train_gpt(GptRun{.world = 2, .shard = shard, .fp32 = true, .reduce_dtype = dtype});
      for (size_t r = 0; r < sharded.size(); ++r) {
        const double d = max_relative_difference(ddp[0], sharded[r]);
        if (r == 0)
          std::printf(
              "reduce_dtype %s, %s: within %.1e of DDP with the same reduce_dtype; DDP's own compression moved "
              "it %.1e from float32\n",
              dtype_name(dtype), shard_strategy_name(shard), d, rounding);
        // Measured 7.5e-6 (bf16: ZeRO-1/2), 5.9e-5 (fp16) and 1.1e-4 (full): float32's
        // differences (the order of the norm's sums) sometimes flip a 16-bit rounding.
        // Reduced in float32 instead, it would be `rounding` away (0.44 and 4.0e-3).
        EXPECT_LT(d, 3e-4) << "rank " << r;
      }
    }
    EXPECT_GT(rounding, 3e-3) << "the 16-bit reduction changed little: the test would not see it ignored";
  }
}

// Runs `body(rank, communicator)` on `world` threads over Gloo.
void on_ranks(int world, const std::function<void(int, Communicator&)>& body) {
  InProcessStore store;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        auto comm = make_communicator(store, r, world, Device::cpu(), std::chrono::seconds(30));
        body(r, *comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

int64_t bytes_of_state(const Optimizer& o) {
  int64_t b = 0;
  for (const auto& [key, t] : o.state_dict())
    if (key.rfind("state.", 0) == 0) b += static_cast<int64_t>(t.nbytes());
  return b;
}

// Per-rank model state (parameters + gradients + AdamW's moments, float32) at 4 ranks as a
// share of DDP's, counted from the tensors each keeps between steps.
TEST(ShardedSync, ModelStateAtFourRanksIsZerosShareOfDdps) {
  const examples::GPTConfig config{.vocab_size = 64, .block_size = 16, .n_layer = 2, .n_head = 2, .n_embd = 32};
  Tensor idx;
  {
    Generator g(1);
    idx = randint(0, config.vocab_size, {4, 17}, Options(DType::Int64), &g);
  }
  // Returns how many parameters still had a .grad() when backward ended.
  auto step = [&](Module& m, Optimizer& o, GradientReducer& reducer, StepPolicy& policy) {
    GradScaler off({.enabled = false});
    policy.before_forward();
    reducer.arm(4, 0);
    Variable loss = static_cast<examples::GPT&>(m).loss(idx.narrow(1, 0, 16), idx.narrow(1, 1, 16));
    reducer.backward(loss, 4);
    int64_t held = 0;
    for (const Variable& p : m.parameters()) held += p.grad().defined() ? 1 : 0;
    reducer.finish();
    policy.step(&o, off, m.parameters(), 1.0);
    return held;
  };
  // DDP: every rank holds what one process holds, its gradients in the buckets.
  int64_t ddp = 0;
  {
    Generator init(2);
    examples::GPT model(config, {}, &init);
    AdamW opt(model.named_parameters());
    model.loss(idx.narrow(1, 0, 16), idx.narrow(1, 1, 16)).backward();
    opt.step();
    for (const Variable& p : model.parameters()) ddp += 2 * static_cast<int64_t>(p.data().nbytes());
    ddp += bytes_of_state(opt);
  }
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
    std::vector<ShardedSync::StateBytes> bytes(4);
    on_ranks(4, [&](int r, Communicator& comm) {
      Generator init(2);
      examples::GPT model(config, {}, &init);
      AdamW opt(model.named_parameters());
      ShardedSync sync(
          comm, model, opt, shard,
          {.bucket_bytes = 64 * 1024,
           .shard_units = shard == ShardStrategy::Full ? model.shard_units() : std::vector<std::string>{}});
      const int64_t held = step(model, opt, sync, sync);
      // The step returned with every unit's gather (Full: the root's) in flight, each sending
      // a copy of this rank's slice until it is waited for, here before a forward.
      EXPECT_GT(sync.state_bytes().sending, 0);
      sync.before_forward();
      EXPECT_EQ(sync.state_bytes().sending, 0);
      // ZeRO-2: each gradient left autograd's buffer for its unit as soon as it was final.
      if (shard != ShardStrategy::Optimizer) EXPECT_EQ(held, 0);
      // Full: no block whole between steps.
      if (shard == ShardStrategy::Full) EXPECT_EQ(sync.wrapped_gathered(), 0);
      if (shard == ShardStrategy::Gradients) {
        // Small units: after backward, at most one unit's whole gradient left in reduction
        // (reduce_scatters_in_flight); the others were waited for and freed.
        AdamW opt2(model.named_parameters());
        ShardedSync small(comm, model, opt2, shard, {.bucket_bytes = 8 * 1024});
        EXPECT_GT(small.num_units(), 4u);
        small.arm(4, 0);
        small.backward(model.loss(idx.narrow(1, 0, 16), idx.narrow(1, 1, 16)), 4);
        EXPECT_LE(small.whole_gradients_held(), 1u);
        small.finish();
        EXPECT_EQ(small.whole_gradients_held(), 0u);
      }
      bytes[static_cast<size_t>(r)] = sync.state_bytes();
      EXPECT_EQ(bytes_of_state(opt), 0);  // the user's optimizer holds nothing
      // Each kind of slice is one allocation for every unit (the allocator rounds it up once):
      // the moments, and ZeRO-2's and Full's gradient slices.
      const Optimizer& shard_opt = sync.shard_optimizer();
      const NamedParameters& slices = shard_opt.params(0);
      ASSERT_GE(slices.size(), 2u);
      for (const auto& [name, p] : slices) {
        for (const char* buffer : {"exp_avg", "exp_avg_sq"})
          EXPECT_TRUE(
              shard_opt.state_buffer(name, buffer).shares_storage(shard_opt.state_buffer(slices[0].first, buffer)))
              << name << " " << buffer;
        if (shard != ShardStrategy::Optimizer)
          EXPECT_TRUE(p.grad().data().shares_storage(slices[0].second.grad().data())) << name;
      }
    });
    const double ratio = static_cast<double>(bytes[0].total()) / static_cast<double>(ddp);
    std::printf(
        "%s at 4 ranks: %lld bytes per rank (parameters %lld, gradients %lld, optimizer %lld; largest unit "
        "%lld) against DDP's %lld: %.3fx\n",
        shard_strategy_name(shard), static_cast<long long>(bytes[0].total()),
        static_cast<long long>(bytes[0].parameters), static_cast<long long>(bytes[0].gradients),
        static_cast<long long>(bytes[0].optimizer), static_cast<long long>(bytes[0].largest_unit),
        static_cast<long long>(ddp), ratio);
    EXPECT_LE(ratio, shard == ShardStrategy::Optimizer ? 0.65 : shard == ShardStrategy::Gradients ? 0.50 : 0.30);
    for (const auto& b : bytes) EXPECT_EQ(b.total(), bytes[0].total());
  }
}

// Full sharding's schedule on 4 blocks, and the knobs that trade its overlap for memory.
// With the defaults: each block gathered once for its forward and once for its backward,
// every gather but the first of each pass launched ahead by the hook of the block before
// (prefetch), at most two blocks whole at any time, none after the forward nor between
// steps, and at most two blocks' whole gradients at once (one filled by backward, one in
// reduction). Without prefetch and with no reduction in flight: nothing launched ahead,
// one block whole and one block's whole gradient at a time. Either way every rank's
// parameters equal one process's training.
//
// With the sublayers as units (each block's attention and MLP layers: 12 units), the same
// counts per unit. Inside checkpointed blocks the forward of a block's units runs again in
// its backward: each unit is gathered for it (the last one was prefetched by the block
// after) and kept for its backward, which follows, nothing prefetched ahead in that
// recomputation; so a block's backward holds its three units and the prefetched last unit
// of the block before.
struct Schedule {
  DataParallelOptions knobs;
  examples::GPT::ShardUnit units = examples::GPT::ShardUnit::Block;
  bool checkpoint = false;
};

void expect_full_shard_schedule(const Schedule& schedule) {
  const DataParallelOptions& knobs = schedule.knobs;
  examples::GPTConfig config{.vocab_size = 32, .block_size = 8, .n_layer = 4, .n_head = 2, .n_embd = 16};
  config.checkpoint_activations = schedule.checkpoint;
  Tensor idx;
  {
    Generator g(1);
    idx = randint(0, config.vocab_size, {4, 9}, Options(DType::Int64), &g);
  }
  const int64_t steps = 3;
  std::vector<Tensor> single;
  {
    Generator init(2);
    examples::GPT model(config, Options(DType::Float64), &init);
    AdamW opt(model.named_parameters(), AdamOptions{.lr = 1e-2});
    for (int64_t s = 0; s < steps; ++s) {
      opt.zero_grad();
      model.loss(idx.narrow(1, 0, 8), idx.narrow(1, 1, 8)).backward();
      opt.step();
    }
    single = parameters_of(model);
  }
  const bool prefetch = knobs.forward_prefetch && knobs.backward_prefetch;
  const bool sublayers = schedule.units == examples::GPT::ShardUnit::Sublayer;
  const int64_t units = sublayers ? 12 : 4;
  std::vector<std::vector<Tensor>> trained(2);
  on_ranks(2, [&](int r, Communicator& comm) {
    Generator init(2);
    examples::GPT model(config, Options(DType::Float64), &init);
    AdamW opt(model.named_parameters(), AdamOptions{.lr = 1e-2});
    DataParallelOptions options = knobs;
    options.shard_units = model.shard_units(schedule.units);
    ShardedSync sync(comm, model, opt, ShardStrategy::Full, options);
    GradScaler off({.enabled = false});
    const Tensor mine = idx.narrow(0, 2 * r, 2);
    for (int64_t s = 0; s < steps; ++s) {
      sync.reset_gather_stats();
      sync.before_forward();  // the root's units, gathered after the last step
      sync.arm(2, 0);
      Variable loss = model.loss(mine.narrow(1, 0, 8), mine.narrow(1, 1, 8));
      EXPECT_EQ(sync.wrapped_gathered(), 0) << "a unit kept whole after its forward";
      const ShardedSync::GatherStats forward = sync.gather_stats();
      EXPECT_EQ(forward.gathers, units);
      EXPECT_EQ(forward.prefetched, prefetch ? units - 1 : 0);
      sync.backward(loss, 2);
      sync.finish();
      sync.step(&opt, off, model.parameters(), /*max_norm=*/0.0);
      const ShardedSync::GatherStats all = sync.gather_stats();
      if (schedule.checkpoint) {
        // Backward: the last block's three units gathered for its recomputation; every
        // other block's first two (its last was prefetched), and the prefetch of each
        // block's last unit but the last block's.
        EXPECT_EQ(all.gathers, units + 3 + 3 * 2 + 3);
        EXPECT_EQ(all.prefetched, units - 1 + 3);
        EXPECT_EQ(all.most_gathered, 4);
      } else {
        EXPECT_EQ(all.gathers, 2 * units);
        EXPECT_EQ(all.prefetched, prefetch ? 2 * (units - 1) : 0);
        EXPECT_EQ(all.most_gathered, prefetch ? 2 : 1);
      }
      // The root's unit (embeddings, final norm) is whole from ln_f's gradient, the first, to
      // wte's, the last; besides it, the unit backward fills and those in reduction. A
      // checkpointed block's backward gives all its units' gradients at once.
      EXPECT_EQ(all.most_whole_gradients, knobs.reduce_scatters_in_flight + (schedule.checkpoint ? 4 : 2));
      EXPECT_EQ(sync.wrapped_gathered(), 0);
    }
    sync.end_epoch(0);  // the model whole again
    trained[static_cast<size_t>(r)] = parameters_of(model);
  });
  for (size_t r = 0; r < trained.size(); ++r) EXPECT_LT(max_relative_difference(single, trained[r]), 1e-10);
}

// A sharded checkpoint's files (the driver's and every generation's shards), removed when it goes.
struct ScratchShardedCheckpoint {
  ScratchCheckpoint main;
  explicit ScratchShardedCheckpoint(const std::string& name) : main(name) { remove_shards(); }
  ~ScratchShardedCheckpoint() { remove_shards(); }
  const std::string& path() const { return main.path; }
  // The generations whose files of rank 0 exist.
  std::vector<int64_t> generations() const {
    std::vector<int64_t> out;
    for (int64_t g = 0; g < 10; ++g)
      if (std::filesystem::exists(shard_checkpoint_file(main.path, g, 0))) out.push_back(g);
    return out;
  }
  void remove_shards() const {
    for (int64_t g = 0; g < 10; ++g)
      for (int64_t r = 0; r < 8; ++r) std::filesystem::remove_all(shard_checkpoint_file(main.path, g, r));
  }
};

int64_t generation_in(const std::string& path) {
  return load_safetensors(path).at("sync.sharded.generation").to(DType::Int64).item<int64_t>();
}

// Full sharding's sharded checkpoint of the tiny GPT (float64) by `world` ranks: the driver's
// file holds the root's parameters whole (the embeddings, the final norm) and no block's;
// each rank's file holds its padded slice of every block's parameters (each block a unit),
// so the ranks' files hold the blocks' bytes once, with the padding, and each file's size is
// its slices' bytes and a header.
void expect_blocks_only_in_rank_files(const std::string& path, int64_t generation, int world) {
  Generator init(11);
  const examples::GPT model(tiny_gpt(), Options(DType::Float64), &init);
  const std::vector<std::string> units = model.shard_units();
  auto block_of = [&](const std::string& name) {
    for (size_t b = 0; b < units.size(); ++b)
      if (name.rfind(units[b] + ".", 0) == 0) return static_cast<int64_t>(b);
    return int64_t{-1};
  };
  std::vector<int64_t> block_numel(units.size(), 0);
  std::set<std::string> block_parameters;
  for (const auto& [name, p] : model.named_parameters())
    if (block_of(name) >= 0) {
      block_numel[static_cast<size_t>(block_of(name))] += p.numel();
      block_parameters.insert(name);
    }
  ASSERT_FALSE(block_parameters.empty());
  const TensorMap driver = load_safetensors(path);
  int64_t root_bytes = 0, driver_model_bytes = 0;
  for (const auto& [name, t] : model.state_dict()) {
    const bool in_block = block_parameters.count(name) > 0;
    EXPECT_EQ(driver.count("model." + name), in_block ? 0u : 1u) << name;
    if (!in_block) root_bytes += static_cast<int64_t>(t.nbytes());
  }
  for (const auto& [key, t] : driver)
    if (key.rfind("model.", 0) == 0) driver_model_bytes += static_cast<int64_t>(t.nbytes());
  EXPECT_EQ(driver_model_bytes, root_bytes);
  EXPECT_EQ(driver.at("sync.sharded.values").to(DType::Int64).item<int64_t>(), static_cast<int64_t>(units.size()));
  int64_t padded_blocks = 0;
  for (int64_t n : block_numel) padded_blocks += (n + world - 1) / world * world;
  int64_t values_bytes = 0;
  for (int r = 0; r < world; ++r) {
    const std::string file = shard_checkpoint_file(path, generation, r);
    const SafetensorsIndex index = read_safetensors_index(file);
    int64_t data = 0, values = 0;
    for (const SafetensorsEntry& e : index.tensors) {
      const int64_t bytes = numel_of(e.shape) * static_cast<int64_t>(element_size(e.dtype));
      data += bytes;
      if (e.name.size() > 7 && e.name.compare(e.name.size() - 7, 7, ".values") == 0) values += bytes;
    }
    EXPECT_EQ(values, padded_blocks / world * static_cast<int64_t>(sizeof(double))) << file;
    const auto size = static_cast<int64_t>(std::filesystem::file_size(file));
    EXPECT_GT(size, data) << file;
    EXPECT_LT(size, data + 16384) << file << ": more than its slices and a header";
    values_bytes += values;
  }
  EXPECT_EQ(values_bytes, padded_blocks * static_cast<int64_t>(sizeof(double)));
}

// Every rank writes its slices of the optimizer state (no rank gathers them), and with full
// sharding its slices of the blocks' parameters; a run of 1 epoch resumed to 2 ends where 2
// uninterrupted epochs do, bit for bit, and once the second generation's checkpoint is
// complete the first one's files are gone. Full: a job resumed from the checkpoint without
// training further has on every rank the whole model the first run ended with.
TEST(ShardedSync, ShardedCheckpointsResumeBitForBit) {
  // ZeRO-2 also with the blocks as shard_units: whole on every rank, in no rank file.
  for (auto [shard, units] : {std::pair{ShardStrategy::Optimizer, false},
                              {ShardStrategy::Gradients, false},
                              {ShardStrategy::Gradients, true},
                              {ShardStrategy::Full, true}}) {
    SCOPED_TRACE(std::string(shard_strategy_name(shard)) + (units ? " with shard_units" : ""));
    const auto whole = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2, .zero_units = units});
    ScratchShardedCheckpoint ckpt(std::string("sharded-resume-") + shard_strategy_name(shard) +
                                  (units ? "-units" : ""));
    const auto first = train_gpt(GptRun{.world = 2,
                                        .shard = shard,
                                        .epochs = 1,
                                        .checkpoint = ckpt.path(),
                                        .sharded_checkpoint = true,
                                        .zero_units = units});
    ASSERT_EQ(generation_in(ckpt.path()), 1);
    EXPECT_EQ(ckpt.generations(), std::vector<int64_t>{1});
    EXPECT_TRUE(std::filesystem::exists(shard_checkpoint_file(ckpt.path(), 1, 1)));
    // The driver's file holds no optimizer state: the slices are in the ranks' files.
    for (const auto& [key, t] : load_safetensors(ckpt.path()))
      EXPECT_TRUE(key.rfind("optimizer.state", 0) != 0 && key.find("exp_avg") == std::string::npos) << key;
    if (shard == ShardStrategy::Full) {
      expect_blocks_only_in_rank_files(ckpt.path(), 1, 2);
      const auto loaded = train_gpt(
          GptRun{.world = 2, .shard = shard, .epochs = 1, .checkpoint = ckpt.path(), .sharded_checkpoint = true});
      for (size_t r = 0; r < loaded.size(); ++r) EXPECT_TRUE(same_bits(first[0], loaded[r])) << "rank " << r;
    }
    const auto resumed = train_gpt(GptRun{.world = 2,
                                          .shard = shard,
                                          .epochs = 2,
                                          .checkpoint = ckpt.path(),
                                          .sharded_checkpoint = true,
                                          .zero_units = units});
    for (size_t r = 0; r < resumed.size(); ++r) EXPECT_TRUE(same_bits(whole[0], resumed[r])) << "rank " << r;
    EXPECT_EQ(generation_in(ckpt.path()), 2);
    EXPECT_EQ(ckpt.generations(), std::vector<int64_t>{2});
  }
}

// Resharding: the sharded checkpoint of 4 ranks resumes on 2 (each rank reads its ranges
// from the files that hold them) exactly as 2 ranks resume from the same checkpoint
// consolidated into one file (FULL_STATE_DICT), and on 3 (where the new slices start inside
// the old ones); the model exported from it as safetensors is the model the 4 ranks ended
// with, which a sharded job imports.
TEST(ShardedSync, AShardedCheckpointOfFourRanksResumesOnTwoAsItsConsolidatedForm) {
  for (ShardStrategy shard : {ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    ScratchShardedCheckpoint saved(std::string("sharded-reshard-") + shard_strategy_name(shard));
    ScratchCheckpoint consolidated(std::string("consolidated-") + shard_strategy_name(shard));
    ScratchCheckpoint trained_model("trained-model"), exported("exported-model");
    train_gpt(GptRun{.world = 4,
                     .shard = shard,
                     .epochs = 1,
                     .checkpoint = saved.path(),
                     .export_model = trained_model.path,
                     .sharded_checkpoint = true});
    consolidate_sharded_checkpoint(saved.path(), consolidated.path);
    export_model_state_dict(saved.path(), exported.path);
    {
      // The model of the consolidated checkpoint is the one exported from the slices.
      ScratchCheckpoint from_consolidated("exported-consolidated");
      export_model_state_dict(consolidated.path, from_consolidated.path);
      const TensorMap a = load_safetensors(from_consolidated.path), b = load_safetensors(exported.path);
      ASSERT_EQ(a.size(), b.size());
      for (const auto& [name, t] : a) {
        ASSERT_TRUE(b.count(name)) << name;
        EXPECT_TRUE(same_bits({t}, {b.at(name)})) << name;
      }
    }
    for (int world : {2, 3}) {
      SCOPED_TRACE("resumed on " + std::to_string(world));
      // Copies: a resumed run writes its own checkpoints over the one it resumed from.
      ScratchShardedCheckpoint shards("sharded-reshard-copy");
      ScratchCheckpoint full("consolidated-copy");
      std::filesystem::copy_file(consolidated.path, full.path);
      std::filesystem::copy_file(saved.path(), shards.path());
      for (int r = 0; r < 4; ++r)
        std::filesystem::copy_file(shard_checkpoint_file(saved.path(), 1, r),
                                   shard_checkpoint_file(shards.path(), 1, r));
      const auto from_full = train_gpt(GptRun{.world = world, .shard = shard, .epochs = 2, .checkpoint = full.path});
      const auto from_shards = train_gpt(
          GptRun{.world = world, .shard = shard, .epochs = 2, .checkpoint = shards.path(), .sharded_checkpoint = true});
      for (size_t r = 0; r < from_shards.size(); ++r)
        EXPECT_TRUE(same_bits(from_full[0], from_shards[r])) << "rank " << r;
      if (world == 2) {
        // And within the order of the first epoch's sums of 2 ranks trained without a stop.
        const auto whole = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2});
        EXPECT_LT(max_relative_difference(whole[0], from_shards[0]), 1e-10);
      }
    }

    const TensorMap model = load_safetensors(exported.path), expected = load_safetensors(trained_model.path);
    ASSERT_EQ(model.size(), expected.size());
    for (const auto& [name, t] : expected) {
      ASSERT_TRUE(model.count(name)) << name;
      EXPECT_TRUE(same_bits({model.at(name)}, {t})) << name;
    }
    const auto imported = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 1, .import_model = exported.path});
    const auto imported_ddp = train_gpt(GptRun{.world = 2, .epochs = 1, .import_model = exported.path});
    EXPECT_LT(max_relative_difference(imported_ddp[0], imported[0]), 1e-10);
  }
}

// The optimizer state of a sharded checkpoint by parameter name (FSDP's full optimizer
// state dict) is DDP's optimizer state: each unit's buffers cut at its parameters, in their
// shapes, under the names a plain optimizer keys them by, which it loads.
TEST(ShardedSync, AShardedCheckpointsOptimizerStateExportsByParameterAsDdpsIs) {
  ScratchCheckpoint ddp("ddp-optimizer"), exported("exported-optimizer");
  train_gpt(GptRun{.world = 4, .epochs = 1, .checkpoint = ddp.path});
  TensorMap expected;
  for (const auto& [key, t] : load_safetensors(ddp.path))
    if (key.rfind("optimizer.", 0) == 0) expected.emplace(key.substr(10), t);
  for (ShardStrategy shard : {ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    ScratchShardedCheckpoint saved(std::string("sharded-optimizer-") + shard_strategy_name(shard));
    train_gpt(GptRun{.world = 4, .shard = shard, .epochs = 1, .checkpoint = saved.path(), .sharded_checkpoint = true});
    export_optimizer_state_dict(saved.path(), exported.path);
    const TensorMap state = load_safetensors(exported.path);
    ASSERT_EQ(state.size(), expected.size());
    for (const auto& [key, t] : expected) {
      ASSERT_TRUE(state.count(key)) << key;
      ASSERT_EQ(state.at(key).shape(), t.shape()) << key;
      EXPECT_LT(max_relative_difference({state.at(key).to(DType::Float64)}, {t.to(DType::Float64)}), 1e-10) << key;
    }
    Generator init(11);
    examples::GPT model(tiny_gpt(), Options(DType::Float64), &init);
    AdamW plain(model.named_parameters(), AdamOptions{.lr = 1e-2, .weight_decay = 0.1});
    plain.load_state_dict(state);
  }
  expect_error([&] { export_optimizer_state_dict(ddp.path, exported.path); },
               {"export_optimizer_state_dict", "is not a sharded checkpoint"});
}

// All or nothing: when one rank cannot write its file, every rank stops naming it, the
// driver's file still names the previous generation, whose files are all there, and the
// restart resumes from it as if nothing had happened.
void expect_incomplete_checkpoint_leaves_the_previous_one(ShardStrategy shard) {
  const auto whole = train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2});
  ScratchShardedCheckpoint ckpt("sharded-incomplete");
  train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 1, .checkpoint = ckpt.path(), .sharded_checkpoint = true});
  // Rank 1's file of generation 2 cannot be put in place: a folder holds its name.
  const std::string blocked = shard_checkpoint_file(ckpt.path(), 2, 1);
  std::filesystem::create_directories(blocked + "/x");
  expect_error(
      [&] {
        train_gpt(
            GptRun{.world = 2, .shard = shard, .epochs = 2, .checkpoint = ckpt.path(), .sharded_checkpoint = true});
      },
      {"sharded checkpoint", "of generation 2 is incomplete", "rank 1 failed"});
  EXPECT_EQ(generation_in(ckpt.path()), 1);
  EXPECT_TRUE(std::filesystem::exists(shard_checkpoint_file(ckpt.path(), 1, 0)));
  EXPECT_TRUE(std::filesystem::exists(shard_checkpoint_file(ckpt.path(), 1, 1)));
  std::filesystem::remove_all(blocked);
  // Rank 1 killed before it writes anything of epoch 2: the others' collectives fail, and
  // the checkpoint is still the first generation's.
  try {
    train_gpt(GptRun{.world = 2,
                     .shard = shard,
                     .epochs = 2,
                     .checkpoint = ckpt.path(),
                     .sharded_checkpoint = true,
                     .killed_rank = 1,
                     .killed_in_epoch = 1});
    ADD_FAILURE() << "a job with a killed rank finished";
  } catch (const Error& e) {
    std::printf("the killed rank's job stopped with: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(generation_in(ckpt.path()), 1);
  EXPECT_TRUE(std::filesystem::exists(shard_checkpoint_file(ckpt.path(), 1, 1)));
  const auto resumed =
      train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 2, .checkpoint = ckpt.path(), .sharded_checkpoint = true});
  for (size_t r = 0; r < resumed.size(); ++r) EXPECT_TRUE(same_bits(whole[0], resumed[r])) << "rank " << r;
}

TEST(ShardedSync, AnIncompleteShardedCheckpointLeavesThePreviousOne) {
  for (ShardStrategy shard : {ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    expect_incomplete_checkpoint_leaves_the_previous_one(shard);
  }
}

// What is read back is checked against the layout before the state is built: a missing
// file, and a slice of another size, each named with the file and the entry.
TEST(ShardedSync, ShardedCheckpointsRefuseMissingOrMisshapenFiles) {
  const ShardStrategy shard = ShardStrategy::Optimizer;
  ScratchShardedCheckpoint ckpt("sharded-refused");
  train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 1, .checkpoint = ckpt.path(), .sharded_checkpoint = true});
  const std::string file = shard_checkpoint_file(ckpt.path(), 1, 1);
  StringMap meta;
  TensorMap slices = load_safetensors(file, &meta);
  const GptRun resume{.world = 2, .shard = shard, .epochs = 2, .checkpoint = ckpt.path(), .sharded_checkpoint = true};
  std::filesystem::remove(file);
  expect_error([&] { train_gpt(resume); }, {"rank 1's file", file, "is missing"});
  expect_error([&] { consolidate_sharded_checkpoint(ckpt.path(), ckpt.path() + ".full"); }, {file, "is missing"});
  Tensor& first = slices.begin()->second;
  const std::string key = slices.begin()->first;
  first = first.dim() == 0 ? first : zeros({first.numel() + 1}, Options(first.dtype()));
  save_safetensors(file, slices, meta);
  if (slices.begin()->second.dim() == 1) expect_error([&] { train_gpt(resume); }, {file, "'" + key + "' has shape"});
  meta["world"] = "3";
  save_safetensors(file, slices, meta);
  expect_error([&] { train_gpt(resume); }, {file, "has world '3', expected 2"});
}

// Full: a rank file without its slice of a block's parameters, or with one of another size,
// or whose field 'values' places them in fewer units, is refused naming the file and the
// entry, by the resume and by the export; so is a driver's file without a root parameter,
// and a job that does not wrap the blocks.
TEST(ShardedSync, FullShardedCheckpointsRefuseMissingOrMisshapenParameterSlices) {
  const ShardStrategy shard = ShardStrategy::Full;
  ScratchShardedCheckpoint ckpt("sharded-refused-values");
  ScratchCheckpoint exported("sharded-refused-export");
  train_gpt(GptRun{.world = 2, .shard = shard, .epochs = 1, .checkpoint = ckpt.path(), .sharded_checkpoint = true});
  const std::string file = shard_checkpoint_file(ckpt.path(), 1, 1);
  StringMap meta;
  const TensorMap slices = load_safetensors(file, &meta);
  std::string key;
  for (const auto& [name, t] : slices)
    if (name.find(".values") != std::string::npos) key = name;
  ASSERT_FALSE(key.empty()) << "no parameter slice in " << file;
  const GptRun resume{.world = 2, .shard = shard, .epochs = 2, .checkpoint = ckpt.path(), .sharded_checkpoint = true};

  TensorMap changed = slices;
  changed.erase(key);
  save_safetensors(file, changed, meta);
  expect_error([&] { train_gpt(resume); }, {file, "has no '" + key + "'"});
  expect_error([&] { export_model_state_dict(ckpt.path(), exported.path); }, {file, "has no '" + key + "'"});

  changed = slices;
  changed[key] = zeros({slices.at(key).numel() + 1}, Options(slices.at(key).dtype()));
  save_safetensors(file, changed, meta);
  expect_error([&] { train_gpt(resume); }, {file, "'" + key + "' has shape"});
  expect_error([&] { consolidate_sharded_checkpoint(ckpt.path(), ckpt.path() + ".full"); },
               {file, "'" + key + "' has shape"});

  StringMap fewer = meta;
  fewer["values"] = fewer["values"].substr(0, fewer["values"].find('\n') + 1);
  save_safetensors(file, slices, fewer);
  expect_error([&] { train_gpt(resume); }, {file, "places parameters in 1 units, the driver's file says 2"});

  save_safetensors(file, slices, meta);
  expect_error(
      [&] {
        train_gpt(GptRun{.world = 2,
                         .shard = ShardStrategy::Gradients,
                         .epochs = 2,
                         .checkpoint = ckpt.path(),
                         .sharded_checkpoint = true});
      },
      {"rank files hold the parameters of shard=full's units", "shard=gradients"});
  StringMap driver_meta;
  TensorMap driver = load_safetensors(ckpt.path(), &driver_meta);
  driver.erase("model.wte.weight");
  save_safetensors(ckpt.path(), driver, driver_meta);
  expect_error([&] { train_gpt(resume); }, {ckpt.path(), "has no 'model.wte.weight'"});
}

TEST(ShardedSync, FullShardGathersEachBlockAheadOfItsUseAndReleasesIt) { expect_full_shard_schedule({}); }

TEST(ShardedSync, FullShardWithoutPrefetchOrReductionsInFlightHoldsOneBlockAtATime) {
  expect_full_shard_schedule(
      {.knobs = {.forward_prefetch = false, .backward_prefetch = false, .reduce_scatters_in_flight = 0}});
}

TEST(ShardedSync, FullShardOfSublayersGathersEachAheadOfItsUse) {
  expect_full_shard_schedule({.units = examples::GPT::ShardUnit::Sublayer});
  expect_full_shard_schedule(
      {.knobs = {.forward_prefetch = false, .backward_prefetch = false, .reduce_scatters_in_flight = 0},
       .units = examples::GPT::ShardUnit::Sublayer});
}

TEST(ShardedSync, FullShardOfSublayersInsideCheckpointedBlocksKeepsARecomputedUnitForItsBackward) {
  expect_full_shard_schedule({.units = examples::GPT::ShardUnit::Sublayer, .checkpoint = true});
}

// The CPU allocator's peak within a step, per rank at 4 ranks, as a share of DDP's, for a
// GPT whose parameters outweigh its activations (width 128, 4 blocks, one sequence of 8
// tokens per rank). The step's extra memory under full sharding is the blocks gathered, the
// block's gradient being filled and the reductions in flight; before reduce-scatters
// worked in the gradient they consume and at most one stayed in flight, Gloo's copy of
// each and a second one in flight added up to three blocks' worth.
TEST(ShardedSync, FullShardsAllocatorPeakInTheStepAtFourRanks) {
  const examples::GPTConfig config{.vocab_size = 64, .block_size = 8, .n_layer = 4, .n_head = 2, .n_embd = 128};
  Tensor idx;
  {
    Generator g(1);
    idx = randint(0, config.vocab_size, {4, 9}, Options(DType::Int64), &g);
  }
  // The allocator's count is the process's: the ranks are threads, alike and in step, so a
  // rank's share is the count over the ranks.
  using Unit = examples::GPT::ShardUnit;
  auto peak_per_rank = [&](ShardStrategy shard, const DataParallelOptions& knobs, Unit units) {
    std::atomic<int64_t> peak{0};
    on_ranks(4, [&](int r, Communicator& comm) {
      Generator init(2);
      examples::GPT model(config, {}, &init);
      AdamW opt(model.named_parameters());
      std::unique_ptr<DistributedSync> sync;
      if (shard == ShardStrategy::None) sync = std::make_unique<DataParallelSync>(comm, model);
      else {
        DataParallelOptions options = knobs;
        options.shard = shard;
        options.shard_units = model.shard_units(units);
        sync = std::make_unique<ShardedSync>(comm, model, opt, shard, options);
      }
      const Tensor mine = idx.narrow(0, r, 1);
      GradScaler off({.enabled = false});
      for (int step = 0; step < 2; ++step) {  // the first allocates the optimizer's state
        sync->sum({0.0});
        if (r == 0 && step == 1) cpu_reset_peak_memory_stats();
        sync->sum({0.0});
        sync->before_forward();
        sync->arm(1, 0);
        sync->backward(model.loss(mine.narrow(1, 0, 8), mine.narrow(1, 1, 8)), 1);
        sync->finish();
        sync->step(&opt, off, model.parameters(), 0.0);
        opt.zero_grad();
      }
      sync->sum({0.0});
      if (r == 0) peak = static_cast<int64_t>(cpu_memory_stats().peak_allocated) / 4;
      sync->sum({0.0});
    });
    return static_cast<double>(peak.load());
  };
  // The least of three runs: the four rank threads drift apart by chance, which only moves
  // the process's peak away from what the schedule holds.
  auto least_peak = [&](ShardStrategy shard, const DataParallelOptions& knobs, Unit units = Unit::Block) {
    double least = std::numeric_limits<double>::infinity();
    for (int run = 0; run < 3; ++run) least = std::min(least, peak_per_rank(shard, knobs, units));
    return least;
  };
  const double ddp = least_peak(ShardStrategy::None, {});
  const double overlapped = least_peak(ShardStrategy::Full, {}) / ddp;
  const double one_at_a_time =
      least_peak(ShardStrategy::Full,
                 {.forward_prefetch = false, .backward_prefetch = false, .reduce_scatters_in_flight = 0}) /
      ddp;
  const double sublayers = least_peak(ShardStrategy::Full, {}, Unit::Sublayer) / ddp;
  std::printf(
      "full sharding's allocator peak in the step at 4 ranks: %.3fx of DDP's (blocks, prefetch, one reduction in "
      "flight), %.3fx (neither), %.3fx (sublayers, prefetch, one reduction in flight)\n",
      overlapped, one_at_a_time, sublayers);
  // The peak is the process's, over four rank threads whose phases drift: measured 0.41-0.44
  // with the overlap (the code before one reduction in flight: 0.46) and 0.31-0.33 without,
  // on a loaded 2-core machine. The ceilings leave room for that drift; the schedule tests
  // above count the gathers and whole gradients exactly. The ASan+UBSan build (-O1,
  // instrumented) measures higher every time, 0.46-0.47 and 0.36-0.37: there the ceilings
  // are wider, against holding whole blocks everywhere, and the order is checked.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr double kOverlappedCeiling = 0.55, kOneAtATimeCeiling = 0.45;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  constexpr double kOverlappedCeiling = 0.55, kOneAtATimeCeiling = 0.45;
#else
  constexpr double kOverlappedCeiling = 0.47, kOneAtATimeCeiling = 0.36;
#endif
#else
  constexpr double kOverlappedCeiling = 0.47, kOneAtATimeCeiling = 0.36;
#endif
  EXPECT_LE(overlapped, kOverlappedCeiling);
  EXPECT_LE(one_at_a_time, kOneAtATimeCeiling);
  EXPECT_LT(one_at_a_time, overlapped);
  // A third of a block gathered at a time, with the overlap: 0.31 (the 101M benchmark's
  // difference is larger: there the blocks outweigh the activations far more).
  EXPECT_LE(sublayers, kOneAtATimeCeiling);
  EXPECT_LT(sublayers, overlapped);
}

// Float16 with loss scaling: each rank unscales and checks its slices; the found-inf flag is
// combined over the ranks (the Trainer's combiner), so all skip the same steps and keep the
// same scale. Two ranks train the tiny GPT (float32 parameters, float16 autocast, AdamW,
// accumulation, no clipping: see below) with Trainers of their own; `poison` makes one rank's gradient of
// the model's last parameter inf in one backward (that parameter is at the start of the one
// unit, in rank 0's slice: rank 1 finds nothing in its own).
struct Fp16Result {
  std::vector<Tensor> parameters;
  std::vector<double> scales;  // after every batch
};
struct Poison {
  int rank = -1;
  int64_t backward = -1;  // 0-based, over the run
};
std::vector<Fp16Result> train_fp16(ShardStrategy shard, Poison poison = {}) {
  const int world = 2;
  const int64_t global_batch = 8, steps = 10, accumulate = 2;
  Generator text_generator(5);
  const Tensor text = randint(0, tiny_gpt().vocab_size, {2000}, Options(DType::Int64), &text_generator);
  auto windows = std::make_shared<TokenWindows>(text.to(DType::UInt8), tiny_gpt().block_size, true);
  auto set = subset(windows, 0, global_batch * steps * accumulate);
  std::vector<Fp16Result> out(world);
  on_ranks(world, [&](int r, Communicator& comm) {
    Generator init(11);
    auto model = std::make_shared<examples::GPT>(tiny_gpt(), Options(DType::Float32), &init);
    AdamW opt(model->named_parameters(), AdamOptions{.lr = 1e-2, .weight_decay = 0.1});
    std::unique_ptr<DistributedSync> sync;
    if (shard == ShardStrategy::None)
      sync = std::make_unique<DataParallelSync>(comm, *model, DataParallelOptions{.bucket_bytes = 1 << 20});
    else
      sync = std::make_unique<ShardedSync>(
          comm, *model, opt, shard,
          DataParallelOptions{
              .bucket_bytes = 1 << 20,
              .shard = shard,
              .shard_units = shard == ShardStrategy::Full ? model->shard_units() : std::vector<std::string>{}});
    int64_t backwards = 0;
    Variable last = model->parameters().back();
    if (r == poison.rank)
      last.register_hook([&](const Variable& g) {
        if (backwards++ != poison.backward) return Variable();
        return Variable(full(g.shape(), std::numeric_limits<double>::infinity(), g.data().options()));
      });
    DataLoader loader(
        set, DataLoaderOptions{.batch_size = global_batch / world,
                               .seed = 3,
                               .sampler = std::make_shared<DistributedSampler>(set->size(), r, world, true, 3)});
    DataLoaderBatches batches(loader);
    SupervisedModel supervised = custom_model(model, [](Module& m, const Batch& b) -> StepOutput {
      return {static_cast<examples::GPT&>(m).loss(b.inputs, b.targets), {}};
    });
    TrainerOptions options;
    options.progress = Progress::Style::Off;
    options.accumulate = accumulate;
    options.precision = Precision::Float16;
    options.grad_scaler = {.init_scale = 256.0, .growth_interval = 3};
    Trainer* trainer = nullptr;
    options.on_batch = [&](const BatchReport&) { out[r].scales.push_back(trainer->grad_scaler().get_scale()); };
    Trainer t(supervised, &opt, *sync, options);
    trainer = &t;
    for (int64_t epoch = 0; epoch < 2; ++epoch) t.train_epoch(batches, epoch);
    out[r].parameters = parameters_of(*model);
  });
  return out;
}

// Without clipping nothing but the collectives' layout differs from DDP: bit for bit. (With
// clipping the norm's sums run in another order, a float32 ulp that float16 autocast and
// AdamW amplify to 0.36 over 20 steps: Float16StepUnscalesBeforeClippingAsDdp checks
// clipping over two SGD steps instead.)
TEST(ShardedSync, Float16LossScalingSkipsTheSameStepsAsDdp) {
  const auto ddp = train_fp16(ShardStrategy::None);
  Generator init(11);
  examples::GPT untrained(tiny_gpt(), Options(DType::Float32), &init);
  ASSERT_GT(max_relative_difference(ddp[0].parameters, parameters_of(untrained)), 1e-3) << "DDP did not train";
  std::printf("fp16 DDP's scale after each batch:");
  for (double s : ddp[0].scales) std::printf(" %g", s);
  std::printf("\n");
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    const auto sharded = train_fp16(shard);
    for (size_t r = 0; r < sharded.size(); ++r) {
      EXPECT_EQ(sharded[r].scales, ddp[0].scales) << "rank " << r;
      EXPECT_TRUE(same_bits(ddp[0].parameters, sharded[r].parameters)) << "rank " << r;
    }
  }
}

// Float16 with clipping: two SGD steps (linear in the gradient, so a clip coefficient taken
// from the still-scaled gradients would show) with a loss scale of 1024 and a clip that
// applies, every strategy against DDP.
TEST(ShardedSync, Float16StepUnscalesBeforeClippingAsDdp) {
  const examples::GPTConfig config = tiny_gpt();
  Tensor idx;
  {
    Generator g(1);
    idx = randint(0, config.vocab_size, {4, 9}, Options(DType::Int64), &g);
  }
  std::map<ShardStrategy, std::vector<Tensor>> trained;
  for (ShardStrategy shard :
       {ShardStrategy::None, ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full})
    on_ranks(2, [&](int r, Communicator& comm) {
      Generator init(2);
      examples::GPT model(config, {}, &init);
      SGD opt(model.named_parameters(), SGDOptions{.lr = 0.5, .momentum = 0.9});
      std::unique_ptr<DistributedSync> sync;
      if (shard == ShardStrategy::None) sync = std::make_unique<DataParallelSync>(comm, model);
      else
        sync = std::make_unique<ShardedSync>(
            comm, model, opt, shard,
            DataParallelOptions{
                .shard = shard,
                .shard_units = shard == ShardStrategy::Full ? model.shard_units() : std::vector<std::string>{}});
      GradScaler scaler({.init_scale = 1024.0});
      scaler.set_found_inf_combiner([&](Tensor& found) { found.fill_(Scalar(sync->sum({found.item<float>()})[0])); });
      const Tensor mine = idx.narrow(0, 2 * r, 2);
      for (int step = 0; step < 2; ++step) {
        sync->before_forward();
        sync->arm(2, 0);
        Variable loss;
        {
          AutocastGuard autocast(Device::cpu(), DType::Float16);
          loss = model.loss(mine.narrow(1, 0, 8), mine.narrow(1, 1, 8));
        }
        sync->backward(loss, 2, scaler.get_scale());
        sync->finish();
        sync->step(&opt, scaler, model.parameters(), /*max_norm=*/0.3);
        for (const Variable& p : model.parameters()) Variable(p).zero_grad(true);
      }
      sync->end_epoch(0);
      if (r == 0) trained[shard] = parameters_of(model);
    });
  Generator init(2);
  examples::GPT untrained(config, {}, &init);
  ASSERT_GT(max_relative_difference(trained[ShardStrategy::None], parameters_of(untrained)), 1e-2);
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
    const double d = max_relative_difference(trained[ShardStrategy::None], trained[shard]);
    std::printf("fp16, clipped SGD steps, %s: within %.1e of DDP\n", shard_strategy_name(shard), d);
    EXPECT_LT(d, 1e-5) << shard_strategy_name(shard);
  }
}

// ZeRO-1's .grad() shows the whole mean gradient, unscaled after a float16 step as DDP's
// (the scaler unscales this rank's slice; the other ranks' slices are divided too).
TEST(ShardedSync, Zero1GradientsAreUnscaledWholeAfterAFloat16Step) {
  const examples::GPTConfig config = tiny_gpt();
  Tensor idx;
  {
    Generator g(1);
    idx = randint(0, config.vocab_size, {4, 9}, Options(DType::Int64), &g);
  }
  std::vector<std::vector<Tensor>> grads(4);
  for (bool sharded : {false, true})
    on_ranks(2, [&](int r, Communicator& comm) {
      Generator init(2);
      examples::GPT model(config, {}, &init);
      AdamW opt(model.named_parameters());
      std::unique_ptr<DistributedSync> sync;
      if (sharded) sync = std::make_unique<ShardedSync>(comm, model, opt, ShardStrategy::Optimizer);
      else sync = std::make_unique<DataParallelSync>(comm, model);
      GradScaler scaler({.init_scale = 1024.0});
      scaler.set_found_inf_combiner([&](Tensor& found) { found.fill_(Scalar(sync->sum({found.item<float>()})[0])); });
      const Tensor mine = idx.narrow(0, 2 * r, 2);
      sync->arm(2, 0);
      sync->backward(model.loss(mine.narrow(1, 0, 8), mine.narrow(1, 1, 8)), 2, scaler.get_scale());
      sync->finish();
      sync->step(&opt, scaler, model.parameters(), 0.0);
      for (const Variable& p : model.parameters())
        grads[static_cast<size_t>(2 * sharded + r)].push_back(p.grad().data().clone());
    });
  for (size_t r = 0; r < 2; ++r) EXPECT_TRUE(same_bits(grads[r], grads[2 + r])) << "rank " << r;
}

TEST(ShardedSync, AnInfOnOneRankSkipsTheStepOnEveryRank) {
  // Backward 5 is step 2's second (two a step), after which its reduction runs.
  const Poison poison{.rank = 1, .backward = 5};
  const auto ddp = train_fp16(ShardStrategy::None, poison);
  const auto clean = train_fp16(ShardStrategy::None);
  ASSERT_NE(ddp[0].scales, clean[0].scales) << "the poisoned step was not skipped by DDP";
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients, ShardStrategy::Full}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    const auto sharded = train_fp16(shard, poison);
    for (size_t r = 0; r < sharded.size(); ++r) {
      // The scale halved at the same batch on both ranks, and the same step skipped, as DDP's.
      EXPECT_EQ(sharded[r].scales, ddp[0].scales) << "rank " << r;
      EXPECT_TRUE(same_bits(ddp[0].parameters, sharded[r].parameters)) << "rank " << r;
    }
  }
}

// Full sharding with the blocks' parameters gathered and computed in bfloat16 (FSDP's
// MixedPrecisionPolicy(param_dtype=bf16)), float32 master slices stepped, under bf16 autocast.
TEST(ShardedSync, FullShardWithBf16ParametersTrainsLikeDdpUnderBf16Autocast) {
  for (bool sgd : {false, true}) {
    SCOPED_TRACE(sgd ? "SGD" : "AdamW");
    const auto ddp32 = train_gpt(GptRun{.world = 2, .sgd = sgd, .fp32 = true});
    const auto ddp = train_gpt(GptRun{.world = 2, .sgd = sgd, .bf16 = true});
    // What bf16 autocast alone moves DDP's model in these 20 steps: the noise bf16 brings.
    const double spread = max_relative_difference(ddp32[0], ddp[0]);
    const auto full = train_gpt(
        GptRun{.world = 2, .shard = ShardStrategy::Full, .sgd = sgd, .bf16 = true, .param_dtype = DType::BFloat16});
    for (size_t r = 0; r < full.size(); ++r) {
      const double d = max_relative_difference(ddp[0], full[r]);
      std::printf(
          "%s, param_dtype bf16, rank %zu: within %.1e of DDP under bf16 autocast (DDP bf16 vs float32: %.1e)\n",
          sgd ? "SGD" : "AdamW", r, d, spread);
      EXPECT_LT(d, 2 * spread) << "rank " << r;
      for (const Tensor& t : full[r]) EXPECT_EQ(t.dtype(), DType::Float32);  // whole in float32 after training
    }
  }
  // Without autocast the 16-bit weights would meet float32 activations.
  expect_error([] { train_gpt(GptRun{.shard = ShardStrategy::Full, .fp32 = true, .param_dtype = DType::BFloat16}); },
               {"param_dtype", "TrainerOptions::precision"});
  expect_error([] { train_gpt(GptRun{.bf16 = true, .param_dtype = DType::BFloat16}); },
               {"without sharding", "param_dtype", "shard=full"});
}

// The same over NCCL (the simulator's in CI): the 16-bit all-gathers of the blocks and
// their reduce-scatters in bf16 on the devices. One epoch of SGD: the simulator runs every
// kernel on the CPU.
TEST(ShardedSync, FullShardWithBf16ParametersOverNcclTrainsLikeDdp) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices (the simulator has them)";
  const GptRun base{.world = 2, .sgd = true, .cuda = true, .epochs = 1};
  GptRun fp32 = base, bf16 = base, full = base;
  fp32.fp32 = true;
  bf16.bf16 = true;
  full.bf16 = true;
  full.shard = ShardStrategy::Full;
  full.param_dtype = DType::BFloat16;
  const auto ddp32 = train_gpt(fp32);
  const auto ddp = train_gpt(bf16);
  const double spread = max_relative_difference(ddp32[0], ddp[0]);
  const auto sharded = train_gpt(full);
  for (size_t r = 0; r < sharded.size(); ++r) {
    const double d = max_relative_difference(ddp[0], sharded[r]);
    std::printf("NCCL, param_dtype bf16, rank %zu: within %.1e of DDP under bf16 autocast (bf16 vs float32: %.1e)\n", r,
                d, spread);
    EXPECT_LT(d, 2 * spread) << "rank " << r;
    // Float32 parameters under the same autocast train as DDP within 1.6e-7: the 16-bit
    // parameters are what moves the model.
    EXPECT_GT(d, 1e-5) << "rank " << r << ": the blocks did not compute in bf16";
  }
}

// Between epochs the model is whole in float32 (the master slices gathered), so the
// checkpoint of a bf16-parameter run resumes bit for bit, with the blocks' gradients reduced
// in float32 too (FSDP's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=float32)).
// Sharded checkpoints too: the rank files hold the float32 master slices.
TEST(ShardedSync, Bf16ParametersResumeFromTheCheckpointBitForBit) {
  const GptRun run{.world = 2,
                   .shard = ShardStrategy::Full,
                   .epochs = 2,
                   .bf16 = true,
                   .reduce_dtype = DType::Float32,
                   .param_dtype = DType::BFloat16};
  const auto whole = train_gpt(run);
  for (bool sharded : {false, true}) {
    SCOPED_TRACE(sharded ? "sharded checkpoint" : "consolidated checkpoint");
    ScratchShardedCheckpoint ckpt(sharded ? "bf16-parameters-sharded" : "bf16-parameters");
    GptRun first = run;
    first.epochs = 1;
    first.checkpoint = ckpt.path();
    first.sharded_checkpoint = sharded;
    train_gpt(first);
    GptRun resumed_run = first;
    resumed_run.epochs = 2;
    const auto resumed = train_gpt(resumed_run);
    for (size_t r = 0; r < resumed.size(); ++r) EXPECT_TRUE(same_bits(whole[0], resumed[r])) << "rank " << r;
  }
}

// param_dtype halves what the blocks' gathers carry and hold, and the blocks' reduce-scatters
// (their gradients reduced in param_dtype by default).
TEST(ShardedSync, Bf16ParametersHalveTheGathers) {
  const examples::GPTConfig config{.vocab_size = 32, .block_size = 8, .n_layer = 4, .n_head = 2, .n_embd = 16};
  Tensor idx;
  {
    Generator g(1);
    idx = randint(0, config.vocab_size, {4, 9}, Options(DType::Int64), &g);
  }
  std::map<std::string, ShardedSync::GatherStats> stats;
  std::map<std::string, int64_t> payload;
  for (std::optional<DType> dtype : {std::optional<DType>(), std::optional<DType>(DType::BFloat16)}) {
    const std::string name = dtype ? dtype_name(*dtype) : "float32";
    InProcessStore store;
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(2);
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        try {
          MeteredCommunicator comm(make_communicator(store, r, 2, Device::cpu(), std::chrono::seconds(30)));
          Generator init(2);
          examples::GPT model(config, {}, &init);
          AdamW opt(model.named_parameters());
          ShardedSync sync(comm, model, opt, ShardStrategy::Full,
                           {.shard_units = model.shard_units(), .param_dtype = dtype});
          GradScaler off({.enabled = false});
          const Tensor mine = idx.narrow(0, 2 * r, 2);
          sync.arm(2, 0);
          Variable loss;
          {
            AutocastGuard autocast(Device::cpu(), DType::BFloat16);
            loss = model.loss(mine.narrow(1, 0, 8), mine.narrow(1, 1, 8));
          }
          const int64_t before = comm.bytes();
          sync.backward(loss, 2);
          sync.finish();
          sync.step(&opt, off, model.parameters(), 0.0);
          if (r == 0) {
            stats[name] = sync.gather_stats();
            payload[name] = comm.bytes() - before;
          }
        } catch (...) {
          errors[static_cast<size_t>(r)] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    std::printf("%s: %lld gathers of %lld bytes in all; backward and step sent %lld payload bytes\n", name.c_str(),
                static_cast<long long>(stats[name].gathers), static_cast<long long>(stats[name].bytes),
                static_cast<long long>(payload[name]));
  }
  EXPECT_EQ(stats["bfloat16"].gathers, stats["float32"].gathers);
  EXPECT_EQ(2 * stats["bfloat16"].bytes, stats["float32"].bytes);
  EXPECT_LT(payload["bfloat16"], 0.6 * payload["float32"]);
}

// ZeRO-1/2's gathers after the step, overlapped with what follows it. A communicator that
// forwards to another, except that an all-gather's result lands in its output only when the
// gather is waited for (the inner gather fills a buffer of its own): a parameter read before
// its gather is waited for would read the values from before the step every time, not only
// when the communicator's thread is late. With `events` it logs each gather issued and
// waited for, with its output.
struct Event {
  std::string what;  // "issue" or "wait" (named by the test after the run), or a block's forward starting ("h.1")
  Tensor output;     // the gather's
};
class GathersLandOnWait final : public Communicator {
 public:
  GathersLandOnWait(Communicator& inner, std::vector<Event>* events) : inner_(inner), events_(events) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Device device() const override { return inner_.device(); }
  std::shared_ptr<Work> all_reduce(std::vector<Tensor> tensors, ReduceOp op) override {
    return inner_.all_reduce(std::move(tensors), op);
  }
  std::shared_ptr<Work> broadcast(std::vector<Tensor> tensors, int root) override {
    return inner_.broadcast(std::move(tensors), root);
  }
  std::shared_ptr<Work> reduce(std::vector<Tensor> tensors, int root, ReduceOp op) override {
    return inner_.reduce(std::move(tensors), root, op);
  }
  std::shared_ptr<Work> all_gather(const Tensor& input, Tensor output) override {
    Tensor landing = empty(output.shape(), output.options());
    if (events_) events_->push_back({"issue", output});
    return std::make_shared<Landing>(inner_.all_gather(input, landing), landing, std::move(output), events_);
  }
  std::shared_ptr<Work> reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override {
    return inner_.reduce_scatter(input, std::move(output), op);
  }
  std::shared_ptr<Work> reduce_scatter_consuming(Tensor input, Tensor output, ReduceOp op) override {
    return inner_.reduce_scatter_consuming(std::move(input), std::move(output), op);
  }
  std::shared_ptr<Work> send(const Tensor& tensor, int peer) override { return inner_.send(tensor, peer); }
  std::shared_ptr<Work> recv(Tensor tensor, int peer) override { return inner_.recv(std::move(tensor), peer); }
  std::shared_ptr<Work> send_recv(const Tensor& send_tensor, int send_peer, Tensor recv_tensor,
                                  int recv_peer) override {
    return inner_.send_recv(send_tensor, send_peer, std::move(recv_tensor), recv_peer);
  }
  void barrier() override { inner_.barrier(); }
  void abort() override { inner_.abort(); }

 private:
  class Landing final : public Work {
   public:
    Landing(std::shared_ptr<Work> inner, Tensor landing, Tensor output, std::vector<Event>* events)
        : inner_(std::move(inner)), landing_(std::move(landing)), output_(std::move(output)), events_(events) {}
    void wait() override {
      if (!inner_) return;
      inner_->wait();
      inner_.reset();
      output_.copy_(landing_);
      if (events_) events_->push_back({"wait", output_});
    }

   private:
    std::shared_ptr<Work> inner_;
    Tensor landing_, output_;
    std::vector<Event>* events_;
  };
  Communicator& inner_;
  std::vector<Event>* events_;
};

examples::GPTConfig three_block_gpt() {
  return {.vocab_size = 32, .block_size = 8, .n_layer = 3, .n_head = 2, .n_embd = 8};
}

struct ZeroRun {
  std::vector<std::vector<Tensor>> parameters;  // by rank
  std::vector<std::vector<double>> validation;  // by rank: the validation loss after each epoch
  ShardedSync::GatherStats stats;               // rank 0's
  size_t units = 0;
  std::vector<Event> events;  // rank 0's gathers waited for and blocks' forwards, in order
};

constexpr int64_t kZeroEpochs = 2, kZeroSteps = 5, kZeroGlobalBatch = 4, kZeroAccumulate = 2;

// The tokens they train on: kZeroGlobalBatch * kZeroSteps * kZeroAccumulate windows, then 8
// to validate on.
std::shared_ptr<const MapDataset> zero_windows() {
  Generator text_generator(5);
  const Tensor text = randint(0, 32, {2000}, Options(DType::Int64), &text_generator);
  return std::make_shared<TokenWindows>(text.to(DType::UInt8), three_block_gpt().block_size, true);
}
constexpr int64_t kZeroTrainWindows = kZeroGlobalBatch * kZeroSteps * kZeroAccumulate;

// Two ranks train the three-block GPT in float32 with Trainers of their own (AdamW, 2
// epochs of 5 steps accumulating 2 batches, no clipping: nothing but the collectives'
// layout differs from DDP, so the result is DDP's bit for bit), validating after each
// epoch. ZeRO-1/2 run over GathersLandOnWait, with or without the blocks as shard_units.
ZeroRun train_zero(ShardStrategy shard, bool units) {
  const int world = 2;
  const auto windows = zero_windows();
  const auto train_set = subset(windows, 0, kZeroTrainWindows);
  const auto validation_set = subset(windows, kZeroTrainWindows, kZeroTrainWindows + 8);
  ZeroRun out;
  out.parameters.resize(world);
  out.validation.resize(world);
  on_ranks(world, [&](int r, Communicator& gloo) {
    GathersLandOnWait comm(gloo, r == 0 ? &out.events : nullptr);
    Generator init(11);
    auto model = std::make_shared<examples::GPT>(three_block_gpt(), Options(DType::Float32), &init);
    AdamW opt(model->named_parameters(), AdamOptions{.lr = 1e-2, .weight_decay = 0.1});
    std::unique_ptr<DistributedSync> sync;
    ShardedSync* sharded = nullptr;
    if (shard == ShardStrategy::None) {
      sync = std::make_unique<DataParallelSync>(gloo, *model, DataParallelOptions{.bucket_bytes = 2048});
    } else {
      auto owned = std::make_unique<ShardedSync>(
          comm, *model, opt, shard,
          DataParallelOptions{.bucket_bytes = 2048,
                              .shard = shard,
                              .shard_units = units ? model->shard_units() : std::vector<std::string>{}});
      sharded = owned.get();
      sync = std::move(owned);
    }
    // After ShardedSync's hooks: a block's forward starts once its gather is waited for.
    if (r == 0)
      for (const std::string& name : model->shard_units())
        model->h->at<Module>(std::stoll(name.substr(2)))
            ->register_forward_hooks(
                [&out, name](Module&) {
                  out.events.push_back({name, Tensor()});
                },
                nullptr);
    auto loader = [&](std::shared_ptr<const MapDataset> set, int64_t batch) {
      return std::make_unique<DataLoader>(
          set, DataLoaderOptions{.batch_size = batch,
                                 .seed = 3,
                                 .sampler = std::make_shared<DistributedSampler>(set->size(), r, world, true, 3)});
    };
    auto train_loader = loader(train_set, kZeroGlobalBatch / world);
    auto validation_loader = loader(validation_set, 2);
    DataLoaderBatches train(*train_loader), validation(*validation_loader);
    SupervisedModel supervised = custom_model(model, [](Module& m, const Batch& b) -> StepOutput {
      return {static_cast<examples::GPT&>(m).loss(b.inputs, b.targets), {}};
    });
    TrainerOptions options;
    options.progress = Progress::Style::Off;
    options.accumulate = kZeroAccumulate;
    Trainer trainer(supervised, &opt, *sync, options);
    for (int64_t epoch = 0; epoch < kZeroEpochs; ++epoch) {
      trainer.train_epoch(train, epoch);
      out.validation[static_cast<size_t>(r)].push_back(trainer.evaluate(validation, epoch).loss());
    }
    out.parameters[static_cast<size_t>(r)] = parameters_of(*model);
    if (r != 0 || !sharded) return;
    out.stats = sharded->gather_stats();
    out.units = sharded->num_units();
    // Name each gather by the block whose parameters its output holds ("issue h.1"), or the
    // root ("wait root").
    for (Event& e : out.events) {
      if (!e.output.defined()) continue;
      std::string unit = "root";
      for (const std::string& name : model->shard_units())
        if (e.output.shares_storage(model->h->at<Module>(std::stoll(name.substr(2)))->parameters().front().data()))
          unit = name;
      e.what += " " + unit;
    }
  });
  return out;
}

// The gathers after a step are still in flight when the step returns (here they land only
// when waited for); each is waited for just before its parameters are read, so ZeRO-1 and
// ZeRO-2 train and validate as DDP does, bit for bit. With shard_units each block's gather
// is waited for as that block's forward starts, after the blocks before it ran (what
// overlaps them); the root's (embeddings, final norm) before the forward, and every unit
// at the end of each epoch.
TEST(ShardedSync, Zero12GathersAfterTheStepOverlapTheForwardAndTrainAsDdpBitForBit) {
  const ZeroRun ddp = train_zero(ShardStrategy::None, false);
  Generator init(11);
  examples::GPT untrained(three_block_gpt(), Options(DType::Float32), &init);
  ASSERT_GT(max_relative_difference(ddp.parameters[0], parameters_of(untrained)), 1e-3) << "DDP did not train";
  const int64_t blocks = three_block_gpt().n_layer;
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients})
    for (bool units : {false, true}) {
      SCOPED_TRACE(std::string(shard_strategy_name(shard)) + (units ? " with shard_units" : ""));
      const ZeroRun run = train_zero(shard, units);
      for (size_t r = 0; r < run.parameters.size(); ++r) {
        EXPECT_TRUE(same_bits(ddp.parameters[0], run.parameters[r])) << "rank " << r;
        EXPECT_EQ(run.validation[r], ddp.validation[0]) << "rank " << r;
      }
      // Each step gathers every unit; all but the epoch's last are waited for by the next
      // forward (each block's by its hook), the last by the epoch's end.
      const int64_t units_total = static_cast<int64_t>(run.units), followed = kZeroEpochs * (kZeroSteps - 1);
      const int64_t wrapped = units ? blocks : 0;
      const ShardedSync::GatherStats& s = run.stats;
      EXPECT_EQ(s.after_step, kZeroEpochs * kZeroSteps * units_total);
      EXPECT_EQ(s.waited_by_module, followed * wrapped);
      EXPECT_EQ(s.waited_before_forward, followed * (units_total - wrapped));
      EXPECT_EQ(s.waited_later, kZeroEpochs * units_total);
      if (!units) continue;
      // The order on rank 0: a block's gather waited for right before that block's forward,
      // and after the previous block's (the first: after the root's, before the forward).
      int64_t at_their_block = 0;
      const std::vector<Event>& e = run.events;
      for (size_t i = 1; i + 1 < e.size(); ++i) {
        if (e[i].what.rfind("wait h.", 0) != 0) continue;
        const std::string block = e[i].what.substr(5);
        const int64_t k = std::stoll(block.substr(2));
        const std::string before = k == 0 ? "wait root" : "h." + std::to_string(k - 1);
        at_their_block += e[i + 1].what == block && e[i - 1].what == before ? 1 : 0;
      }
      EXPECT_EQ(at_their_block, followed * blocks);
      // Each step issues its gathers in the order the forward reads them: the root's units,
      // then the blocks in forward order (the communicator completes them in that order).
      int64_t runs = 0, in_order = 0;
      for (size_t i = 0; i < e.size();) {
        if (e[i].what.rfind("issue ", 0) != 0) {
          ++i;
          continue;
        }
        int64_t last = -1;  // the root's, then block k's
        bool ordered = true;
        for (; i < e.size() && e[i].what.rfind("issue ", 0) == 0; ++i) {
          const std::string unit = e[i].what.substr(6);
          const int64_t k = unit == "root" ? -1 : std::stoll(unit.substr(2));
          ordered = ordered && k >= last && (k == -1 || k != last);
          last = k;
        }
        ++runs;
        in_order += ordered && last == blocks - 1 ? 1 : 0;
      }
      EXPECT_EQ(runs, kZeroEpochs * kZeroSteps);
      EXPECT_EQ(in_order, runs);
      std::printf(
          "%s with shard_units: %lld unit gathers after the steps, %lld waited for by their block's forward, "
          "%lld before the forward, %lld at the epochs' ends\n",
          shard_strategy_name(shard), static_cast<long long>(s.after_step), static_cast<long long>(s.waited_by_module),
          static_cast<long long>(s.waited_before_forward), static_cast<long long>(s.waited_later));
    }
}

// One step driven by hand, the next forward's reads coming first.
void step_once(Module& model, Optimizer& opt, DistributedSync& sync, const Tensor& idx) {
  GradScaler off({.enabled = false});
  sync.before_forward();
  sync.arm(static_cast<double>(idx.size(0)), 0);
  sync.backward(static_cast<examples::GPT&>(model).loss(idx.narrow(1, 0, 8), idx.narrow(1, 1, 8)), idx.size(0));
  sync.finish();
  sync.step(&opt, off, model.parameters(), 0.0);
}

// What reads the parameters between a step and the next forward must wait for their
// gathers: a read that nothing waited for throws instead of seeing a unit half written, and
// an evaluation right after a step sees the stepped parameters, as DDP's does.
TEST(ShardedSync, Zero12ReadsRightAfterAStepSeeTheSteppedParametersOrThrow) {
  Tensor idx;
  {
    Generator g(1);
    idx = randint(0, 32, {4, 9}, Options(DType::Int64), &g);
  }
  // The validation loss on rank 0 before and after one step.
  auto evaluate_around_a_step = [&](ShardStrategy shard) {
    std::vector<double> losses;
    on_ranks(2, [&](int r, Communicator& gloo) {
      GathersLandOnWait comm(gloo, nullptr);
      Generator init(11);
      auto model = std::make_shared<examples::GPT>(three_block_gpt(), Options(DType::Float32), &init);
      AdamW opt(model->named_parameters(), AdamOptions{.lr = 1e-2});
      std::unique_ptr<DistributedSync> sync;
      if (shard == ShardStrategy::None) sync = std::make_unique<DataParallelSync>(gloo, *model);
      else
        sync = std::make_unique<ShardedSync>(comm, *model, opt, shard,
                                             DataParallelOptions{.shard = shard, .shard_units = model->shard_units()});
      DataLoader loader(subset(zero_windows(), kZeroTrainWindows, kZeroTrainWindows + 8),
                        DataLoaderOptions{.batch_size = 4});
      DataLoaderBatches validation(loader);
      SupervisedModel supervised = custom_model(model, [](Module& m, const Batch& b) -> StepOutput {
        return {static_cast<examples::GPT&>(m).loss(b.inputs, b.targets), {}};
      });
      TrainerOptions options;
      options.progress = Progress::Style::Off;
      Trainer trainer(supervised, &opt, *sync, options);
      const double before = trainer.evaluate(validation, 0).loss();
      step_once(*model, opt, *sync, idx.narrow(0, 2 * r, 2));
      const double after = trainer.evaluate(validation, 0).loss();  // the gathers in flight until here
      if (r == 0) losses = {before, after};
    });
    return losses;
  };
  const std::vector<double> ddp = evaluate_around_a_step(ShardStrategy::None);
  ASSERT_NE(ddp[0], ddp[1]) << "the step changed nothing: the test would not see stale parameters";
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients})
    EXPECT_EQ(evaluate_around_a_step(shard), ddp) << shard_strategy_name(shard);

  // Reads nothing waited for, after a step of ZeRO-1 with the blocks as shard_units.
  std::vector<std::vector<Tensor>> trained(2);
  on_ranks(2, [&](int r, Communicator& comm) {
    Generator init(11);
    examples::GPT model(three_block_gpt(), Options(DType::Float32), &init);
    AdamW opt(model.named_parameters());
    auto owned = std::make_unique<ShardedSync>(comm, model, opt, ShardStrategy::Optimizer,
                                               DataParallelOptions{.shard_units = model.shard_units()});
    ShardedSync& sync = *owned;
    step_once(model, opt, sync, idx.narrow(0, 2 * r, 2));
    const std::vector<std::string> in_flight = {"data_ptr", "released", "all-gather after the step"};
    expect_error([&] { parameters_of(model); }, in_flight);
    sync.before_forward();  // the units of no block: the embeddings readable, the blocks not yet
    EXPECT_NO_THROW(model.wte->weight.data().clone());
    auto block = model.h->at<TransformerEncoderLayer>(1);
    // A block's forward not run through Module::call skips its hook.
    const Variable x(randn({1, 4, 8}));
    expect_error([&] { block->forward(x, Tensor(), Tensor(), true); }, in_flight);
    EXPECT_NO_THROW(block->call([&] { return block->forward(x, Tensor(), Tensor(), true); }));
    sync.end_epoch(0);  // every unit waited for: the model whole
    EXPECT_NO_THROW(parameters_of(model));
    // The destructor waits too: the parameters readable, the same on both ranks.
    step_once(model, opt, sync, idx.narrow(0, 2 * r, 2));
    owned.reset();
    trained[static_cast<size_t>(r)] = parameters_of(model);
  });
  EXPECT_TRUE(same_bits(trained[0], trained[1]));
}

// Two linear layers, the second skipped when asked: a module of shard_units that a forward
// does not call, whose gather after a step is still in flight when the next step comes.
class SkipsSecond final : public UnaryModule {
 public:
  explicit SkipsSecond(Generator* g) {
    first = register_module("first", std::make_shared<Linear>(4, 4, true, Options(DType::Float32), g));
    second = register_module("second", std::make_shared<Linear>(4, 4, true, Options(DType::Float32), g));
  }
  const char* type_name() const override { return "SkipsSecond"; }
  Variable forward(const Variable& x) override {
    Variable y = (*first)(x);
    return skip ? y : (*second)(y);
  }
  std::shared_ptr<Linear> first, second;
  bool skip = false;
};

// The step writes the slices that the last step's gathers send: a module the forward
// skipped still has its gather in flight then, and the step waits for it (counted as
// waited for later). SGD with momentum moves the skipped layer on zero gradients, as DDP does.
TEST(ShardedSync, Zero12StepWaitsForTheGatherOfAModuleTheForwardSkipped) {
  const std::vector<bool> skips = {false, true, true, false};
  auto train = [&](ShardStrategy shard) {
    std::vector<std::vector<Tensor>> trained(2);
    ShardedSync::GatherStats stats;
    on_ranks(2, [&](int r, Communicator& gloo) {
      GathersLandOnWait comm(gloo, nullptr);
      Generator init(3), data(static_cast<uint64_t>(10 + r));
      SkipsSecond model(&init);
      SGD opt(model.named_parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
      std::unique_ptr<DistributedSync> sync;
      if (shard == ShardStrategy::None) sync = std::make_unique<DataParallelSync>(gloo, model);
      else
        sync = std::make_unique<ShardedSync>(comm, model, opt, shard,
                                             DataParallelOptions{.shard = shard, .shard_units = {"first", "second"}});
      GradScaler off({.enabled = false});
      for (bool skip : skips) {
        model.skip = skip;
        sync->before_forward();
        sync->arm(2, 0);
        const Tensor x = randn({2, 4}, Options(DType::Float32), &data);
        Variable y = model(Variable(x));
        sync->backward(mean(mul(y, y)), 2);
        sync->finish();
        sync->step(&opt, off, model.parameters(), 0.0);
        opt.zero_grad();
      }
      sync->end_epoch(0);
      trained[static_cast<size_t>(r)] = parameters_of(model);
      if (r == 0 && shard != ShardStrategy::None) stats = static_cast<ShardedSync&>(*sync).gather_stats();
    });
    EXPECT_TRUE(same_bits(trained[0], trained[1]));
    return std::pair{trained[0], stats};
  };
  const std::vector<Tensor> ddp = train(ShardStrategy::None).first;
  for (ShardStrategy shard : {ShardStrategy::Optimizer, ShardStrategy::Gradients}) {
    SCOPED_TRACE(shard_strategy_name(shard));
    const auto [sharded, stats] = train(shard);
    EXPECT_TRUE(same_bits(ddp, sharded));
    // One unit per layer. The first layer's gathers after steps 1 to 3 are waited for by
    // its forward; the second's after steps 1 and 2 by the next step (its forward skipped),
    // after step 3 by its forward; after step 4 both by the end of the epoch.
    EXPECT_EQ(stats.after_step, 8);
    EXPECT_EQ(stats.waited_by_module, 3 + 1);
    EXPECT_EQ(stats.waited_before_forward, 0);
    EXPECT_EQ(stats.waited_later, 2 + 2);
  }
}

TEST(ShardedSync, RefusesWhatItCannotShard) {
  on_ranks(1, [](int, Communicator& comm) {
    Generator init(2);
    examples::GPT model(tiny_gpt(), {}, &init);
    AdamW opt(model.named_parameters());
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Optimizer, {.only_driver_steps = true}); },
                 {"ShardedSync", "only_driver_steps"});
    NamedParameters some = model.named_parameters();
    some.pop_back();
    AdamW partial(some);
    expect_error([&] { ShardedSync(comm, model, partial, ShardStrategy::Gradients); },
                 {"ShardedSync", "is not in the optimizer"});
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Full); }, {"shard=full", "no units named"});
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Full, {.shard_units = {"h.7"}}); },
                 {"shard=full", "no submodule 'h.7'"});
    expect_error(
        [&] {
          ShardedSync(comm, model, opt, ShardStrategy::Full, {.shard_units = {"h", "h.0"}});
        },
        {"shard=full", "units must not share parameters"});
    // lm_head's weight is wte's: a unit of wte alone would be read released by lm_head.
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Full, {.shard_units = {"wte"}}); },
                 {"shard=full", "lm_head.weight", "tied"});
    // ZeRO-1/2's shard_units: the same checks, named by the strategy.
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Gradients, {.shard_units = {"h.7"}}); },
                 {"shard=gradients", "no submodule 'h.7'"});
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Optimizer, {.shard_units = {"wte"}}); },
                 {"shard=optimizer", "lm_head.weight", "tied"});
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Gradients, {.param_dtype = DType::BFloat16}); },
                 {"ShardedSync", "param_dtype", "shard=gradients", "use shard=full"});
    expect_error(
        [&] {
          ShardedSync(comm, model, opt, ShardStrategy::Full,
                      {.shard_units = model.shard_units(), .param_dtype = DType::Float64});
        },
        {"ShardedSync", "param_dtype must be bfloat16 or float16", "float64"});
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Gradients, {.reduce_dtype = DType::Int32}); },
                 {"ShardedSync", "reduce_dtype must be", "int32"});
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Gradients, {.reduce_scatters_in_flight = -1}); },
                 {"ShardedSync", "reduce_scatters_in_flight must be >= 0, got -1"});
    expect_error([&] { ShardedSync(comm, model, opt, ShardStrategy::Optimizer, {.backward_prefetch = false}); },
                 {"ShardedSync", "backward_prefetch", "shard=optimizer gathers every unit after the step"});
  });
}

}  // namespace
}  // namespace wick::distributed
