#include "examples/common/training.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <exception>
#include <filesystem>

#include <wick/tensor/cuda.h>
#include <wick/tensor/safetensors.h>

namespace wick::examples {

void add_training_options(Args& args, const std::string& default_out) {
  args.option("device", "auto", "auto, cpu, cuda or cuda:N")
      .option("out", default_out, "folder for the learning curve (CSV, PNG) and the model")
      .option("checkpoint-dir", "", "write a checkpoint there after every epoch, and resume from it when it exists")
      .flag("fresh", "start over even when --checkpoint-dir holds a checkpoint (it is overwritten)")
      .flag("resume", "kept for old scripts: resuming is the default")
      .option("seed", "1", "seed of the initialisation, shuffling, augmentation and dropout")
      .option("reduce-dtype", "fp32",
              "dtype gradients are all-reduced in between ranks: fp32 (their own), bf16 or fp16 (half the "
              "traffic, PyTorch's compression hooks)")
      .option("precision", "fp32",
              "fp32, bf16 or fp16: bf16/fp16 run the forward under autocast (float32 parameters; fp16 "
              "with loss scaling), see docs/mixed_precision.md")
      .option("log-every", "0", "also log every N-th batch's loss (TensorBoard train/batch_loss, and stderr); 0: per epoch only")
      .flag("quiet", "no progress bar");
  auto from_env = [](const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr && *v != '\0' ? v : fallback);
  };
  args.option("rendezvous-timeout", from_env("WICK_RENDEZVOUS_TIMEOUT", "60"),
              "seconds to wait for every rank to join (env WICK_RENDEZVOUS_TIMEOUT)")
      .option("collective-timeout", from_env("WICK_COLLECTIVE_TIMEOUT", "300"),
              "seconds a collective waits for a peer before failing (env WICK_COLLECTIVE_TIMEOUT)")
      .option("data-parallel-timeout", from_env("WICK_DATA_PARALLEL_TIMEOUT", "600"),
              "seconds the data-parallel loop waits for the other ranks (env WICK_DATA_PARALLEL_TIMEOUT)");
}

std::chrono::milliseconds timeout_option(const Args& args, const char* name) {
  // "inf" or 1e30 does not fit int64 milliseconds (the cast was undefined, and x86 made it
  // a negative timeout: "within -9223372036854775808 ms"), and clocks add a timeout to
  // now() in nanoseconds, so 1e8 s is the most. A fraction of a millisecond rounds up, so a
  // positive timeout stays positive.
  const double s = args.number(name);
  if (!(s > 0 && s <= 1e8))
    throw std::runtime_error(std::string("--") + name + " must be a positive number of seconds, at most 1e8 (got '" +
                             args.str(name) + "')");
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(s * 1000)));
}

Timeouts timeouts(const Args& args) {
  const auto ms = [&](const char* name) { return timeout_option(args, name); };
  Timeouts t;
  t.control.rendezvous_timeout = ms("rendezvous-timeout");
  t.collective = ms("collective-timeout");
  t.data_parallel = ms("data-parallel-timeout");
  return t;
}

std::shared_ptr<const Dataset> hold_out_validation(std::shared_ptr<const Dataset>& train, int64_t validation_size) {
  if (validation_size <= 0 || validation_size >= train->size())
    throw std::runtime_error("--validation-size must be between 1 and the number of training images minus 1 (" +
                             std::to_string(train->size() - 1) + ")");
  const int64_t kept = train->size() - validation_size;
  auto validation = std::make_shared<Dataset>(subset(*train, kept, train->size()));
  train = std::make_shared<Dataset>(subset(*train, 0, kept));
  return validation;
}

int restart_count() {
  const char* v = std::getenv("WICK_RESTART_COUNT");
  return v != nullptr ? std::atoi(v) : 0;
}

distributed::DataParallelOptions data_parallel_options(const Args& args, const Timeouts& waits) {
  distributed::DataParallelOptions parallel;
  parallel.timeout = waits.data_parallel;
  switch (parse_precision(args.str("reduce-dtype"))) {
    case Precision::Float32:
      break;
    case Precision::BFloat16:
      parallel.reduce_dtype = DType::BFloat16;
      break;
    case Precision::Float16:
      parallel.reduce_dtype = DType::Float16;
      break;
  }
  return parallel;
}

