// ShardedSync's checkpoints: the optimizer state's slices gathered on rank 0 at the end of
// each epoch, or written by every rank to a file of its own (sharded checkpoints, with full
// sharding's wrapped parameters too), and a checkpoint's state handed out again as slices,
// whatever world size wrote it.
#include <wick/distributed/data_parallel/sharded_sync.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>

#include <wick/autograd/grad_mode.h>
#include <wick/distributed/data_parallel/sharded_checkpoint.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/safetensors.h>

namespace wick::distributed {

namespace {

// "state.unit3.exp_avg" -> (3, "exp_avg"); false for any other key.
bool parse_unit_key(const std::string& key, const std::string& prefix, size_t& unit, std::string& buffer) {
  if (key.rfind(prefix + "unit", 0) != 0) return false;
  const size_t begin = prefix.size() + 4, dot = key.find('.', begin);
  if (dot == std::string::npos || dot == begin) return false;
  for (size_t i = begin; i < dot; ++i)
    if (key[i] < '0' || key[i] > '9') return false;
  unit = std::stoul(key.substr(begin, dot - begin));
  buffer = key.substr(dot + 1);
  return !buffer.empty();
}

// root's value, on every rank.
int64_t decided(Communicator& comm, int64_t mine, int root) {
  Tensor flag = full({1}, static_cast<double>(mine), Options(DType::Float64, comm.device()));
  comm.broadcast({flag}, root)->wait();
  return static_cast<int64_t>(flag.cpu().item<double>());
}

// root's text, on every rank (as its length, then its bytes).
std::string broadcast_text(Communicator& comm, std::string text, int root) {
  Tensor length = full({1}, static_cast<double>(text.size()), Options(DType::Int64, comm.device()));
  comm.broadcast({length}, root)->wait();
  const int64_t n = length.cpu().item<int64_t>();
  WICK_CHECK(n >= 0 && n <= (int64_t{1} << 24), "ShardedSync: a broadcast description is ", n, " bytes");
  Tensor bytes = empty({n}, Options(DType::UInt8, Device::cpu()));
  if (comm.rank() == root) std::copy(text.begin(), text.end(), bytes.data<uint8_t>());
  bytes = bytes.to(comm.device());
  comm.broadcast({bytes}, root)->wait();
  bytes = bytes.cpu();
  return std::string(reinterpret_cast<const char*>(bytes.data<uint8_t>()), static_cast<size_t>(n));
}

// What rank 0 asks of the end of an epoch, and of a broadcast of the parameters.
enum Checkpointing : int64_t { kNothing = 0, kConsolidated = 1, kSharded = 2 };

// Every rank's outcome, on every rank: an all-gather, so that a rank that failed is named by
// all of them, and no rank goes on as if the checkpoint were whole. Throws on every rank
// when one failed; a failed rank's message adds its own reason.
void confirm(Communicator& comm, const std::string& failure, const std::string& what) {
  Tensor mine = full({1}, failure.empty() ? 1.0 : 0.0, Options(DType::Float64, comm.device()));
  Tensor all = empty({comm.size()}, mine.options());
  comm.all_gather(mine, all)->wait();
  const std::vector<double> ok = all.cpu().to_vector<double>();
  std::string failed;
  for (size_t r = 0; r < ok.size(); ++r)
    if (ok[r] == 0) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  if (failed.empty()) return;
  throw Error(what + ": rank " + failed + " failed" + (failure.empty() ? "" : " (this rank: " + failure + ")"));
}

constexpr const char* kShardFormat = "wick-sharded-checkpoint";
constexpr const char* kShardVersion = "1";
// The driver's file (wick/train/loop.cpp's format).
constexpr const char* kLoopFormat = "wick-checkpoint";
constexpr const char* kLoopVersion = "1";

// A shard file's entry "unit<j>.values": rank r's slice of full sharding's unit j's
// parameters, beside its optimizer buffers (whose names, "exp_avg", "momentum_buffer",
// ..., are never this one).
constexpr const char* kValues = "values";

int64_t padded_slice(int64_t numel, int64_t world) { return (numel + world - 1) / world; }

// A line of a shard file's metadata "parameters" or "values": where a parameter lies in its
// unit, and its name and shape.
struct PlacedParameter {
  size_t unit = 0;
  int64_t offset = 0;
  std::string name;
  Shape shape;
};

// The lines of `file`'s metadata `field`, each checked to lie inside its unit.
std::vector<PlacedParameter> placed_parameters(const std::string& text, const std::string& file,
                                               const std::string& field, const std::vector<int64_t>& numels,
                                               const std::string& who) {
  std::vector<PlacedParameter> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    PlacedParameter p;
    int64_t dims = 0;
    fields >> p.unit >> p.offset >> p.name >> dims;
    p.shape.resize(static_cast<size_t>(std::clamp<int64_t>(dims, 0, 16)));
    bool sizes = true;
    for (int64_t& d : p.shape) {
      fields >> d;
      sizes = sizes && d >= 0 && d <= (int64_t{1} << 40);
    }
    const int64_t numel = sizes ? numel_of(p.shape) : -1;
    WICK_CHECK(fields && !p.name.empty() && p.unit < numels.size() && dims >= 0 && dims <= 16 && p.offset >= 0 &&
                   numel >= 0 && p.offset + numel <= numels[p.unit],
               who, ": ", file, "'s field '", field, "' has a malformed line '", line, "'");
    out.push_back(std::move(p));
  }
  return out;
}

// The header of rank `rank`'s file, checked against the layout before any tensor is read:
// its metadata, and each entry a unit's buffer ("unit<j>.<buffer>") that is a step count
// (0-d) or the slice of unit j at that world size; `numels` are the units' sizes. With
// `value_units` > 0 (full sharding), the field "values" places parameters in that many
// units, and the file holds the slice of each of those units' values, of no other.
SafetensorsIndex checked_shard_index(const std::string& file, int64_t generation, int64_t rank, int64_t world,
                                     const std::vector<int64_t>& numels, int64_t value_units) {
  WICK_CHECK(std::filesystem::exists(file), "sharded checkpoint: rank ", rank, "'s file ", file, " of generation ",
             generation, " is missing");
  SafetensorsIndex index = read_safetensors_index(file);
  StringMap& meta = index.metadata;
  WICK_CHECK(meta["format"] == kShardFormat, "sharded checkpoint: ", file, " is not a shard file (format '",
             meta["format"], "')");
  WICK_CHECK(meta["version"] == kShardVersion, "sharded checkpoint: ", file, " has version '", meta["version"],
             "', expected ", kShardVersion);
  const std::string expected[3][2] = {
      {"rank", std::to_string(rank)}, {"world", std::to_string(world)}, {"generation", std::to_string(generation)}};
  for (const auto& [field, value] : expected)
    WICK_CHECK(meta[field] == value, "sharded checkpoint: ", file, " has ", field, " '", meta[field], "', expected ",
               value);
  for (const SafetensorsEntry& e : index.tensors) {
    size_t j = 0;
    std::string buffer;
    WICK_CHECK(parse_unit_key(e.name, "", j, buffer), "sharded checkpoint: ", file, " has an unexpected entry '",
               e.name, "'");
    WICK_CHECK(j < numels.size(), "sharded checkpoint: ", file, "'s entry '", e.name, "' names unit ", j,
               " but the layout has ", numels.size(), " units");
    WICK_CHECK(is_floating(e.dtype) || e.shape.empty(), "sharded checkpoint: ", file, "'s entry '", e.name,
               "' has dtype ", dtype_name(e.dtype));
    const int64_t slice = padded_slice(numels[j], world);
    WICK_CHECK((e.shape.empty() && buffer != kValues) || (e.shape.size() == 1 && e.shape[0] == slice),
               "sharded checkpoint: ", file, "'s entry '", e.name, "' has shape ", shape_str(e.shape),
               ", the slice of unit ", j, " (", numels[j], " elements over ", world, " ranks) is [", slice, "]");
  }
  std::set<size_t> with_values;
  for (const PlacedParameter& p : placed_parameters(meta["values"], file, kValues, numels, "sharded checkpoint"))
    with_values.insert(p.unit);
  WICK_CHECK(static_cast<int64_t>(with_values.size()) == value_units, "sharded checkpoint: ", file,
             "'s field 'values' places parameters in ", with_values.size(), " units, the driver's file says ",
             value_units, " units' parameters are in the rank files");
  std::set<std::string> names;
  for (const SafetensorsEntry& e : index.tensors) names.insert(e.name);
  for (size_t j : with_values)
    WICK_CHECK(names.count("unit" + std::to_string(j) + "." + kValues), "sharded checkpoint: ", file, " has no 'unit",
               j, ".", kValues, "' (its slice of unit ", j, "'s parameters, which its field 'values' places there)");
  for (const SafetensorsEntry& e : index.tensors) {
    size_t j = 0;
    std::string buffer;
    parse_unit_key(e.name, "", j, buffer);
    WICK_CHECK(buffer != kValues || with_values.count(j), "sharded checkpoint: ", file, "'s entry '", e.name,
               "' holds parameters of unit ", j, " that its field 'values' does not place");
  }
  return index;
}

// The entries' names of a shard file, which every rank's must share.
std::set<std::string> entry_names(const SafetensorsIndex& index) {
  std::set<std::string> out;
  for (const SafetensorsEntry& e : index.tensors) out.insert(e.name);
  return out;
}

// A sharded checkpoint's layout, from the driver's file's "sync." entries.
struct ShardLayout {
  int64_t generation = -1, world = 0;
  std::vector<int64_t> numels;  // by unit
  int64_t value_units = 0;      // full sharding: the units whose parameters are in the rank files
};

// False for a consolidated checkpoint's entries (no "sharded.generation").
bool read_layout(const TensorMap& sync, const std::string& path, ShardLayout& out) {
  auto g = sync.find("sharded.generation"), w = sync.find("sharded.world");
  if (g == sync.end()) return false;
  WICK_CHECK(w != sync.end() && g->second.numel() == 1 && w->second.numel() == 1, "sharded checkpoint: ", path,
             " has 'sync.sharded.generation' but no single 'sync.sharded.world'");
  out.generation = g->second.cpu().to(DType::Int64).item<int64_t>();
  out.world = w->second.cpu().to(DType::Int64).item<int64_t>();
  WICK_CHECK(out.generation >= 0 && out.world >= 1 && out.world <= (1 << 20), "sharded checkpoint: ", path,
             " has generation ", out.generation, " and world ", out.world);
  for (const auto& [key, t] : sync) {
    size_t j = 0;
    std::string buffer;
    if (!parse_unit_key(key, "", j, buffer) || buffer != "numel") continue;
    WICK_CHECK(j < (1u << 24) && t.numel() == 1, "sharded checkpoint: ", path, "'s 'sync.", key, "' is malformed");
    if (out.numels.size() <= j) out.numels.resize(j + 1, -1);
    out.numels[j] = t.cpu().to(DType::Int64).item<int64_t>();
  }
  for (size_t j = 0; j < out.numels.size(); ++j)
    WICK_CHECK(out.numels[j] >= 0, "sharded checkpoint: ", path, " has no 'sync.unit", j, ".numel'");
  if (auto v = sync.find("sharded.values"); v != sync.end()) {
    WICK_CHECK(v->second.numel() == 1, "sharded checkpoint: ", path, "'s 'sync.sharded.values' has shape ",
               shape_str(v->second.shape()));
    out.value_units = v->second.cpu().to(DType::Int64).item<int64_t>();
    WICK_CHECK(out.value_units >= 0 && out.value_units <= static_cast<int64_t>(out.numels.size()),
               "sharded checkpoint: ", path, "'s 'sync.sharded.values' is ", out.value_units, " units of ",
               out.numels.size());
  }
  return true;
}

// The elements [begin, end) of a unit's whole buffer that rank `rank` of `world` holds.
std::pair<int64_t, int64_t> owned(int64_t numel, int64_t world, int64_t rank) {
  const int64_t slice = padded_slice(numel, world);
  return {std::min(numel, rank * slice), std::min(numel, (rank + 1) * slice)};
}

}  // namespace

