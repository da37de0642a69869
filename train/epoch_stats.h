#pragma once
// What one pass over a batch stream measured, summed over every replica: the loss is the
// mean over all examples of all ranks, not a mean of per-rank means.
#include <cstdint>

namespace wick {

struct EpochStats {
  double loss_sum = 0;   // sum over examples of the per-example loss
  int64_t examples = 0;
  int64_t correct = 0;   // argmax == target, for classifiers
  int64_t batches = 0;   // this replica's batches
  double seconds = 0;    // wall time of the pass on this replica

  double loss() const { return examples > 0 ? loss_sum / static_cast<double>(examples) : 0.0; }
  double accuracy() const { return examples > 0 ? static_cast<double>(correct) / static_cast<double>(examples) : 0.0; }
  double examples_per_second() const { return seconds > 0 ? static_cast<double>(examples) / seconds : 0.0; }
};

}  // namespace wick
