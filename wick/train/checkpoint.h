#pragma once
// Checkpoint: what a training loop of your own must save to resume exactly, in one
// safetensors file per rank, written atomically (a temporary name, then renamed).
//
//   int64_t step = 0;
//   Checkpoint ckpt;
//   ckpt.add("model", *model).add("optimizer", optimizer).add("scheduler", scheduler)
//       .add("step", step).add("rng", default_generator())
//       .add("loader", [&] { return loader.state_dict(); }, [&](const TensorMap& s) { loader.load_state_dict(s); });
//   if (ckpt.load("run.ckpt", rank)) std::printf("resumed at step %lld\n", (long long)step);
//   ... every so often, on every rank:  ckpt.save("run.ckpt", rank);
//
// Ranks. Parts are shared (the same on every rank of a data-parallel job: the model, the
// optimizer, the schedule, counters) or per rank (random generators, a loader's position:
// each rank's own). Rank 0 writes the shared parts and its own to `path`; rank r > 0 writes
// only its own parts to `path.rank<r>`. load(path, r) reads the shared parts from `path`
// and rank r's own from its file, so every rank must be able to read `path` (a shared file
// system, or a copy). Saving is per process: call save on every rank, then a barrier before
// anything deletes or replaces older files.
//
// Loading is all or nothing: every part's entries are decoded and applied, and if any part
// refuses them (a missing key, another shape) the parts already applied are put back as they
// were and the error names the part and the file.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <wick/nn/module.h>
#include <wick/optim/lr_scheduler.h>
#include <wick/optim/optimizer.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/safetensors.h>

namespace wick {

class Checkpoint {
 public:
  enum class Scope { Shared, PerRank };

  // Each part is kept by reference (it must outlive the Checkpoint) under a name unique in
  // this checkpoint (letters, digits, '_' and '-'); its entries are stored as "name.key".
  Checkpoint& add(const std::string& name, Module& module);
  Checkpoint& add(const std::string& name, Optimizer& optimizer);
  Checkpoint& add(const std::string& name, LRScheduler& scheduler);
  Checkpoint& add(const std::string& name, Generator& generator);  // per rank
  Checkpoint& add(const std::string& name, int64_t& counter);      // shared
  // Anything else: `save` returns its state, `load` puts one back (and throws wick::Error
  // for a state it cannot take, leaving itself as it was).
  Checkpoint& add(const std::string& name, std::function<TensorMap()> save, std::function<void(const TensorMap&)> load,
                  Scope scope = Scope::PerRank);

  // The file rank `rank` writes and reads its own parts from.
  static std::string rank_path(const std::string& path, int rank);

  void save(const std::string& path, int rank = 0) const;
  // False, changing nothing, when this rank's file (or, for rank r > 0, `path`) does not
  // exist; true once every part is loaded.
  bool load(const std::string& path, int rank = 0);

 private:
  struct Part {
    std::string name;
    Scope scope;
    std::function<TensorMap()> save;
    std::function<void(const TensorMap&)> load;
  };
  std::vector<Part> parts_;
};

}  // namespace wick