void ShardedSync::start_epoch(int64_t /*steps*/) { consolidated_.clear(); }

void ShardedSync::end_epoch(double /*mean_loss*/) {
  // Full: the model whole until the next training forward, for validation, checkpoints
  // and whoever reads the parameters after training.
  gather_everything();
  const bool writes = comm_.rank() == 0 && !checkpoint_path_.empty();
  const int64_t asked = decided(comm_,
                                writes && sharded_checkpoints_ ? kSharded
                                : consolidate_                 ? kConsolidated
                                                               : kNothing,
                                0);
  if (asked == kSharded) {
    std::istringstream text(broadcast_text(comm_, std::to_string(generation_) + ' ' + checkpoint_path_, 0));
    int64_t generation = 0;
    std::string path;
    text >> generation;
    std::getline(text >> std::ws, path);
    write_shard(path, generation);
    written_generation_ = generation;
    return;
  }
  if (asked != kConsolidated) return;
  NoGradGuard no_grad;
  TensorMap gathered;
  // The same keys on every rank (the same optimizer over the same units, stepped as often),
  // in the map's order; one buffer of one unit in flight at a time.
  for (const auto& [key, t] : shard_optimizer_->state_dict()) {
    size_t j = 0;
    std::string buffer;
    if (!parse_unit_key(key, "state.", j, buffer)) continue;
    WICK_CHECK(j < units_.size(), "ShardedSync: the shard optimizer has state for unit ", j, " of ", units_.size());
    const Unit& u = units_[j];
    const std::string name = "unit" + std::to_string(j) + "." + buffer;
    if (t.dim() == 0) {  // a step count: the same everywhere
      if (comm_.rank() == 0) gathered[name] = t.clone();
      continue;
    }
    WICK_CHECK(t.numel() == u.shard, "ShardedSync: state '", key, "' has ", t.numel(), " elements, the slice ",
               u.shard);
    Tensor whole = empty({u.shard * comm_.size()}, t.options());
    comm_.all_gather(t.contiguous(), whole)->wait();
    if (comm_.rank() == 0) gathered[name] = whole.narrow(0, 0, numel_of(u)).clone();  // without the padding
  }
  if (comm_.rank() != 0) return;
  for (size_t j = 0; j < units_.size(); ++j)
    gathered["unit" + std::to_string(j) + ".numel"] =
        scalar_tensor(static_cast<double>(numel_of(units_[j])), DType::Int64);
  consolidated_ = std::move(gathered);
}

