#include <wick/data/safetensors_dataset.h>

#include <wick/tensor/safetensors.h>

namespace wick {

std::shared_ptr<const MapDataset> safetensors_dataset(const std::string& path, const std::vector<std::string>& fields) {
  TensorMap tensors = load_safetensors(path);
  std::vector<std::pair<std::string, Tensor>> chosen;
  if (fields.empty()) {
    for (auto& [name, t] : tensors) chosen.emplace_back(name, std::move(t));
  } else {
    for (const std::string& name : fields) {
      auto it = tensors.find(name);
      if (it == tensors.end()) {
        std::string have;
        for (const auto& [n, t] : tensors) have += (have.empty() ? "" : ", ") + n;
        detail::throw_error("safetensors_dataset: '", path, "' has no tensor '", name, "' (it has: ", have, ")");
      }
      chosen.emplace_back(name, it->second);
    }
  }
  try {
    return std::make_shared<TensorDictDataset>(std::move(chosen));
  } catch (const Error& e) {
    detail::throw_error("safetensors_dataset: '", path, "': ", e.what());
  }
}

}  // namespace wick
