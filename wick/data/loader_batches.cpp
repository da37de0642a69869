#include <wick/data/loader_batches.h>

#include <wick/tensor/error.h>

namespace wick {

DataLoaderBatches::DataLoaderBatches(DataLoader& loader, std::string input_field, std::string target_field)
    : loader_(loader), input_field_(std::move(input_field)), target_field_(std::move(target_field)) {
  WICK_CHECK(loader_.num_batches() >= 0,
             "DataLoaderBatches: the loader reads an iterable dataset, whose number of batches is not known before it "
             "ends; the training loops need a map-style dataset");
}

std::optional<Batch> DataLoaderBatches::next() {
  std::optional<Example> e = loader_.next();
  if (!e) return std::nullopt;
  Batch b;
  if (e->has(input_field_)) b.inputs = e->at(input_field_);
  if (e->has(target_field_)) b.targets = e->at(target_field_);
  b.fields = std::move(*e);
  return b;
}

}  // namespace wick