TensorMap ShardedSync::state_dict() const {
  if (!sharded_checkpoints_ || written_generation_ < 0) return consolidate_ ? consolidated_ : TensorMap{};
  TensorMap layout;
  layout["sharded.generation"] = scalar_tensor(static_cast<double>(written_generation_), DType::Int64);
  layout["sharded.world"] = scalar_tensor(static_cast<double>(comm_.size()), DType::Int64);
  if (fully_sharded()) layout["sharded.values"] = scalar_tensor(static_cast<double>(wrapped_units()), DType::Int64);
  for (size_t j = 0; j < units_.size(); ++j)
    layout["unit" + std::to_string(j) + ".numel"] =
        scalar_tensor(static_cast<double>(numel_of(units_[j])), DType::Int64);
  return layout;
}

void ShardedSync::write_shard(const std::string& path, int64_t generation) {
  const std::string file = shard_checkpoint_file(path, generation, comm_.rank());
  std::string failure;
  try {
    TensorMap mine;
    for (const auto& [key, t] : shard_optimizer_->state_dict()) {
      size_t j = 0;
      std::string buffer;
      if (parse_unit_key(key, "state.", j, buffer)) mine["unit" + std::to_string(j) + "." + buffer] = t;
    }
    // Full: the wrapped units' slices, the values the shard optimizer steps (whole on every
    // rank now, but no rank writes more than its share).
    for (size_t j = 0; j < units_.size(); ++j)
      if (sharded_between_uses(units_[j]))
        mine["unit" + std::to_string(j) + "." + kValues] = units_[j].shard_param.data();
    save_safetensors(file, mine,
                     {{"format", kShardFormat},
                      {"version", kShardVersion},
                      {"rank", std::to_string(comm_.rank())},
                      {"world", std::to_string(comm_.size())},
                      {"generation", std::to_string(generation)},
                      {"parameters", parameter_layout()},
                      {kValues, values_layout()}});
  } catch (const std::exception& e) {
    failure = e.what();
  }
  confirm(comm_, failure,
          "ShardedSync: sharded checkpoint " + path + " of generation " + std::to_string(generation) +
              " is incomplete, the previous one stays the one to resume from: writing its file");
}

