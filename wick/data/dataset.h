#pragma once
// Dataset: examples held in memory, one per index of dim 0 of `inputs` and `targets`
// (e.g. images uint8 [N, C, H, W] and labels int64 [N]).
#include <cstdint>

#include <wick/tensor/tensor.h>

namespace wick {

struct Dataset {
  Tensor inputs;
  Tensor targets;

  Dataset() = default;
  // Throws wick::Error unless both are defined, at least 1-d, and as long along dim 0.
  Dataset(Tensor inputs, Tensor targets);

  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

// Examples [begin, end) as views of `data` (no copy). Throws unless 0 <= begin <= end <= size.
Dataset subset(const Dataset& data, int64_t begin, int64_t end);

}  // namespace wick
