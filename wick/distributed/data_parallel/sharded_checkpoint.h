#pragma once
// Sharded checkpoints of sharded data parallelism (DataParallelOptions::state_dict_type =
// StateDictType::Sharded, PyTorch FSDP's SHARDED_STATE_DICT), and their conversion to the
// whole state (FULL_STATE_DICT).
//
// On disk, for LoopOptions::checkpoint_path `path` after G epochs on N ranks:
//   path.g<G>.rank<r>   rank r's slices of the optimizer state: "unit<j>.<buffer>", each the
//                       unit's padded size / N elements (slice r), and the step counts;
//                       metadata format "wick-sharded-checkpoint", rank, world, generation
//                       and "parameters" (a line per parameter: unit, offset, name, dims,
//                       sizes).
//   path                the driver's checkpoint (the loop's format: the model, the loop state,
//                       the scheduler, the scaler, the generators), written last, once every
//                       rank confirmed its file; its "sync." entries are the layout:
//                       "sharded.generation" (G), "sharded.world" (N), "unit<j>.numel".
// A checkpoint is complete when `path` names generation G: until then `path` names the
// previous generation, whose files stay until the new `path` is in place. Every rank must
// read every file (a shared file system), since a resumed job of M ranks reads rank r's
// ranges from whichever of the N files hold them.
#include <cstdint>
#include <string>

namespace wick::distributed {

// The file rank `rank` writes for generation `generation` of the checkpoint at `path`.
std::string shard_checkpoint_file(const std::string& path, int64_t generation, int64_t rank);

// Reads the sharded checkpoint at `path` and writes its whole state as one consolidated
// checkpoint (StateDictType::Full's format: "sync.unit<j>.<buffer>" without padding) to
// `out_path`, which jobs of any world size and either state_dict_type resume from. A
// consolidated checkpoint is copied as it is.
void consolidate_sharded_checkpoint(const std::string& path, const std::string& out_path);

// The optimizer state of a sharded checkpoint by parameter, as the user's optimizer of an
// unsharded job holds it (FSDP's full optimizer state dict, keyed by names): each unit's
// buffers cut at its parameters ("state.<parameter name>.<buffer>" in the parameter's shape,
// the step counts) and the hyper-parameters ("group.<g>.<name>"), as one safetensors file
// that Optimizer::load_state_dict takes.
void export_optimizer_state_dict(const std::string& path, const std::string& out_path);

// The model's state dict of a checkpoint (sharded or not) by the module's names, written as
// one safetensors file (for the GPT example, the names of the same model in PyTorch);
// a job of any world size, sharded or not, starts from it with
// model->load_state_dict(StateDict(load_safetensors(out_path))).
void export_model_state_dict(const std::string& path, const std::string& out_path);

}  // namespace wick::distributed