std::string ShardedSync::parameter_layout() const {
  // The optimizer's names: its state is keyed by them, and they are the module's.
  std::unordered_map<const Variable::Impl*, std::string> name_of;
  for (size_t g = 0; g < user_optimizer_.num_groups(); ++g)
    for (const auto& [name, p] : user_optimizer_.params(g)) name_of.emplace(p.impl().get(), name);
  std::ostringstream s;
  for (size_t j = 0; j < units_.size(); ++j)
    for (size_t i = 0; i < units_[j].params.size(); ++i) {
      const Variable& p = params_[units_[j].params[i]];
      s << j << ' ' << units_[j].offsets[i] << ' ' << name_of.at(p.impl().get()) << ' ' << p.dim();
      for (int64_t d : p.shape()) s << ' ' << d;
      s << '\n';
    }
  return s.str();
}

std::vector<std::pair<std::string, size_t>> ShardedSync::wrapped_parameter_names() const {
  // By the tensors: state_dict() names each parameter's data (a tied one under each name),
  // which is a view of its unit's buffer.
  std::vector<std::pair<std::string, size_t>> out;
  for (const auto& [name, t] : module_.state_dict())
    for (size_t k = 0; k < params_.size(); ++k) {
      const Tensor& p = params_[k].data();
      // Full's: ZeRO-1/2's shard_units keep their parameters whole, in no rank file.
      if (sharded_between_uses(units_[unit_of_[k]]) && t.shares_storage(p) && t.offset() == p.offset() &&
          t.shape() == p.shape()) {
        out.emplace_back(name, k);
        break;
      }
    }
  return out;
}

std::string ShardedSync::values_layout() const {
  std::ostringstream s;
  for (const auto& [name, k] : wrapped_parameter_names()) {
    const Variable& p = params_[k];
    s << unit_of_[k] << ' ' << units_[unit_of_[k]].offsets[index_in_unit_[k]] << ' ' << name << ' ' << p.dim();
    for (int64_t d : p.shape()) s << ' ' << d;
    s << '\n';
  }
  return s.str();
}