LearningRateFactor cosine_decay(int64_t epochs) {
  return [epochs](int64_t epoch, std::optional<double>) {
    return 0.5 * (1 + std::cos(M_PI * static_cast<double>(epoch) / static_cast<double>(epochs)));
  };
}

LoopOptions loop_options(const Args& args, const distributed::ProcessGroup& group, int64_t epochs,
                         LearningRateFactor lr_factor, const std::string& checkpoint_name) {
  LoopOptions options;
  options.max_epochs = epochs;
  options.lr_factor = std::move(lr_factor);
  const std::string out = args.str("out");
  if (group.is_driver()) {
    std::filesystem::create_directories(out);
    options.learning_curve_csv = out + "/learning_curve.csv";
    options.learning_curve_png = out + "/learning_curve.png";
    options.learning_curve_jsonl = out + "/learning_curve.jsonl";
    options.tensorboard_dir = out + "/tensorboard";
  }
  options.log_every_n_steps = args.integer("log-every");
  const std::string dir = args.str("checkpoint-dir");
  if (!dir.empty()) {
    std::filesystem::create_directories(dir);
    options.checkpoint_path = dir + "/" + checkpoint_name;
    // A job that wickrun --max-restarts starts again, or a user reruns after a crash, goes
    // on from its newest checkpoint.
    if (args.is_set("fresh") && args.is_set("resume")) throw std::runtime_error("--fresh and --resume contradict each other");
    options.resume = !args.is_set("fresh");
  } else if (restart_count() > 0 && group.is_driver()) {
    std::fprintf(stderr, "warning: restart %d without --checkpoint-dir: training starts over\n", restart_count());
  }
  options.trainer.progress = args.is_set("quiet") || !group.is_driver() ? Progress::Style::Off : Progress::Style::Auto;
  options.trainer.precision = parse_precision(args.str("precision"));
  return options;
}

void report(const Args& args, const LoopState& state, const Module& model, const std::string& model_name) {
  const std::string out = args.str("out");
  std::printf("\n%s", learning_curve_csv(state.learning_curve).c_str());
  save_safetensors(out + "/model.safetensors", model.state_dict().to_map(), {{"model", model_name}});
  if (state.min_validation_epoch) {
    const CurvePoint& best = state.learning_curve.at(static_cast<size_t>(*state.min_validation_epoch));
    if (best.validation_accuracy)
      std::printf("\nvalidation accuracy %.2f%% (the model of epoch %lld, smallest validation loss %.4f)\n",
                  100 * *best.validation_accuracy, static_cast<long long>(best.epoch + 1),
                  best.validation_loss.value_or(0));
    else  // a model that counts no accuracy (a language model)
      std::printf("\nsmallest validation loss %.4f (the model of epoch %lld)\n", best.validation_loss.value_or(0),
                  static_cast<long long>(best.epoch + 1));
  }
  const std::vector<Variable> params = model.parameters();
  if (!params.empty() && params.front().device().is_cuda()) {
    cuda::MemoryStats stats = cuda::memory_stats(params.front().device().index);
    std::printf("cuda memory: peak allocated %zu bytes\n", stats.peak_allocated);
  }
  std::printf("learning curve: %s/learning_curve.csv (and .jsonl; tensorboard --logdir %s/tensorboard), plot: "
              "%s/learning_curve.png, model: %s/model.safetensors\n",
              out.c_str(), out.c_str(), out.c_str(), out.c_str());
}

void report_test_accuracy(SupervisedModel& model, Optimizer& optimizer, BatchStream& test, Precision precision) {
  SingleReplica alone(*model.module);
  Trainer evaluator(model, &optimizer, alone, {.progress = Progress::Style::Off, .precision = precision});
  EpochStats stats = evaluator.evaluate(test, 0);
  std::printf("test accuracy %.2f%% on %lld test images\n", 100.0 * stats.accuracy(),
              static_cast<long long>(stats.examples));
}

int run_main(const char* program, int (*body)(int, char**), int argc, char** argv) {
  // Line by line, so that stdout and the loop's stderr lines interleave in order in a log.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace wick::examples
