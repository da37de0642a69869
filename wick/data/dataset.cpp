#include <wick/data/dataset.h>

namespace wick {

Dataset::Dataset(Tensor in, Tensor tgt) : inputs(std::move(in)), targets(std::move(tgt)) {
  WICK_CHECK(inputs.defined() && targets.defined(), "Dataset: inputs and targets must both be defined");
  WICK_CHECK(inputs.dim() >= 1 && targets.dim() >= 1, "Dataset: inputs ", shape_str(inputs.shape()), " and targets ",
             shape_str(targets.shape()), " need a dim 0 to index examples by");
  WICK_CHECK(inputs.size(0) == targets.size(0), "Dataset: inputs ", shape_str(inputs.shape()), " and targets ",
             shape_str(targets.shape()), " hold different numbers of examples (", inputs.size(0), " vs ",
             targets.size(0), ")");
}

Dataset subset(const Dataset& data, int64_t begin, int64_t end) {
  WICK_CHECK(0 <= begin && begin <= end && end <= data.size(), "subset: range [", begin, ", ", end,
             ") is not within the dataset's ", data.size(), " examples");
  return Dataset(data.inputs.narrow(0, begin, end - begin), data.targets.narrow(0, begin, end - begin));
}

}  // namespace wick
