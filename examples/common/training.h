#pragma once
// What the training examples share around the loop: the command-line options every one
// takes, the LoopOptions they make, and the report at the end.
#include <string>

#include <wick/distributed/process_group.h>
#include <wick/train/loop.h>

#include "examples/common/args.h"

namespace wick::examples {

// --device, --out, --checkpoint-dir, --resume, --seed, --quiet.
void add_training_options(Args& args, const std::string& default_out);

// max_epochs and the schedule as given; on the driver the learning curve goes to --out;
// checkpoints to --checkpoint-dir/<checkpoint_name>; the progress bar only on the driver.
LoopOptions loop_options(const Args& args, const distributed::ProcessGroup& group, int64_t epochs,
                         LearningRateFactor lr_factor, const std::string& checkpoint_name);

// On the driver: prints the learning curve, the test accuracy of the returned model and,
// on a GPU, the caching allocator's peak, and saves the model to --out/model.safetensors.
void report(const Args& args, const LoopState& state, const Module& model, const std::string& model_name);

// Runs `body`, printing a wick::Error or any exception as "<program>: <message>"; the exit status.
int run_main(const char* program, int (*body)(int, char**), int argc, char** argv);

}  // namespace wick::examples
