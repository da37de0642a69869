// The model-parallel seed's residual regression model (Linear(1,512) ... Sigmoid, the third
// layer's output added to the seventh's; MSE; Adam lr 3e-3), split into one stage per rank:
//
//   wickrun --nproc 3 pipeline                       (3 stages on this machine)
//   wickrun --nproc 3 pipeline --micro-batches 4 --schedule gpipe
//   pipeline                                         (one process: the unsplit model)
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

int run(int argc, char** argv) {
  examples::Args args("pipeline", "trains the model-parallel seed's residual model split over the ranks");
  args.option("steps", "400", "training steps (batches)")
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
    throw std::runtime_error("pipeline: --schedule must be gpipe or 1f1b");
  const auto schedule =
      schedule_name == "gpipe" ? PipelineModel::Schedule::GPipe : PipelineModel::Schedule::OneFOneB;
  const Device device = examples::pick_device(args.str("device"));

  // Alone: a world of one over an in-process store.
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(args.number("timeout") * 1000));
  ProcessGroup group = ProcessGroup::from_environment(device, {}, timeout);
  InProcessStore local_store;
  std::unique_ptr<Communicator> local_comm;
  Store& store = group.driver ? group.driver->store() : group.follower ? group.follower->store() : local_store;
  if (!group.comm) local_comm = make_communicator(local_store, 0, 1, device);
  Communicator& comm = group.comm ? *group.comm : *local_comm;

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
  PipelineModel model(comm, store, std::move(layers), starts, device, timeout);
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