int64_t ShardedSync::wrapped_units() const {
  return std::count_if(units_.begin(), units_.end(), [this](const Unit& u) { return sharded_between_uses(u); });
}

std::vector<std::string> ShardedSync::checkpointed_parameters(const TensorMap& state) const {
  auto it = state.find("sharded.values");
  if (it == state.end() || it->second.numel() != 1 || it->second.cpu().to(DType::Int64).item<int64_t>() == 0) return {};
  WICK_CHECK(fully_sharded(), "ShardedSync: the checkpoint's rank files hold the parameters of shard=full's units; ",
             "this job (shard=", shard_strategy_name(strategy_),
             ") has none: resume it with shard=full and the same shard_units, or from "
             "consolidate_sharded_checkpoint's file");
  std::vector<std::string> out;
  for (const auto& [name, k] : wrapped_parameter_names()) out.push_back(name);
  return out;
}

void ShardedSync::checkpoint_complete() {
  if (comm_.rank() != 0 || written_generation_ < 0) return;
  namespace fs = std::filesystem;
  const fs::path manifest(checkpoint_path_);
  const fs::path folder = manifest.has_parent_path() ? manifest.parent_path() : fs::path(".");
  const std::string prefix = manifest.filename().string() + ".g";
  const std::string keep = prefix + std::to_string(written_generation_) + ".rank";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    // Older generations, and ranks beyond this job's of its own generation (a job of more
    // ranks wrote them before), are no checkpoint's any more.
    if (name.rfind(prefix, 0) != 0 || name.find(".rank") == std::string::npos) continue;
    if (name.rfind(keep, 0) == 0) {
      const std::string rank = name.substr(keep.size());
      if (rank.find_first_not_of("0123456789") == std::string::npos && !rank.empty() && std::stoll(rank) < comm_.size())
        continue;
    }
    fs::remove(entry.path(), ec);
  }
}

void ShardedSync::load_state_dict(const TensorMap& state) {
  if (state.empty()) {
    // A checkpoint of unsharded training: its optimizer state went into the user's
    // optimizer, which sharding never steps.
    for (const auto& [key, t] : user_optimizer_.state_dict())
      WICK_CHECK(key.rfind("state.", 0) != 0, "ShardedSync.load_state_dict: the checkpoint is of unsharded training ",
                 "(its optimizer state is whole, '", key, "'); resume it without sharding");
    return;
  }
  ShardLayout layout;
  const bool sharded = read_layout(state, checkpoint_path_, layout);
  std::set<size_t> described;
  for (const auto& [key, t] : state) {
    if (key.rfind("sharded.", 0) == 0) continue;
    size_t j = 0;
    std::string buffer;
    WICK_CHECK(parse_unit_key(key, "", j, buffer), "ShardedSync.load_state_dict: unexpected key 'sync.", key, "'");
    WICK_CHECK(j < units_.size(), "ShardedSync.load_state_dict: 'sync.", key, "' names unit ", j,
               " but this model has ", units_.size(), " units (another model, optimizer groups or bucket_bytes)");
    const int64_t numel = numel_of(units_[j]);
    if (buffer == "numel") {
      WICK_CHECK(t.numel() == 1 && t.cpu().to(DType::Int64).item<int64_t>() == numel,
                 "ShardedSync.load_state_dict: unit ", j, " held ",
                 t.numel() == 1 ? std::to_string(t.cpu().to(DType::Int64).item<int64_t>()) : shape_str(t.shape()),
                 " elements when saved, this model's ", numel, " (another model, optimizer groups or bucket_bytes)");
      described.insert(j);
    } else {
      WICK_CHECK(t.dim() == 0 || (t.dim() == 1 && t.numel() == numel), "ShardedSync.load_state_dict: 'sync.", key,
                 "' has shape ", shape_str(t.shape()), " but unit ", j, " holds ", numel, " elements");
    }
  }
  WICK_CHECK(described.size() == units_.size(), "ShardedSync.load_state_dict: the checkpoint describes ",
             described.size(), " units, this model has ", units_.size());
  if (!sharded) {
    pending_ = state;
    return;
  }
  // The wrapped units' parameters are in the rank files only when this job wraps the same
  // (checkpointed_parameters told the loop to load its file without them).
  WICK_CHECK(layout.value_units == 0 || layout.value_units == wrapped_units(),
             "ShardedSync.load_state_dict: ", checkpoint_path_, "'s rank files hold the parameters of ",
             layout.value_units, " units of shard=full, this job wraps ", wrapped_units(), " (another shard_units)");
  // Every rank's file there and fitting the layout now, while the loop can still refuse the
  // checkpoint as a whole; each rank reads its ranges in broadcast_parameters.
  const std::string placed = layout.value_units > 0 ? values_layout() : "";
  std::set<std::string> names;
  for (int64_t q = 0; q < layout.world; ++q) {
    const std::string file = shard_checkpoint_file(checkpoint_path_, layout.generation, q);
    SafetensorsIndex index =
        checked_shard_index(file, layout.generation, q, layout.world, layout.numels, layout.value_units);
    WICK_CHECK(layout.value_units == 0 || index.metadata[kValues] == placed, "ShardedSync.load_state_dict: ", file,
               "'s field 'values' does not place the parameters of this model's shard_units as this job does ",
               "(another model or shard_units)");
    std::set<std::string> these = entry_names(index);
    WICK_CHECK(q == 0 || these == names, "ShardedSync.load_state_dict: ", file, " holds ", these.size(),
               " entries, rank 0's file ", names.size(), " (other buffers)");
    names = std::move(these);
  }
  pending_generation_ = layout.generation;
  pending_world_ = layout.world;
  pending_values_ = layout.value_units > 0;
}

