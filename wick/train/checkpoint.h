#pragma once
// Checkpoint: what a training loop of your own must save to resume exactly, in one
// safetensors file per rank, written atomically (a temporary name, then renamed).
//
//   int64_t step = 0;
//   Checkpoint ckpt;
//   ckpt.add("model", *model).add("optimizer", optimizer).add("scheduler", scheduler)
//       .add("step", step).add("rng", default_generator()).add("loader", loader).add("scaler", scaler);
//   if (ckpt.load(path, rank)) std::printf("resumed at step %lld\n", (long long)step);
//   for (int64_t epoch = loader.state().epoch; epoch < epochs; ++epoch) {
//     loader.start_epoch(epoch);  // after a load: the saved epoch goes on where it stopped
//     while (std::optional<Example> batch = loader.next()) {
//       // ... the step:
//       ++step;
//       if (step % save_every == 0) ckpt.save(path, rank);  // on every rank
//     }
//   }
// (tests/train/checkpoint_usage_test.cpp compiles and runs this example.)
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

#include <wick/data/data_loader.h>
#include <wick/nn/module.h>
#include <wick/optim/grad_scaler.h>
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
  // A loader's position and seed (DataLoader::state_dict), per rank: each rank reads its
  // own shard. Loading puts the loader at the saved position: its next start_epoch of the
  // saved epoch (or next()) continues with the batch after the last one handed out.
  Checkpoint& add(const std::string& name, DataLoader& loader);
  // The loss scale and growth tracker (GradScaler::state_dict), shared: every rank's scaler
  // follows the same all-reduced gradients.
  Checkpoint& add(const std::string& name, GradScaler& scaler);
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
