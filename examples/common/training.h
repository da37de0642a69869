#pragma once
// What the training examples share around the loop: the command-line options every one
// takes, the LoopOptions they make, and the report at the end.
#include <chrono>
#include <memory>
#include <string>

#include <wick/data/dataset.h>
#include <wick/distributed/data_parallel/data_parallel_sync.h>
#include <wick/distributed/process_group.h>
#include <wick/train/loop.h>

#include "examples/common/args.h"

namespace wick::examples {

// --device, --out, --checkpoint-dir (resumed from when it holds a checkpoint, unless
// --fresh), --seed, --precision, --reduce-dtype, --quiet, and the timeouts below.
void add_training_options(Args& args, const std::string& default_out);

// How long a rank waits for the others, in seconds on the command line, defaulting to the
// environment (WICK_RENDEZVOUS_TIMEOUT, WICK_COLLECTIVE_TIMEOUT, WICK_DATA_PARALLEL_TIMEOUT)
// and then to the library's defaults (60 s, 300 s, 600 s).
struct Timeouts {
  distributed::ControlOptions control;  // rendezvous_timeout: joining the job
  std::chrono::milliseconds collective;  // one collective of the communicator
  std::chrono::milliseconds data_parallel;  // DataParallelOptions::timeout
};
Timeouts timeouts(const Args& args);

// The option `name` as a timeout: a positive number of seconds up to 1e8 (over 3 years;
// "inf" is refused, not waited for), rounded up to whole milliseconds. Throws naming the
// option otherwise.
std::chrono::milliseconds timeout_option(const Args& args, const char* name);

// The data-parallel options of --data-parallel-timeout and --reduce-dtype.
distributed::DataParallelOptions data_parallel_options(const Args& args, const Timeouts& waits);

// max_epochs and the schedule as given; on the driver the learning curve goes to --out;
// checkpoints to --checkpoint-dir/<checkpoint_name>; the progress bar only on the driver.
// Splits off the last `validation_size` images of `train` (which keeps the rest) as the
// validation set: model choice on held-out training images, so the test accuracy is not
// flattered. Throws unless 1 <= validation_size < train's size.
std::shared_ptr<const Dataset> hold_out_validation(std::shared_ptr<const Dataset>& train, int64_t validation_size);

// How many times wickrun --max-restarts has started this job again (WICK_RESTART_COUNT).
int restart_count();

// The learning-rate factor 0.5 (1 + cos(pi epoch / epochs)): from 1 down towards 0.
LearningRateFactor cosine_decay(int64_t epochs);

LoopOptions loop_options(const Args& args, const distributed::ProcessGroup& group, int64_t epochs,
                         LearningRateFactor lr_factor, const std::string& checkpoint_name);

// On the driver: prints the learning curve, the validation accuracy (or, for a model that
// counts none, the validation loss) of the returned model and,
// on a GPU, the caching allocator's peak, and saves the model to --out/model.safetensors.
void report(const Args& args, const LoopState& state, const Module& model, const std::string& model_name);

// Once, on the driver, after training: evaluates `model` (the returned one, of the smallest
// validation loss) on the test images, which no choice was made on, and prints
// "test accuracy X% on N test images" (computed in the training's precision).
void report_test_accuracy(SupervisedModel& model, Optimizer& optimizer, BatchStream& test, Precision precision);

// Runs `body`, printing a wick::Error or any exception as "<program>: <message>"; the exit status.
int run_main(const char* program, int (*body)(int, char**), int argc, char** argv);

}  // namespace wick::examples