void ShardedSync::read_shards(const std::string& path, int64_t generation, int64_t world, bool values) {
  NoGradGuard no_grad;
  std::string failure;
  try {
    std::vector<int64_t> numels;
    for (const Unit& u : units_) numels.push_back(numel_of(u));
    // The optimizer state's slices by the shard optimizer's keys, and with `values` the
    // wrapped units' parameters ("unit<j>.values"), each this rank's slice.
    TensorMap mine, parameters;
    for (int64_t q = 0; q < world; ++q) {
      const std::string file = shard_checkpoint_file(path, generation, q);
      const SafetensorsIndex index =
          checked_shard_index(file, generation, q, world, numels, values ? wrapped_units() : 0);
      // Only the files that hold some of this rank's ranges are read.
      bool needed = q == 0;  // the step counts
      for (size_t j = 0; j < units_.size() && !needed; ++j) {
        const auto [begin, end] = owned(numels[j], world, q);
        const auto [my_begin, my_end] = owned(numels[j], comm_.size(), comm_.rank());
        needed = std::max(begin, my_begin) < std::min(end, my_end);
      }
      if (!needed) continue;
      for (const auto& [key, t] : load_safetensors(file)) {
        size_t j = 0;
        std::string buffer;
        parse_unit_key(key, "", j, buffer);  // checked by the index
        const Unit& u = units_[j];
        const std::string name = buffer == kValues ? key : "state.unit" + std::to_string(j) + "." + buffer;
        if (t.dim() == 0) {
          if (q == 0) mine[name] = t;  // a step count stays a host scalar
          continue;
        }
        TensorMap& into = buffer == kValues ? parameters : mine;
        auto it = into.find(name);
        if (it == into.end()) it = into.emplace(name, zeros({u.shard}, Options(t.dtype(), u.values.device()))).first;
        const auto [begin, end] = owned(numels[j], world, q);
        const int64_t my_begin = comm_.rank() * u.shard;
        const int64_t from = std::max(begin, my_begin), to = std::min(end, my_begin + u.shard);
        if (from < to) it->second.narrow(0, from - my_begin, to - from).copy_(t.narrow(0, from - begin, to - from));
      }
    }
    shard_optimizer_->load_state_dict(mine);
    for (const auto& [key, slice] : parameters) {
      size_t j = 0;
      std::string buffer;
      parse_unit_key(key, "", j, buffer);
      units_[j].shard_param.data().copy_(slice);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  confirm(comm_, failure,
          "ShardedSync: reading sharded checkpoint " + path + " of generation " + std::to_string(generation));
  if (!values) return;
  // The model whole again from the slices just read, as at the end of an epoch: the
  // validation and the caller read it, the next training forward shards it again.
  std::vector<std::shared_ptr<Work>> works;
  for (Unit& u : units_)
    if (sharded_between_uses(u)) works.push_back(comm_.all_gather(u.shard_param.data(), u.values));
  wait_all(works);
}

void ShardedSync::hand_out_state(int root) {
  const bool mine_to_give = comm_.rank() == root;
  const int64_t asked = decided(comm_,
                                mine_to_give && pending_generation_ >= 0 ? kSharded
                                : mine_to_give && !pending_.empty()      ? kConsolidated
                                                                         : kNothing,
                                root);
  if (asked == kSharded) {
    // Every rank reads its own ranges from the files: nothing of the state travels.
    std::istringstream where(broadcast_text(comm_,
                                            std::to_string(pending_generation_) + ' ' + std::to_string(pending_world_) +
                                                ' ' + std::to_string(pending_values_) + ' ' + checkpoint_path_,
                                            root));
    int64_t generation = 0, world = 0;
    bool values = false;
    std::string path;
    where >> generation >> world >> values;
    std::getline(where >> std::ws, path);
    pending_generation_ = -1;
    read_shards(path, generation, world, values);
    return;
  }
  if (asked != kConsolidated) return;
  NoGradGuard no_grad;
  // The names, dtypes and sizes first (as text in a byte tensor), then each tensor.
  std::string text;
  if (comm_.rank() == root) {
    std::ostringstream s;
    for (const auto& [key, t] : pending_)
      if (key.find(".numel") == std::string::npos)
        s << key << ' ' << static_cast<int>(t.dtype()) << ' ' << t.dim() << '\n';
    text = s.str();
  }
  text = broadcast_text(comm_, text, root);

  TensorMap mine;
  std::istringstream lines(text);
  std::string key;
  int dtype = 0, dims = 0;
  while (lines >> key >> dtype >> dims) {
    size_t j = 0;
    std::string buffer;
    WICK_CHECK(parse_unit_key(key, "", j, buffer) && j < units_.size() && (dims == 0 || dims == 1) && dtype >= 0 &&
                   dtype < kNumDTypes && is_floating(static_cast<DType>(dtype)),
               "ShardedSync: malformed optimizer state entry '", key, "' (dtype ", dtype, ", ", dims, " dims)");
    const Unit& u = units_[j];
    const int64_t numel = numel_of(u);
    Tensor t = comm_.rank() == root
                   ? pending_.at(key).to(comm_.device()).contiguous()
                   : zeros(dims == 0 ? Shape{} : Shape{numel}, Options(static_cast<DType>(dtype), comm_.device()));
    Tensor flat = t.reshape({-1});
    comm_.broadcast({flat}, root)->wait();
    const std::string name = "state.unit" + std::to_string(j) + "." + buffer;
    if (dims == 0) {
      mine[name] = t.cpu();  // a step count stays a host scalar
      continue;
    }
    Tensor padded = zeros({u.shard * comm_.size()}, t.options());
    padded.narrow(0, 0, numel).copy_(t);
    mine[name] = padded.narrow(0, comm_.rank() * u.shard, u.shard).clone();
  }
  shard_optimizer_->load_state_dict(mine);
  pending_.clear();
}

std::string shard_checkpoint_file(const std::string& path, int64_t generation, int64_t rank) {
  return path + ".g" + std::to_string(generation) + ".rank" + std::to_string(rank);
}

namespace {

TensorMap read_driver_file(const std::string& path, const char* who) {
  WICK_CHECK(std::filesystem::exists(path), who, ": there is no checkpoint at ", path);
  StringMap meta;
  TensorMap all = load_safetensors(path, &meta);
  WICK_CHECK(meta["format"] == kLoopFormat && meta["version"] == kLoopVersion, who, ": ", path,
             " is not a checkpoint of the training loop (format '", meta["format"], "', version '", meta["version"],
             "')");
  return all;
}

// Each unit's buffers whole ("unit<j>.<buffer>", without the padding, as rank 0 gathers
// them; full sharding's wrapped units' parameters as "unit<j>.values") from every rank's
// file; rank 0's file's metadata in `metadata`.
TensorMap whole_buffers(const std::string& path, const ShardLayout& layout, const char* who, StringMap& metadata) {
  TensorMap out;
  std::set<std::string> names;
  for (int64_t q = 0; q < layout.world; ++q) {
    const std::string file = shard_checkpoint_file(path, layout.generation, q);
    const SafetensorsIndex index =
        checked_shard_index(file, layout.generation, q, layout.world, layout.numels, layout.value_units);
    std::set<std::string> these = entry_names(index);
    WICK_CHECK(q == 0 || these == names, who, ": ", file, " holds ", these.size(), " entries, rank 0's file ",
               names.size(), " (other buffers)");
    names = std::move(these);
    if (q == 0) metadata = index.metadata;
    for (const auto& [key, t] : load_safetensors(file)) {
      size_t j = 0;
      std::string buffer;
      parse_unit_key(key, "", j, buffer);
      if (t.dim() == 0) {
        if (q == 0) out[key] = t;
        continue;
      }
      auto it = out.find(key);
      if (it == out.end()) it = out.emplace(key, zeros({layout.numels[j]}, Options(t.dtype()))).first;
      const auto [begin, end] = owned(layout.numels[j], layout.world, q);
      if (begin < end) it->second.narrow(0, begin, end - begin).copy_(t.narrow(0, 0, end - begin));
    }
  }
  return out;
}

// The wrapped units' parameters by the model's names, in their shapes, cut from the whole
// "unit<j>.values" at the places rank 0's file's field "values" gives.
TensorMap wrapped_parameters(const TensorMap& units, StringMap& metadata, const std::string& path,
                             const ShardLayout& layout, const char* who) {
  TensorMap out;
  const std::string file = shard_checkpoint_file(path, layout.generation, 0);
  for (const PlacedParameter& p : placed_parameters(metadata[kValues], file, kValues, layout.numels, who))
    out[p.name] = units
                      .at("unit" + std::to_string(p.unit) + "." + kValues)  // checked by the index
                      .narrow(0, p.offset, numel_of(p.shape))
                      .reshape(p.shape)
                      .clone();
  return out;
}

ShardLayout checked_layout(const TensorMap& all, const std::string& path, const char* who) {
  TensorMap sync;
  for (const auto& [key, t] : all)
    if (key.rfind("sync.", 0) == 0) sync.emplace(key.substr(5), t);
  ShardLayout layout;
  WICK_CHECK(read_layout(sync, path, layout), who, ": ", path,
             " is not a sharded checkpoint (no 'sync.sharded.generation')");
  return layout;
}

}  // namespace

void consolidate_sharded_checkpoint(const std::string& path, const std::string& out_path) {
  const char* who = "consolidate_sharded_checkpoint";
  TensorMap all = read_driver_file(path, who);
  if (all.count("sync.sharded.generation")) {
    const ShardLayout layout = checked_layout(all, path, who);
    all.erase("sync.sharded.generation");
    all.erase("sync.sharded.world");
    all.erase("sync.sharded.values");
    StringMap metadata;
    const TensorMap units = whole_buffers(path, layout, who, metadata);
    for (const auto& [key, t] : units)
      if (key.substr(key.find('.') + 1) != kValues) all["sync." + key] = t;
    // The model whole, as a consolidated checkpoint's driver file holds it.
    for (auto& [name, t] : wrapped_parameters(units, metadata, path, layout, who)) {
      WICK_CHECK(all.emplace("model." + name, t).second, who, ": ", path, " holds 'model.", name,
                 "' whole although the rank files hold its slices");
    }
  }
  save_safetensors(out_path, all, {{"format", kLoopFormat}, {"version", kLoopVersion}});
}

void export_optimizer_state_dict(const std::string& path, const std::string& out_path) {
  const char* who = "export_optimizer_state_dict";
  const TensorMap all = read_driver_file(path, who);
  const ShardLayout layout = checked_layout(all, path, who);
  StringMap metadata;
  const TensorMap units = whole_buffers(path, layout, who, metadata);
  TensorMap out;
  for (const auto& [key, t] : all)  // the hyper-parameters, as the user's optimizer had them
    if (key.rfind("optimizer.group.", 0) == 0) out.emplace(key.substr(10), t);
  // Each parameter's slice of its unit's buffers (not its values), in its shape, under its name.
  const std::string file = shard_checkpoint_file(path, layout.generation, 0);
  const std::vector<PlacedParameter> placed =
      placed_parameters(metadata["parameters"], file, "parameters", layout.numels, who);
  for (const PlacedParameter& p : placed) {
    const std::string prefix = "unit" + std::to_string(p.unit) + ".";
    for (auto it = units.lower_bound(prefix); it != units.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      const std::string buffer = it->first.substr(prefix.size());
      if (buffer == kValues) continue;
      out["state." + p.name + "." + buffer] =
          it->second.dim() == 0 ? it->second.clone()
                                : it->second.narrow(0, p.offset, numel_of(p.shape)).reshape(p.shape).clone();
    }
  }
  WICK_CHECK(!placed.empty(), who, ": ", file, " has no field 'parameters' (written before it was added?)");
  save_safetensors(out_path, out);
}

void export_model_state_dict(const std::string& path, const std::string& out_path) {
  const char* who = "export_model_state_dict";
  const TensorMap all = read_driver_file(path, who);
  TensorMap model;
  for (const auto& [key, t] : all)
    if (key.rfind("model.", 0) == 0) model.emplace(key.substr(6), t);
  if (all.count("sync.sharded.generation")) {
    const ShardLayout layout = checked_layout(all, path, who);
    if (layout.value_units > 0) {
      StringMap metadata;
      const TensorMap units = whole_buffers(path, layout, who, metadata);
      for (auto& [name, t] : wrapped_parameters(units, metadata, path, layout, who))
        WICK_CHECK(model.emplace(name, t).second, who, ": ", path, " holds 'model.", name,
                   "' whole although the rank files hold its slices");
    }
  }
  WICK_CHECK(!model.empty(), who, ": ", path, " holds no model");
  save_safetensors(out_path, model);
}

}  // namespace wick::distributed
