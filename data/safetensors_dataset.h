#pragma once
// A safetensors file as a dataset: each tensor (or the ones named) is a field, row i of
// each is example i. tensor/safetensors.h reads whole files (it validates the header and
// copies every tensor into memory), so this loads the file: it is for data that fits in
// memory. Use .npy/.npz (data/npy.h) for memory-mapped access to larger data.
#include <memory>
#include <string>
#include <vector>

#include <wick/data/map_dataset.h>

namespace wick {

// Fields in name order (all tensors), or in the order of `fields`; throws naming the file
// for a missing field, 0-d tensors or unequal lengths.
std::shared_ptr<const MapDataset> safetensors_dataset(const std::string& path, const std::vector<std::string>& fields = {});

}  // namespace wick
