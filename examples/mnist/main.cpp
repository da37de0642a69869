// MNIST-format image classification (Fashion-MNIST by default) with a small CNN or an MLP:
// the whole training loop of train/ (validation on the test set, the min-validation-loss
// model, learning curve as CSV and PNG, checkpoints and resume), alone or data-parallel on
// several ranks under wickrun:
//
//   mnist --model cnn
//   wickrun --nproc 2 mnist --model cnn          (two ranks; Gloo on CPU, NCCL on GPUs)
//   wickrun --nnodes 2 --nproc-per-node 4 ... mnist --daso   (Heat's DASO across 2 nodes)
//   mnist --data /path/to/mnist --model mlp --epochs 5
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <wick/wick.h>

#include "examples/common/args.h"
#include "examples/common/devices.h"
#include "examples/common/training.h"

using namespace wick;
using namespace wick::distributed;

namespace {

constexpr double kMean = 0.2860, kStd = 0.3530;  // Fashion-MNIST pixel statistics

std::shared_ptr<UnaryModule> make_cnn(Generator& g) {
  Conv2dOptions same{.padding = 1};
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Conv2d>(1, 32, 3, same, Options{}, &g), std::make_shared<BatchNorm2d>(32),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
      std::make_shared<Conv2d>(32, 64, 3, same, Options{}, &g), std::make_shared<BatchNorm2d>(64),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
      std::make_shared<Linear>(64 * 7 * 7, 128, true, Options{}, &g), std::make_shared<ReLU>(),
      std::make_shared<Dropout>(0.25), std::make_shared<Linear>(128, 10, true, Options{}, &g)});
}

std::shared_ptr<UnaryModule> make_mlp(Generator& g) {
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<UnaryModule>>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(784, 256, true, Options{}, &g), std::make_shared<ReLU>(),
      std::make_shared<Linear>(256, 128, true, Options{}, &g), std::make_shared<ReLU>(),
      std::make_shared<Linear>(128, 10, true, Options{}, &g)});
}

std::shared_ptr<const Dataset> load(const std::string& dir, bool train, int64_t limit) {
  Dataset d = load_mnist(dir, train);
  if (limit > 0 && limit < d.size()) d = subset(d, 0, limit);
  return std::make_shared<Dataset>(std::move(d));
}

int run(int argc, char** argv) {
  examples::Args args("mnist", "trains a CNN or an MLP on MNIST-format data (IDX files, gzip or raw)");
  args.option("model", "cnn", "cnn or mlp")
      .option("data", "/usr/share/datasets/fashion-mnist",
              "folder with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
      .option("epochs", "0", "epochs (0: 8 for the CNN, 12 for the MLP)")
      .option("batch-size", "128", "global batch size (split over the ranks)")
      .option("lr", "0.001", "AdamW learning rate (cosine decay over the epochs)")
      .option("weight-decay", "0.0001", "AdamW weight decay")
      .option("train-limit", "0", "use only the first N training images (0: all)")
      .option("test-limit", "0", "use only the first N test images (0: all)")
      .option("validation-size", "5000",
              "hold out the last N training images for validation and the choice of the best model; "
              "the test set is used once, at the end")
      .flag("daso",
            "Heat's DASO across nodes (wickrun --nnodes): node-local gradient averaging, "
            "selective non-blocking parameter averaging between nodes")
      .option("daso-warmup", "4", "DASO: epochs of blocking averaging at the start")
      .option("daso-cooldown", "4", "DASO: epochs of blocking averaging at the end")
      .flag("cuda-graphs", "capture the training step in a CUDA graph and replay it (one GPU, --model mlp)");
  examples::add_training_options(args, "mnist-out");
  if (!args.parse(argc, argv)) return 0;

  const std::string model_kind = args.str("model");
  if (model_kind != "cnn" && model_kind != "mlp") throw std::runtime_error("--model must be cnn or mlp");
  const bool graphs = args.is_set("cuda-graphs");
  // A graph replays the random numbers drawn at its capture: the CNN's dropout would drop the same units every step.
  if (graphs && model_kind != "mlp") throw std::runtime_error("--cuda-graphs needs --model mlp (the CNN has dropout)");
  int64_t epochs = args.integer("epochs");
  if (epochs == 0) epochs = model_kind == "cnn" ? 8 : 12;
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  Device device = examples::pick_device(args.str("device"));

  const examples::Timeouts waits = examples::timeouts(args);
  ProcessGroup group = ProcessGroup::from_environment(device, waits.control, waits.collective);
  const int world = group.config.world_size, rank = group.config.rank;
  int64_t batch = args.integer("batch-size");
  if (batch % world != 0) throw std::runtime_error("--batch-size must be a multiple of the number of ranks");

  auto train_set = load(args.str("data"), true, args.integer("train-limit"));
  auto test_set = load(args.str("data"), false, args.integer("test-limit"));
  // Choosing the model by its test loss and then reporting its test accuracy would flatter
  // it: validation and model choice use held-out training images instead.
  auto validation_set = examples::hold_out_validation(train_set, args.integer("validation-size"));
  auto normalise = [](Batch b, uint64_t) {
    b.inputs = to_float_normalized(b.inputs, {kMean}, {kStd});
    return b;
  };
  BatchStream train(train_set, {.batch_size = batch / world,
                                .seed = seed,
                                .rank = rank,
                                .world_size = world,
                                .device = device,
                                .transform = normalise});
  BatchStream validation(validation_set, {.batch_size = 512 / world,
                                          .shuffle = false,
                                          .rank = rank,
                                          .world_size = world,
                                          .device = device,
                                          .transform = normalise});

  manual_seed(seed);
  Generator init(seed);
  std::shared_ptr<UnaryModule> net = model_kind == "cnn" ? make_cnn(init) : make_mlp(init);
  net->to(device);
  SupervisedModel model = classifier(net);
  AdamW optimizer(
      net->named_parameters(),
      AdamOptions{.lr = args.number("lr"), .weight_decay = args.number("weight-decay"), .capturable = graphs});

  LoopOptions options =
      examples::loop_options(args, group, epochs, examples::cosine_decay(epochs), "mnist-" + model_kind + ".ckpt");
  options.trainer.cuda_graphs = graphs;
  if (group.is_driver())
    std::printf("mnist: %s on %s in %s, %lld rank(s), %lld training, %lld validation and %lld test images from %s\n",
                model_kind.c_str(), device.str().c_str(), precision_name(options.trainer.precision),
                static_cast<long long>(world), static_cast<long long>(train_set->size()),
                static_cast<long long>(validation_set->size()), static_cast<long long>(test_set->size()),
                args.str("data").c_str());
  DataParallelOptions parallel = examples::data_parallel_options(args, waits);
  if (args.is_set("daso"))
    parallel.daso = DasoOptions{.total_epochs = epochs,
                                .warmup_epochs = args.integer("daso-warmup"),
                                .cooldown_epochs = args.integer("daso-cooldown")};
  LoopState state = train_in_group(group, model, optimizer, train, &validation, options, parallel);
  if (!group.is_driver()) return 0;

  examples::report(args, state, *net, model_kind);
  // Once, on the driver, on images no choice was made on (the returned model is the one
  // with the smallest validation loss).
  BatchStream test(test_set, {.batch_size = 512, .shuffle = false, .device = device, .transform = normalise});
  examples::report_test_accuracy(model, optimizer, test, options.trainer.precision);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::run_main("mnist", run, argc, argv); }
