#include <wick/data/safetensors_dataset.h>

#include <wick/data/mapped_file.h>
#include <wick/data/npy.h>
#include <wick/tensor/safetensors.h>

namespace wick {

std::shared_ptr<const MapDataset> safetensors_dataset(const std::string& path, const std::vector<std::string>& fields) {
  try {
    const SafetensorsIndex index = read_safetensors_index(path);
    // The index checked every tensor's bytes against the file's length before it is mapped.
    auto file = std::make_shared<MappedFile>(path);
    file->map();
    auto array = [&](const SafetensorsEntry& e) {
      return NpyArray(file, path + ":" + e.name, e.dtype, e.shape, e.offset);
    };
    std::vector<std::pair<std::string, NpyArray>> chosen;
    if (fields.empty()) {
      for (const SafetensorsEntry& e : index.tensors) chosen.emplace_back(e.name, array(e));
    } else {
      for (const std::string& name : fields) {
        const SafetensorsEntry* found = nullptr;
        for (const SafetensorsEntry& e : index.tensors) found = e.name == name ? &e : found;
        if (!found) {
          std::string have;
          for (const SafetensorsEntry& e : index.tensors) have += (have.empty() ? "" : ", ") + e.name;
          detail::throw_error("it has no tensor '", name, "' (it has: ", have, ")");
        }
        chosen.emplace_back(name, array(*found));
      }
    }
    return std::make_shared<ArrayDictDataset>(std::move(chosen));
  } catch (const Error& e) {
    detail::throw_error("safetensors_dataset: '", path, "': ", e.what());
  }
}

}  // namespace wick
