#pragma once
// What one pass over a batch stream measured, summed over every replica: the loss is the
// mean over all examples of all ranks, not a mean of per-rank means.
#include <cstdint>
#include <map>
#include <string>

namespace wick {

struct EpochStats {
  double loss_sum = 0;   // sum over examples of the per-example loss
  int64_t examples = 0;
  int64_t correct = 0;   // argmax == target, for classifiers
  int64_t batches = 0;   // this replica's batches
  double seconds = 0;    // wall time of the pass on this replica
  // Your step's metrics: the sum over examples of each (metric x the batch's examples).
  std::map<std::string, double> metric_sums;

  double loss() const { return examples > 0 ? loss_sum / static_cast<double>(examples) : 0.0; }
  double accuracy() const { return examples > 0 ? static_cast<double>(correct) / static_cast<double>(examples) : 0.0; }
  // Each metric's mean over the examples.
  std::map<std::string, double> metrics() const {
    std::map<std::string, double> out;
    for (const auto& [name, s] : metric_sums) out[name] = examples > 0 ? s / static_cast<double>(examples) : 0.0;
    return out;
  }
  double examples_per_second() const { return seconds > 0 ? static_cast<double>(examples) / seconds : 0.0; }
};

}  // namespace wick
