// Your own model, data and loop (issue 23): a model with two inputs, trained on a
// dictionary dataset of memory-mapped .npy files (larger than memory works: only the pages
// a batch touches are read) through the multi-worker DataLoader, in a loop of its own with
// DistributedDataParallel and a Checkpoint that resumes exactly, mid-epoch included; or,
// with --loop fit, through fit's data-parallel loop (train_in_group) with a step of its own.
//
//   two_inputs --make-data data --examples 20000            # left.npy, right.npy, label.npy
//   two_inputs --data data --epochs 3 --workers 4 --checkpoint run.ckpt
//   wickrun --nproc 2 two_inputs --data data --checkpoint run.ckpt    # data parallel
//   wickrun --nproc 2 two_inputs --data data --loop fit --checkpoint run.ckpt
//
// The label depends on both inputs: the larger of three sums, one mixing `left`'s first
// columns with `right`, so neither branch alone can learn it. --stop-after N stops after N
// steps (as if killed) so that a second run resumes from the checkpoint; the last line,
// "parameters <checksum>", is the same for a run that stopped and resumed and one that did
// not.
#include <cstdio>
#include <filesystem>

#include <wick/wick.h>

#include "examples/common/args.h"
#include "examples/common/training.h"

using namespace wick;
using namespace wick::distributed;

namespace {

constexpr int64_t kRight = 8, kClasses = 3, kHidden = 64;

class TwoInputs : public Module {
 public:
  TwoInputs(int64_t left_features, Generator& g) {
    left_ = register_module("left", std::make_shared<Linear>(left_features, kHidden, true, Options{}, &g));
    right_ = register_module("right", std::make_shared<Linear>(kRight, kHidden, true, Options{}, &g));
    head_ = register_module("head", std::make_shared<Linear>(kHidden, kClasses, true, Options{}, &g));
  }
  Variable forward(const Variable& left, const Variable& right) {
    return head_->forward(relu(left_->forward(left) + right_->forward(right)));
  }

