// The model-parallel seed's residual regression model (Linear(1,512) ... Sigmoid, the third
// layer's output added to the seventh's; MSE; Adam lr 3e-3), split into one stage per rank:
//
//   wickrun --nproc 3 pipeline                       (3 stages on this machine)
//   wickrun --nproc 3 pipeline --micro-batches 4 --schedule gpipe
//   pipeline                                         (one process: the unsplit model)
//   wickrun --nproc 2 pipeline --model cnn --data DIR --epochs 2
//                          (a CNN over Fashion-MNIST split over 2 ranks: rank 0 describes it,
//                           the other builds its stage from the description; the epochs loop)
//
// Rank 0 drives: it holds the first stage, draws the batches (x uniform in [0, 1), y = 0.4
// (x + 1)), computes the loss and steps; the other ranks serve their stage. At the end rank 0
// gathers every stage into one safetensors file named as the unsplit model.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

#include <wick/autograd/node.h>
#include <wick/wick.h>

#include "examples/common/args.h"
#include "examples/common/devices.h"
#include "examples/common/training.h"

using namespace wick;
using namespace wick::distributed;

namespace {

// Fault injection for the fault tests: WICK_PIPELINE_FAULT=<forward|backward>:<exit|hang>:<n>
// appends a layer to the last stage that exits its process (code 3) or hangs at its n-th
// forward or backward.
struct FaultPlan {
  bool backward = false, hang = false;
  int64_t at = 0;
};

void fail(const FaultPlan& plan) {
  std::fprintf(stderr, "pipeline: injected fault: %s\n", plan.hang ? "hanging" : "exiting");
  if (!plan.hang) std::_Exit(3);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

class FaultBackward final : public Node {
 public:
  FaultBackward(FaultPlan plan, int64_t* count) : plan_(plan), count_(count) {}
  const char* name() const override { return "FaultBackward"; }
  std::vector<Variable> apply(std::vector<Variable>&& g) override {
    if (++*count_ == plan_.at) fail(plan_);
    return {g[0]};
  }

 private:
  FaultPlan plan_;
  int64_t* count_;
};

class Fault final : public UnaryModule {
 public:
  explicit Fault(FaultPlan plan) : plan_(plan) {}
  Variable forward(const Variable& x) override {
    if (!plan_.backward && ++count_ == plan_.at) fail(plan_);
    Variable out(x.data());
    if (plan_.backward && needs_grad({&x})) connect(std::make_shared<FaultBackward>(plan_, &count_), {&x}, {&out});
    return out;
  }

 private:
  FaultPlan plan_;
  int64_t count_ = 0;
};

std::optional<FaultPlan> fault_plan() {
  const char* v = std::getenv("WICK_PIPELINE_FAULT");
  if (v == nullptr || *v == '\0') return std::nullopt;
  char phase[16] = {}, mode[16] = {};
  long long at = 0;
  if (std::sscanf(v, "%15[a-z]:%15[a-z]:%lld", phase, mode, &at) != 3 || at < 1 ||
      (std::string(phase) != "forward" && std::string(phase) != "backward") ||
      (std::string(mode) != "exit" && std::string(mode) != "hang"))
    throw std::runtime_error(std::string("pipeline: WICK_PIPELINE_FAULT='") + v +
                             "' is not <forward|backward>:<exit|hang>:<n>");
  return FaultPlan{std::string(phase) == "backward", std::string(mode) == "hang", at};
}

std::vector<StagedLayer> residual_model(int64_t width, Options o, Generator& g) {
  auto linear = [&](int64_t in, int64_t out) { return std::make_shared<Linear>(in, out, true, o, &g); };
  return {{linear(1, width)},
          {std::make_shared<ReLU>()},
          {linear(width, width), {}, {"res_1"}},
          {std::make_shared<ReLU>()},
          {linear(width, width)},
          {std::make_shared<ReLU>()},
          {linear(width, width), {"res_1"}, {}},
          {std::make_shared<ReLU>()},
          {linear(width, 1)},
          {std::make_shared<Sigmoid>()}};
}

// The mnist example's CNN as a description (Conv 32, Conv 64, two Linear layers).
PipelineDescription cnn_description(uint64_t seed, double lr) {
  auto conv = [](double in, double out) {
    return LayerSpec{"Conv2d", {{"in_channels", in}, {"out_channels", out}, {"kernel_size", 3}, {"padding", 1}}};
  };
  PipelineDescription d;
  d.layers = {conv(1, 32), {"BatchNorm2d", {{"num_features", 32}}}, {"ReLU"}, {"MaxPool2d", {{"kernel_size", 2}}},
              conv(32, 64), {"BatchNorm2d", {{"num_features", 64}}}, {"ReLU"}, {"MaxPool2d", {{"kernel_size", 2}}},
              {"Flatten"}, {"Linear", {{"in_features", 64 * 7 * 7}, {"out_features", 128}}}, {"ReLU"},
              {"Dropout", {{"p", 0.25}}}, {"Linear", {{"in_features", 128}, {"out_features", 10}}}};
  d.optimizer = {"AdamW", {{"lr", lr}, {"weight_decay", 1e-4}}};
  d.seed = seed;
  d.input_shape = {1, 28, 28};
  return d;
}

// The CNN on MNIST-format data through fit_pipeline: validation on the last images of the
// training set, test accuracy once at the end.
int run_cnn(const examples::Args& args, Communicator& comm, ControlEndpoint control, Device device,
            std::chrono::milliseconds timeout) {
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  const int64_t micro_batches = args.integer("micro-batches");
  if (comm.rank() != 0) {
    DistributedPipeline p = join_pipeline(comm, control, device, timeout);
    fit_pipeline(p.model, {}, *p.optimizer, nullptr, nullptr, {});
    return 0;
  }
  DistributedPipeline p = distribute_pipeline(comm, control, cnn_description(seed, args.number("lr")), device, timeout);
  p.model->set_micro_batches(micro_batches);
  auto normalise = [](Batch b, uint64_t) {
    b.inputs = to_float_normalized(b.inputs, {0.2860}, {0.3530});
    return b;
  };
  std::shared_ptr<const Dataset> train_set = std::make_shared<Dataset>(load_mnist(args.str("data"), true));
  auto valid_set = examples::hold_out_validation(train_set, std::min<int64_t>(train_set->size() / 10, 5000));
  auto test_set = std::make_shared<Dataset>(load_mnist(args.str("data"), false));
  const int64_t batch = args.integer("batch-size");
  BatchStream train(train_set, {.batch_size = batch, .seed = seed, .device = device, .transform = normalise});
  BatchStream valid(valid_set, {.batch_size = 512, .shuffle = false, .device = device, .transform = normalise});
  BatchStream test(test_set, {.batch_size = 512, .shuffle = false, .device = device, .transform = normalise});
  LoopOptions options;
  options.max_epochs = args.integer("epochs");
  options.trainer.progress = Progress::Style::Off;
  auto loss = [](const Variable& y, const Tensor& t) { return cross_entropy(y, t); };
  std::printf("pipeline: the CNN in %d stage(s), %lld micro-batch(es) per batch (GPipe)\n", comm.size(),
              static_cast<long long>(micro_batches));
  fit_pipeline(p.model, loss, *p.optimizer, &train, &valid, options, /*count_correct=*/true);
  // Test accuracy once, on images no choice was made on.
  SupervisedModel model{p.model, loss, true, {}, {}, {}};
  PipelineSync sync(*p.model, *p.optimizer);
  Trainer evaluator(model, p.optimizer.get(), sync, {.progress = Progress::Style::Off});
  EpochStats stats = evaluator.evaluate(test, 0);
  std::printf("test accuracy %.2f%% on %lld images\n",
              100.0 * static_cast<double>(stats.correct) / static_cast<double>(stats.examples),
              static_cast<long long>(stats.examples));
  std::filesystem::create_directories(args.str("out"));
  save_safetensors(args.str("out") + "/model.safetensors", p.model->state_dict_of_all_stages().to_map());
  p.model->stop();
  return 0;
}

int run(int argc, char** argv) {
  examples::Args args("pipeline", "trains the model-parallel seed's residual model split over the ranks");
  args.option("model", "residual", "residual (the seed's regression model) or cnn (Fashion-MNIST)")
      .option("data", "/usr/share/datasets/fashion-mnist", "cnn: folder with the MNIST-format files")
      .option("epochs", "2", "cnn: epochs")
      .option("steps", "400", "residual: training steps (batches)")
      .option("batch-size", "32", "examples per batch")
      .option("width", "512", "hidden width")
      .option("micro-batches", "1", "micro-batches per batch (1: the naive schedule)")
      .option("schedule", "1f1b", "gpipe or 1f1b (with --micro-batches > 1)")
      .option("lr", "0.003", "Adam learning rate")
      .option("device", "cpu", "cpu, cuda or auto (this rank's GPU)")
      .option("seed", "0", "seed of the weights and batches")
      .option("timeout", "60", "seconds to wait for another rank before failing")
      .option("out", "pipeline-out", "folder for model.safetensors (rank 0)");
  if (!args.parse(argc, argv)) return 0;
  const std::string schedule_name = args.str("schedule");
  if (schedule_name != "gpipe" && schedule_name != "1f1b")
    throw std::runtime_error("--schedule must be gpipe or 1f1b");
  const auto schedule =
      schedule_name == "gpipe" ? PipelineModel::Schedule::GPipe : PipelineModel::Schedule::OneFOneB;
  const Device device = examples::pick_device(args.str("device"));

  // Alone: a world of one over an in-process store, and no control channel.
  const auto timeout = examples::timeout_option(args, "timeout");
  ProcessGroup group = ProcessGroup::from_environment(device, {}, timeout);
  InProcessStore local_store;
  std::unique_ptr<Communicator> local_comm;
  if (!group.comm) local_comm = make_communicator(local_store, 0, 1, device);
  Communicator& comm = group.comm ? *group.comm : *local_comm;

  if (args.str("model") == "cnn") return run_cnn(args, comm, group.control(), device, timeout);
  if (args.str("model") != "residual") throw std::runtime_error("--model must be residual or cnn");

  // Every rank builds the same layers from the same seed and keeps its own stage.
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  Generator init(seed);
  std::vector<StagedLayer> layers = residual_model(args.integer("width"), Options{}, init);
  if (std::optional<FaultPlan> plan = fault_plan()) layers.push_back({std::make_shared<Fault>(*plan)});
  std::vector<int64_t> sizes;
  for (const StagedLayer& l : layers) {
    int64_t n = 0;
    for (const Variable& p : l.module->parameters()) n += p.numel();
    sizes.push_back(n);
  }
  std::vector<size_t> starts = balanced_stage_starts(sizes, static_cast<size_t>(comm.size()));
  PipelineModel model(comm, group.control(), std::move(layers), starts, device, timeout);
  Adam adam(model.named_parameters(), AdamOptions{.lr = args.number("lr")});
  if (comm.rank() != 0) {
    model.serve(adam);
    return 0;
  }

  std::printf("pipeline: %d stage(s) starting at layers", comm.size());
  for (size_t s : starts) std::printf(" %zu", s);
  std::printf(", %lld micro-batch(es), %s\n", static_cast<long long>(args.integer("micro-batches")),
              args.integer("micro-batches") > 1 ? schedule_name.c_str() : "naive");
  Generator data(seed + 1);
  const int64_t steps = args.integer("steps"), batch = args.integer("batch-size");
  auto mse = [](const Variable& y, const Variable& t) { return mse_loss(y, t); };
  double loss = 0;
  for (int64_t s = 0; s < steps; ++s) {
    Tensor x = rand({batch, 1}, {}, &data);
    Tensor y = mul(add(x, 1.0), 0.4);
    loss = model.train_step(x, y, mse, args.integer("micro-batches"), schedule);
    model.step(adam);
    if ((s + 1) % 100 == 0 || s + 1 == steps)
      std::printf("step %lld  loss %.6f\n", static_cast<long long>(s + 1), loss);
  }
  std::filesystem::create_directories(args.str("out"));
  const std::string path = args.str("out") + "/model.safetensors";
  save_safetensors(path, model.state_dict_of_all_stages().to_map());
  model.stop();
  std::printf("final loss %.6f; model: %s\n", loss, path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::run_main("pipeline", run, argc, argv); }
