#pragma once
// ReplicaMetrics: sums and maxima over the ranks that train together, for what every rank
// must agree on besides the gradients: an epoch's loss sums and example counts, the number
// of batch rounds of an epoch, a skipped float16 step.
#include <cstdint>
#include <vector>

namespace wick {

class ReplicaMetrics {
 public:
  virtual ~ReplicaMetrics() = default;
  // How many ranks the sums run over (1: they are this rank's own values).
  virtual int64_t ranks() const = 0;
  // Element-wise sum over the ranks; every rank gets it.
  virtual std::vector<double> sum(std::vector<double> values) = 0;
  // The largest `value` over the ranks.
  virtual int64_t max(int64_t value) = 0;
};

}  // namespace wick