 private:
  std::shared_ptr<Linear> left_, right_, head_;
};

void make_data(const std::string& dir, int64_t n, int64_t features) {
  std::filesystem::create_directories(dir);
  Generator g(1234);
  const Tensor left = rand({n, features}, Options{}, &g), right = rand({n, kRight}, Options{}, &g);
  const Tensor s0 = add(sum(left.narrow(1, 0, 4), {1}), mul(right.select(1, 0), Scalar(2.0)));
  const Tensor s1 = add(sum(left.narrow(1, 4, 4), {1}), mul(right.select(1, 1), Scalar(2.0)));
  const Tensor s2 = add(sum(left.narrow(1, 8, 2), {1}), mul(sum(right.narrow(1, 2, 3), {1}), Scalar(1.5)));
  const Tensor label = argmax(stack({s0, s1, s2}, 1), 1);
  save_npy(dir + "/left.npy", left);
  save_npy(dir + "/right.npy", right);
  save_npy(dir + "/label.npy", label);
  std::printf("wrote %lld examples (%.1f MB) to %s\n", static_cast<long long>(n),
              static_cast<double>(n * (features + kRight) * 4 + n * 8) / 1e6, dir.c_str());
}

// The step fit runs: forward on both fields, cross-entropy, and the batch's accuracy.
StepOutput two_input_step(Module& m, const Batch& b) {
  auto& net = dynamic_cast<TwoInputs&>(m);
  const Tensor& label = b.fields["label"];
  Variable out = net.forward(Variable(b.fields["left"]), Variable(b.fields["right"]));
  return {cross_entropy(out, label), {{"accuracy", mean(eq(argmax(out.data(), 1), label).to(DType::Float64))}}};
}

double checksum(Module& m) {
  double s = 0;
  for (const auto& p : m.parameters()) s += sum(abs(p.data().to(DType::Float64))).item<double>();
  return s;
}

int run(int argc, char** argv) {
  examples::Args args("two_inputs", "A two-input model, memory-mapped .npy data, workers, DDP and Checkpoint.");
  args.option("make-data", "", "write a synthetic data set to this folder and exit")
      .option("examples", "20000", "examples for --make-data")
      .option("features", "16", "columns of left.npy for --make-data (at least 10)")
      .option("data", "data", "folder with left.npy, right.npy and label.npy")
      .option("epochs", "3", "epochs")
      .option("batch-size", "64", "examples per batch on each rank")
      .option("workers", "4", "DataLoader worker threads")
      .option("lr", "0.003", "Adam learning rate")
      .option("checkpoint", "", "checkpoint file (resumed from when it exists)")
      .option("checkpoint-every", "50", "steps between checkpoints")
      .option("stop-after", "0", "stop after this many steps of this run (0: never), as if killed")
      .option("loop", "own", "own (DistributedDataParallel + Checkpoint) or fit (train_in_group with a step)")
      .flag("quiet", "no per-epoch lines");
  if (!args.parse(argc, argv)) return 0;
  if (!args.str("make-data").empty()) {
    WICK_CHECK(args.integer("features") >= 10, "--features must be at least 10");
    make_data(args.str("make-data"), args.integer("examples"), args.integer("features"));
    return 0;
  }
  ProcessGroup group = ProcessGroup::from_environment(Device::cpu());
  const int rank = group.config.rank, world = group.config.world_size;

  const std::string dir = args.str("data");
  auto all = std::make_shared<ArrayDictDataset>(
      std::vector<std::pair<std::string, NpyArray>>{{"left", open_npy(dir + "/left.npy")},
                                                    {"right", open_npy(dir + "/right.npy")},
                                                    {"label", open_npy(dir + "/label.npy")}});
  const int64_t n = all->size(), n_valid = n / 10;
  auto train_set = subset(all, 0, n - n_valid), valid_set = subset(all, n - n_valid, n);
  auto sampler = std::make_shared<DistributedSampler>(train_set->size(), rank, world, true, 7);
  DataLoader train(train_set, {.batch_size = args.integer("batch-size"),
                               .seed = 7,
                               .sampler = sampler,
                               .num_workers = args.integer("workers")});
  DataLoader valid(valid_set, {.batch_size = 512,
                               .sampler = std::make_shared<DistributedSampler>(valid_set->size(), rank, world, false),
                               .num_workers = std::min<int64_t>(args.integer("workers"), 2)});

  Generator init(42);
  auto model = std::make_shared<TwoInputs>(open_npy(dir + "/left.npy").shape().at(1), init);
  Adam opt(model->named_parameters(), AdamOptions{.lr = args.number("lr")});
  const std::string path = args.str("checkpoint");
  if (args.str("loop") == "fit") {
    SupervisedModel stepped = custom_model(model, two_input_step, {"accuracy"});
    DataLoaderBatches train_batches(train), valid_batches(valid);
    LoopOptions options;
    options.max_epochs = args.integer("epochs");
    options.checkpoint_path = path;  // after every epoch, by rank 0; resumed from when it exists
    options.resume = !path.empty();
    options.log_epochs = !args.is_set("quiet") && rank == 0;
    options.trainer.progress = Progress::Style::Off;
    LoopState s = train_in_group(group, stepped, opt, train_batches, &valid_batches, options);
    if (rank == 0) {
      const CurvePoint& last = s.learning_curve.back();
      std::printf("validation accuracy %.2f%%\nparameters %.17g\n", 100 * last.validation_metrics.at("accuracy"),
                  checksum(*model));
    }
    return 0;
  }
  WICK_CHECK(args.str("loop") == "own", "--loop must be own or fit, got '", args.str("loop"), "'");
  DistributedDataParallel ddp(*model, group.comm.get());

  int64_t epoch = 0, step = 0, batches_done = 0;  // batches_done: of `epoch`, for a mid-epoch resume
  Checkpoint ckpt;
  ckpt.add("model", *model)
      .add("optimizer", opt)
      .add("epoch", epoch)
      .add("step", step)
      .add("batches_done", batches_done);
  if (!path.empty() && ckpt.load(path, rank) && rank == 0)
    std::printf("resumed from %s: epoch %lld, batch %lld, step %lld\n", path.c_str(), static_cast<long long>(epoch + 1),
                static_cast<long long>(batches_done), static_cast<long long>(step));
  auto save = [&] {
    if (path.empty()) return;
    ckpt.save(path, rank);
    if (group.comm) group.comm->barrier();  // every rank's file written before anyone goes on
  };

  const int64_t stop_after = args.integer("stop-after");
  int64_t steps_this_run = 0;
  for (; epoch < args.integer("epochs"); ++epoch, batches_done = 0) {
    model->train();
    train.start_epoch(epoch, batches_done);  // a resume skips the batches already trained on
    double loss_sum = 0;
    int64_t seen = 0;
    while (std::optional<Example> b = train.next()) {
      Variable loss = cross_entropy(model->forward(Variable(b->at("left")), Variable(b->at("right"))), b->at("label"));
      opt.zero_grad();
      ddp.backward(loss);
      opt.step();
      loss_sum += loss.item<double>() * static_cast<double>(b->at("label").size(0));
      seen += b->at("label").size(0);
      ++step;
      ++batches_done;
      if (step % args.integer("checkpoint-every") == 0) save();
      if (stop_after > 0 && ++steps_this_run == stop_after) {
        if (rank == 0) std::printf("stopped after %lld steps\n", static_cast<long long>(stop_after));
        return 0;
      }
    }
    // Validation: each rank its shard, summed over ranks.
    model->eval();
    NoGradGuard no_grad;
    Tensor totals = zeros({3}, DType::Float64);  // loss sum, correct, examples
    valid.start_epoch(epoch);
    while (std::optional<Example> b = valid.next()) {
      Variable out = model->forward(Variable(b->at("left")), Variable(b->at("right")));
      const Tensor& label = b->at("label");
      const double count = static_cast<double>(label.size(0));
      totals.add_(tensor<double>({cross_entropy(out, label).item<double>() * count,
                                  static_cast<double>(sum(eq(argmax(out.data(), 1), label)).item<int64_t>()), count}));
    }
    if (group.comm) group.comm->all_reduce({totals}, ReduceOp::Sum)->wait();
    const auto t = totals.to_vector<double>();
    if (rank == 0 && !args.is_set("quiet"))
      std::printf("epoch %lld: train loss %.4f (rank 0, %lld examples)  validation loss %.4f  accuracy %.2f%%\n",
                  static_cast<long long>(epoch + 1), seen ? loss_sum / static_cast<double>(seen) : 0.0,
                  static_cast<long long>(seen), t[0] / t[2], 100 * t[1] / t[2]);
  }
  batches_done = 0;
  save();
  if (rank == 0) std::printf("parameters %.17g\n", checksum(*model));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::run_main("two_inputs", run, argc, argv); }
