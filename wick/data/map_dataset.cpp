#include <wick/data/map_dataset.h>

#include <set>

namespace wick {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class TransformedDataset : public MapDataset {
 public:
  TransformedDataset(std::shared_ptr<const MapDataset> data, ExampleTransform fn)
      : data_(std::move(data)), fn_(std::move(fn)) {}
  int64_t size() const override { return data_->size(); }
  Example get(int64_t i) const override { return get(i, example_seed(0, 0, i)); }
  Example get(int64_t i, uint64_t seed) const override {
    // The inner dataset draws from a seed of its own, so that a transform stacked on a
    // random dataset (or on another transform) does not repeat its draws.
    return fn_(data_->get(i, derive_seed(seed, 1)), seed);
  }

 private:
  std::shared_ptr<const MapDataset> data_;
  ExampleTransform fn_;
};

class SubsetDataset : public MapDataset {
 public:
  SubsetDataset(std::shared_ptr<const MapDataset> data, int64_t begin, int64_t end)
      : data_(std::move(data)), begin_(begin), end_(end) {}
  int64_t size() const override { return end_ - begin_; }
  Example get(int64_t i) const override {
    check_index("subset", i, size());
    return data_->get(begin_ + i);
  }
  Example get(int64_t i, uint64_t seed) const override {
    check_index("subset", i, size());
    return data_->get(begin_ + i, seed);
  }

 private:
  std::shared_ptr<const MapDataset> data_;
  int64_t begin_, end_;
};

}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t stage) {
  return splitmix64(splitmix64(seed) ^ (stage + 0x632BE59BD9B4E019ull));
}

uint64_t example_seed(uint64_t seed, int64_t epoch, int64_t index) {
  return derive_seed(derive_seed(seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(index));
}

void check_index(const char* op, int64_t i, int64_t n) {
  WICK_CHECK(i >= 0 && i < n, op, ": index ", i, " is out of range for a dataset of ", n, " examples");
}

TensorDictDataset::TensorDictDataset(std::vector<std::pair<std::string, Tensor>> fields) : fields_(std::move(fields)) {
  WICK_CHECK(!fields_.empty(), "TensorDictDataset: needs at least one field");
  std::set<std::string> seen;
  for (const auto& [name, t] : fields_) {
    WICK_CHECK(seen.insert(name).second, "TensorDictDataset: duplicate field '", name, "'");
    WICK_CHECK(t.defined() && t.dim() >= 1, "TensorDictDataset: field '", name,
               "' must be a tensor with at least 1 dim (examples along dim 0), got ",
               t.defined() ? shape_str(t.shape()) : std::string("an undefined tensor"));
    WICK_CHECK(t.device().is_cpu(), "TensorDictDataset: field '", name, "' is on ", t.device(),
               "; datasets live on the CPU (the loader moves batches to a device)");
  }
  size_ = fields_[0].second.size(0);
  for (const auto& [name, t] : fields_) {
    WICK_CHECK(t.size(0) == size_, "TensorDictDataset: field '", name, "' has ", t.size(0), " examples (shape ",
               shape_str(t.shape()), ") but field '", fields_[0].first, "' has ", size_);
  }
}

Example TensorDictDataset::get(int64_t i) const {
  check_index("TensorDictDataset::get", i, size_);
  Example e;
  for (const auto& [name, t] : fields_) e.set(name, t.select(0, i));
  return e;
}

std::shared_ptr<const MapDataset> as_map_dataset(const Dataset& data) {
  return std::make_shared<TensorDictDataset>(
      std::vector<std::pair<std::string, Tensor>>{{"input", data.inputs}, {"target", data.targets}});
}

std::shared_ptr<const MapDataset> transformed(std::shared_ptr<const MapDataset> data, ExampleTransform fn) {
  WICK_CHECK(data != nullptr, "transformed: the dataset is null");
  WICK_CHECK(static_cast<bool>(fn), "transformed: the function is empty");
  return std::make_shared<TransformedDataset>(std::move(data), std::move(fn));
}

std::shared_ptr<const MapDataset> subset(std::shared_ptr<const MapDataset> data, int64_t begin, int64_t end) {
  WICK_CHECK(data != nullptr, "subset: the dataset is null");
  WICK_CHECK(0 <= begin && begin <= end && end <= data->size(), "subset: [", begin, ", ", end,
             ") is not a range of a dataset of ", data->size(), " examples");
  return std::make_shared<SubsetDataset>(std::move(data), begin, end);
}

}  // namespace wick
