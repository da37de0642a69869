#pragma once
// A safetensors file as a dataset: each tensor (or the ones named) is a field, row i of
// each is example i. The file is memory-mapped, not loaded: the header is validated as
// load_safetensors does (wick/tensor/safetensors.h), then get(i) copies row i of each field out
// of the mapping, so a file larger than memory (or than RLIMIT_DATA) works, as with .npy
// files (wick/data/npy.h, wick/data/mapped_file.h).
#include <memory>
#include <string>
#include <vector>

#include <wick/data/map_dataset.h>

namespace wick {

// Fields in name order (all tensors), or in the order of `fields`; throws naming the file
// for a corrupt header, a missing field, 0-d tensors or unequal lengths.
std::shared_ptr<const MapDataset> safetensors_dataset(const std::string& path, const std::vector<std::string>& fields = {});

}  // namespace wick
