// CIFAR-10 / CIFAR-100 with a small ResNet and augmentation (random crops with 4 pixels of
// padding, horizontal flips), after lamp's cifar100 example: alone or under wickrun.
//
//   cifar --data ~/data/cifar-10-batches-bin
//   cifar --dataset cifar100 --data ~/data/cifar-100-binary
//   wickrun --nproc 2 cifar --data ...
// The binary files come from https://www.cs.toronto.edu/~kriz/cifar.html ("binary version").
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

using Layers = std::initializer_list<std::shared_ptr<UnaryModule>>;

// conv 3x3 - BN - ReLU
std::shared_ptr<UnaryModule> conv_bn_relu(int64_t in, int64_t out, int64_t stride, Generator& g) {
  return std::make_shared<Sequential>(Layers{
      std::make_shared<Conv2d>(in, out, 3, Conv2dOptions{.stride = stride, .padding = 1, .bias = false}, Options{}, &g),
      std::make_shared<BatchNorm2d>(out), std::make_shared<ReLU>()});
}

// Two 3x3 convolutions around an identity (or a strided 1x1 convolution when the shape
// changes), then ReLU: the basic block of a ResNet.
std::shared_ptr<UnaryModule> block(int64_t in, int64_t out, int64_t stride, Generator& g) {
  auto body = std::make_shared<Sequential>(Layers{
      conv_bn_relu(in, out, stride, g),
      std::make_shared<Conv2d>(out, out, 3, Conv2dOptions{.padding = 1, .bias = false}, Options{}, &g),
      std::make_shared<BatchNorm2d>(out)});
  std::shared_ptr<UnaryModule> shortcut;
  if (stride != 1 || in != out)
    shortcut = std::make_shared<Sequential>(Layers{
        std::make_shared<Conv2d>(in, out, 1, Conv2dOptions{.stride = stride, .bias = false}, Options{}, &g),
        std::make_shared<BatchNorm2d>(out)});
  return std::make_shared<Sequential>(Layers{std::make_shared<Residual>(body, shortcut), std::make_shared<ReLU>()});
}

std::shared_ptr<UnaryModule> resnet(int64_t classes, int64_t width, Generator& g) {
  return std::make_shared<Sequential>(Layers{
      conv_bn_relu(3, width, 1, g),
      block(width, width, 1, g), block(width, 2 * width, 2, g), block(2 * width, 4 * width, 2, g),
      block(4 * width, 8 * width, 2, g),
      std::make_shared<AdaptiveAvgPool2d>(1), std::make_shared<Flatten>(),
      std::make_shared<Linear>(8 * width, classes, true, Options{}, &g)});
}

int run(int argc, char** argv) {
  examples::Args args("cifar", "trains a small ResNet on CIFAR-10 or CIFAR-100 binary files");
  args.option("dataset", "cifar10", "cifar10 or cifar100")
      .option("data", "cifar-10-batches-bin", "folder with data_batch_{1..5}.bin + test_batch.bin (CIFAR-10) or train.bin + test.bin (CIFAR-100)")
      .flag("coarse", "CIFAR-100: the 20 coarse labels instead of the 100 fine ones")
      .option("epochs", "30", "epochs")
      .option("batch-size", "128", "global batch size (split over the ranks)")
      .option("lr", "0.1", "SGD learning rate (one cycle: warm-up then cosine decay)")
      .option("width", "32", "channels of the first stage (doubled at each of the three others)")
      .option("validation-size", "5000",
              "hold out the last N training images for validation and the choice of the best model; "
              "the test set is used once, at the end");
  examples::add_training_options(args, "cifar-out");
  if (!args.parse(argc, argv)) return 0;

  const std::string which = args.str("dataset");
  if (which != "cifar10" && which != "cifar100") throw std::runtime_error("--dataset must be cifar10 or cifar100");
  const bool coarse = args.is_set("coarse");
  const int64_t classes = which == "cifar10" ? 10 : coarse ? 20 : 100;
  const int64_t epochs = args.integer("epochs");
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  Device device = examples::pick_device(args.str("device"));
  const examples::Timeouts waits = examples::timeouts(args);
  ProcessGroup group = ProcessGroup::from_environment(device, waits.control, waits.collective);
  const int world = group.config.world_size, rank = group.config.rank;
  const int64_t batch = args.integer("batch-size");
  if (batch % world != 0) throw std::runtime_error("--batch-size must be a multiple of the number of ranks");

  auto load = [&](bool train) {
    return std::make_shared<Dataset>(which == "cifar10" ? load_cifar10(args.str("data"), train)
                                                         : load_cifar100(args.str("data"), train, coarse));
  };
  std::shared_ptr<const Dataset> train_set = load(true);
  auto test_set = load(false);
  // Model choice on held-out training images, so the test accuracy is not flattered.
  auto validation_set = examples::hold_out_validation(train_set, args.integer("validation-size"));
  const std::vector<double> mean{0.4914, 0.4822, 0.4465}, std{0.2470, 0.2435, 0.2616};
  auto augment = [mean, std](Batch b, uint64_t s) {
    b.inputs = to_float_normalized(random_hflip(random_crop(b.inputs, 32, 4, s), 0.5, s + 1), mean, std);
    return b;
  };
  auto normalise = [mean, std](Batch b, uint64_t) {
    b.inputs = to_float_normalized(b.inputs, mean, std);
    return b;
  };
  BatchStream train(train_set, {.batch_size = batch / world, .seed = seed, .rank = rank, .world_size = world,
                                .device = device, .transform = augment});
  BatchStream validation(validation_set, {.batch_size = 500 / world > 0 ? 500 / world : 1, .shuffle = false,
                                          .rank = rank, .world_size = world, .device = device, .transform = normalise});

  manual_seed(seed);
  Generator init(seed);
  auto net = resnet(classes, args.integer("width"), init);
  net->to(device);
  SupervisedModel model = classifier(net);
  SGD optimizer(net->named_parameters(),
                SGDOptions{.lr = args.number("lr"), .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
  // A short linear warm-up, then cosine decay: per-epoch factors of the base rate.
  LearningRateFactor schedule = [epochs](int64_t epoch, std::optional<double>) {
    double warm = std::min<double>(2, static_cast<double>(epochs));
    if (static_cast<double>(epoch) < warm) return (static_cast<double>(epoch) + 1) / (warm + 1);
    return 0.5 * (1 + std::cos(M_PI * (static_cast<double>(epoch) - warm) / std::max(1.0, epochs - warm)));
  };
  LoopOptions options = examples::loop_options(args, group, epochs, schedule, "cifar.ckpt");
  if (group.is_driver())
    std::printf("cifar: %s (%lld classes) on %s, %lld rank(s), %lld training, %lld validation and %lld test images\n",
                which.c_str(), static_cast<long long>(classes), device.str().c_str(), static_cast<long long>(world),
                static_cast<long long>(train_set->size()), static_cast<long long>(validation_set->size()),
                static_cast<long long>(test_set->size()));
  DataParallelOptions parallel = examples::data_parallel_options(args, waits);
  LoopState state = train_in_group(group, model, optimizer, train, &validation, options, parallel);
  if (!group.is_driver()) return 0;
  examples::report(args, state, *net, "resnet");
  // Once, on the driver, with the model of the smallest validation loss.
  BatchStream test(test_set, {.batch_size = 500, .shuffle = false, .device = device, .transform = normalise});
  examples::report_test_accuracy(model, optimizer, test, options.trainer.precision);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return examples::run_main("cifar", run, argc, argv); }
