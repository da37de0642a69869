#pragma once
// Sharded checkpoints of sharded data parallelism (DataParallelOptions::state_dict_type =
// StateDictType::Sharded, PyTorch FSDP's SHARDED_STATE_DICT), and their conversion to the
// whole state (FULL_STATE_DICT).
//
// On disk, for LoopOptions::checkpoint_path `path` after G epochs on N ranks:
//   path.g<G>.rank<r>   rank r's slices of the optimizer state: "unit<j>.<buffer>", each the
//                       unit's padded size / N elements (slice r), and the step counts; with
//                       ShardStrategy::Full also its slice of each wrapped unit's parameters,
//                       "unit<j>.values" (FSDP's SHARDED_STATE_DICT of the model: no rank
//                       writes a wrapped parameter whole); metadata format
//                       "wick-sharded-checkpoint", rank, world, generation, "parameters" (a
//                       line per parameter: unit, offset, the optimizer's name, dims, sizes)
//                       and "values" (the same for the wrapped parameters, by the model's
//                       state-dict names; empty without Full).
//   path                the driver's checkpoint (the loop's format: the model but the
//                       wrapped parameters, so the root's, embeddings and final norm, whole;
//                       the loop state, the scheduler, the scaler, the generators), written
//                       last, once every rank confirmed its file; its "sync." entries are the
//                       layout: "sharded.generation" (G), "sharded.world" (N),
//                       "sharded.values" (Full: how many units' parameters are in the rank
//                       files, which StepPolicy::checkpointed_parameters names to the loop),
//                       "unit<j>.numel".
// A checkpoint is complete when `path` names generation G: until then `path` names the
// previous generation, whose files stay until the new `path` is in place. Every rank must
// read every file (a shared file system), since a resumed job of M ranks reads rank r's
// ranges (optimizer state and parameters) from whichever of the N files hold them, and then
// gathers the wrapped units, so the model is whole for validation as after an epoch.
#include <cstdint>
#include <string>

namespace wick::distributed {

// The file rank `rank` writes for generation `generation` of the checkpoint at `path`.
std::string shard_checkpoint_file(const std::string& path, int64_t generation, int64_t rank);

// Reads the sharded checkpoint at `path` and writes its whole state as one consolidated
// checkpoint (StateDictType::Full's format: "sync.unit<j>.<buffer>" without padding, the
// wrapped parameters as "model.<name>" beside the root's) to `out_path`, which jobs of any
// world size and either state_dict_type resume from. A consolidated checkpoint is copied as
// it is.
void consolidate_sharded_checkpoint(const std::string& path, const std::string& out_path);

// The optimizer state of a sharded checkpoint by parameter, as the user's optimizer of an
// unsharded job holds it (FSDP's full optimizer state dict, keyed by names): each unit's
// buffers cut at its parameters ("state.<parameter name>.<buffer>" in the parameter's shape,
// the step counts) and the hyper-parameters ("group.<g>.<name>"), as one safetensors file
// that Optimizer::load_state_dict takes.
void export_optimizer_state_dict(const std::string& path, const std::string& out_path);

// The model's state dict of a checkpoint (sharded or not; the wrapped parameters put
// together from the rank files' slices) by the module's names, written as one safetensors
// file (for the GPT example, the names of the same model in PyTorch);
// a job of any world size, sharded or not, starts from it with
// model->load_state_dict(StateDict(load_safetensors(out_path))).
void export_model_state_dict(const std::string& path, const std::string& out_path);

}  // namespace wick::distributed
