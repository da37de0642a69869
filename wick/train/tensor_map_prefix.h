#pragma once
// Checkpoint files are one flat TensorMap whose keys carry the part they belong to
// ("model.fc.weight", "optimizer.0.momentum", "rng.seed"): these split and join them, and
// store a uint64 (a generator's seed or offset) in an int64 tensor bit for bit.
#include <bit>
#include <cstdint>
#include <string>

#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/safetensors.h>

namespace wick::detail {

// Entries of `all` under `prefix`, with the prefix removed.
inline TensorMap with_prefix_removed(const TensorMap& all, const std::string& prefix) {
  TensorMap out;
  for (auto it = all.lower_bound(prefix); it != all.end() && it->first.rfind(prefix, 0) == 0; ++it)
    out[it->first.substr(prefix.size())] = it->second;
  return out;
}

inline void add_with_prefix(TensorMap& all, const std::string& prefix, const TensorMap& part) {
  for (const auto& [k, v] : part) all[prefix + k] = v;
}

inline Tensor u64_tensor(uint64_t v) { return full({}, std::bit_cast<int64_t>(v), Options(DType::Int64)); }

// `op` names the caller in the error, `path` the file.
inline uint64_t u64_of(const TensorMap& t, const std::string& key, const char* op, const std::string& path) {
  auto it = t.find(key);
  WICK_CHECK(it != t.end() && it->second.dtype() == DType::Int64 && it->second.numel() == 1, op, ": ", path,
             ": missing or malformed '", key, "'");
  return std::bit_cast<uint64_t>(it->second.item<int64_t>());
}

}  // namespace wick::detail
