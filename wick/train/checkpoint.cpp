#include <wick/train/checkpoint.h>

#include <unistd.h>

#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

#include <wick/train/tensor_map_prefix.h>

namespace wick {
namespace {

constexpr const char* kFormat = "wick-checkpoint-parts";
constexpr const char* kVersion = "1";

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

TensorMap cloned(const TensorMap& m) {
  TensorMap out;
  for (const auto& [k, v] : m) out[k] = v.clone();
  return out;
}

TensorMap read_checked(const std::string& path) {
  StringMap meta;
  TensorMap all = load_safetensors(path, &meta);
  WICK_CHECK(meta["format"] == kFormat, "Checkpoint::load: ", path, " is not a checkpoint of wick::Checkpoint (format '",
             meta["format"], "')");
  WICK_CHECK(meta["version"] == kVersion, "Checkpoint::load: ", path, " has version '", meta["version"], "', expected ",
             kVersion);
  return all;
}

}  // namespace

Checkpoint& Checkpoint::add(const std::string& name, std::function<TensorMap()> save,
                            std::function<void(const TensorMap&)> load, Scope scope) {
  WICK_CHECK(!name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
                                  std::string::npos,
             "Checkpoint::add: part name '", name, "' must be letters, digits, '_' and '-'");
  for (const Part& p : parts_) WICK_CHECK(p.name != name, "Checkpoint::add: there is already a part named '", name, "'");
  WICK_CHECK(save && load, "Checkpoint::add: part '", name, "' needs both a save and a load function");
  parts_.push_back({name, scope, std::move(save), std::move(load)});
  return *this;
}

Checkpoint& Checkpoint::add(const std::string& name, Module& module) {
  return add(
      name, [&module] { return module.state_dict().to_map(); },
      [&module](const TensorMap& s) { module.load_state_dict(StateDict(s)); }, Scope::Shared);
}

Checkpoint& Checkpoint::add(const std::string& name, Optimizer& optimizer) {
  return add(
      name, [&optimizer] { return optimizer.state_dict(); },
      [&optimizer](const TensorMap& s) { optimizer.load_state_dict(s); }, Scope::Shared);
}

Checkpoint& Checkpoint::add(const std::string& name, LRScheduler& scheduler) {
  return add(
      name, [&scheduler] { return scheduler.state_dict(); },
      [&scheduler](const TensorMap& s) { scheduler.load_state_dict(s); }, Scope::Shared);
}

Checkpoint& Checkpoint::add(const std::string& name, Generator& generator) {
  return add(
      name,
      [&generator] {
        return TensorMap{{"seed", detail::u64_tensor(generator.seed())}, {"offset", detail::u64_tensor(generator.offset())}};
      },
      [&generator, name](const TensorMap& s) {
        const uint64_t seed = detail::u64_of(s, "seed", "Checkpoint::load", "generator '" + name + "'");
        generator.set_state(seed, detail::u64_of(s, "offset", "Checkpoint::load", "generator '" + name + "'"));
      },
      Scope::PerRank);
}

Checkpoint& Checkpoint::add(const std::string& name, int64_t& counter) {
  return add(
      name, [&counter] { return TensorMap{{"value", full({}, counter, Options(DType::Int64))}}; },
      [&counter, name](const TensorMap& s) {
        auto it = s.find("value");
        WICK_CHECK(it != s.end() && it->second.dtype() == DType::Int64 && it->second.numel() == 1,
                   "Checkpoint::load: counter '", name, "' is missing or not one int64");
        counter = it->second.item<int64_t>();
      },
      Scope::Shared);
}

Checkpoint& Checkpoint::add(const std::string& name, DataLoader& loader) {
  return add(
      name, [&loader] { return loader.state_dict(); }, [&loader](const TensorMap& s) { loader.load_state_dict(s); },
      Scope::PerRank);
}

Checkpoint& Checkpoint::add(const std::string& name, GradScaler& scaler) {
  return add(
      name, [&scaler] { return scaler.state_dict(); }, [&scaler](const TensorMap& s) { scaler.load_state_dict(s); },
      Scope::Shared);
}

std::string Checkpoint::rank_path(const std::string& path, int rank) {
  return rank == 0 ? path : path + ".rank" + std::to_string(rank);
}

void Checkpoint::save(const std::string& path, int rank) const {
  WICK_CHECK(rank >= 0, "Checkpoint::save: rank must be >= 0, got ", rank);
  TensorMap all;
  std::string names;
  for (const Part& p : parts_) {
    if (rank != 0 && p.scope == Scope::Shared) continue;
    detail::add_with_prefix(all, p.name + ".", p.save());
    names += (names.empty() ? "" : ",") + p.name;
  }
  save_safetensors(rank_path(path, rank), all,
                   {{"format", kFormat}, {"version", kVersion}, {"rank", std::to_string(rank)}, {"parts", names}});
}

bool Checkpoint::load(const std::string& path, int rank) {
  WICK_CHECK(rank >= 0, "Checkpoint::load: rank must be >= 0, got ", rank);
  const std::string own = rank_path(path, rank);
  if (!exists(path) || !exists(own)) return false;
  const TensorMap shared = read_checked(path);
  const TensorMap mine = rank == 0 ? TensorMap() : read_checked(own);
  // Everything as it is now, to put back if a part refuses its entries.
  std::vector<TensorMap> before;
  for (const Part& p : parts_) before.push_back(cloned(p.save()));
  size_t applied = 0;
  try {
    for (; applied < parts_.size(); ++applied) {
      const Part& p = parts_[applied];
      const bool from_shared = rank == 0 || p.scope == Scope::Shared;
      try {
        p.load(detail::with_prefix_removed(from_shared ? shared : mine, p.name + "."));
      } catch (const Error& e) {
        throw Error("Checkpoint::load: part '" + p.name + "' of " + (from_shared ? path : own) + ": " + e.what());
      }
    }
  } catch (...) {
    for (size_t i = 0; i < applied; ++i) parts_[i].load(before[i]);
    throw;
  }
  return true;
}

}  // namespace wick
