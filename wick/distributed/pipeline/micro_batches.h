#pragma once
// How a batch goes through a pipeline's stages as micro-batches: the order of each stage's
// forwards and backwards, and when BatchNorm layers update their running statistics. Rank 0
// chooses both and sends them to the stages with each step (stage_command.h).
#include <cstdint>

namespace wick::distributed {

// PipelineModel::train_step's order of work.
enum class PipelineSchedule : uint8_t {
  GPipe,     // every forward, then every backward: simple, holds all activations
  OneFOneB,  // after a warm-up, one forward then one backward: at most `stages`
             // micro-batches' activations per stage
};

// How BatchNorm layers in the stages update their running statistics when a batch goes
// through as several micro-batches (train_step, or forward() with set_micro_batches).
// Each micro-batch is normalised with its own statistics either way (see
// docs/model_parallel.md: the loss and gradients are those of the micro-batches, not of
// the whole batch).
enum class BatchNormStatistics : uint8_t {
  // Once per step, from the statistics of every micro-batch of the step together: the
  // running statistics and num_batches_tracked are those of one update with the whole
  // batch as it reaches the layer (torchgpipe's deferred batch norm). The default.
  PerStep,
  // Once per micro-batch, as the layer does on its own: m updates of momentum each.
  PerMicroBatch,
};

}  // namespace wick::distributed
