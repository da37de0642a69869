// ShardedSync's checkpoints: the optimizer state's slices gathered on rank 0 at the end of
// each epoch, and a checkpoint's state handed out again as slices.
#include <wick/distributed/data_parallel/sharded_sync.h>

#include <set>
#include <sstream>
#include <string>

#include <wick/autograd/grad_mode.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

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

// rank 0's decision, on every rank.
bool agreed(Communicator& comm, bool mine, int root) {
  Tensor flag = full({1}, mine ? 1.0 : 0.0, Options(DType::Float64, comm.device()));
  comm.broadcast({flag}, root)->wait();
  return flag.cpu().item<double>() != 0;
}

}  // namespace

void ShardedSync::start_epoch(int64_t /*steps*/) { consolidated_.clear(); }

void ShardedSync::end_epoch(double /*mean_loss*/) {
  // Full: the model whole until the next training forward, for validation, checkpoints
  // and whoever reads the parameters after training.
  gather_everything();
  if (!agreed(comm_, consolidate_, 0)) return;
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

TensorMap ShardedSync::state_dict() const { return consolidate_ ? consolidated_ : TensorMap{}; }

void ShardedSync::load_state_dict(const TensorMap& state) {
  if (state.empty()) {
    // A checkpoint of unsharded training: its optimizer state went into the user's
    // optimizer, which sharding never steps.
    for (const auto& [key, t] : user_optimizer_.state_dict())
      WICK_CHECK(key.rfind("state.", 0) != 0, "ShardedSync.load_state_dict: the checkpoint is of unsharded training ",
                 "(its optimizer state is whole, '", key, "'); resume it without sharding");
    return;
  }
  std::set<size_t> described;
  for (const auto& [key, t] : state) {
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
  pending_ = state;
}

void ShardedSync::hand_out_state(int root) {
  if (!agreed(comm_, comm_.rank() == root && !pending_.empty(), root)) return;
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
  Tensor length = full({1}, static_cast<double>(text.size()), Options(DType::Int64, comm_.device()));
  comm_.broadcast({length}, root)->wait();
  const int64_t n = length.cpu().item<int64_t>();
  WICK_CHECK(n >= 0 && n <= (int64_t{1} << 24), "ShardedSync: the optimizer state's description is ", n, " bytes");
  Tensor bytes = empty({n}, Options(DType::UInt8, Device::cpu()));
  if (comm_.rank() == root) std::copy(text.begin(), text.end(), bytes.data<uint8_t>());
  bytes = bytes.to(comm_.device());
  comm_.broadcast({bytes}, root)->wait();
  bytes = bytes.cpu();
  text.assign(reinterpret_cast<const char*>(bytes.data<uint8_t>()), static_cast<size_t>(n));

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

}  // namespace wick::distributed
