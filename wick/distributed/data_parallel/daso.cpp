#include <wick/distributed/data_parallel/daso.h>

#include <cmath>
#include <utility>

#include <wick/autograd/grad_mode.h>
#include <wick/tensor/error.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/join.h>
#include <wick/tensor/reduce.h>

namespace wick::distributed {

DasoSync::DasoSync(Communicator& world, Store& store, Module& module, DasoOptions options, NodeTopology topology,
                   Milliseconds timeout, const CommunicatorWrapper& wrap_cross_node)
    : world_(world), schedule_(options, topology.local_size), topology_(topology), module_(module) {
  WICK_CHECK(topology.nodes * topology.local_size == world.size() &&
                 world.rank() == topology.node * topology.local_size + topology.local_rank,
             "DASO: rank ", world.rank(), " of ", world.size(), " does not fit node ", topology.node, " of ",
             topology.nodes, " x ", topology.local_size, " ranks");
  for (const auto& [name, p] : module.named_parameters())
    if (p.requires_grad()) {
      params_.push_back(p);
      names_.push_back(name);
    }
  WICK_CHECK(!params_.empty(), "DASO: the module has no trainable parameters");
  dtype_ = params_[0].dtype();
  for (const Variable& p : params_) {
    WICK_CHECK(p.dtype() == dtype_, "DASO: every trainable parameter must have one dtype; found ",
               dtype_name(dtype_), " and ", dtype_name(p.dtype()));
    numel_ += p.numel();
  }
  // Every rank makes every group in the same order (see new_group).
  const int rank = world.rank(), size = world.size();
  for (int n = 0; n < topology.nodes; ++n) {
    NodeTopology t = topology;
    t.node = n;
    auto group = new_group(store, rank, size, t.node_ranks(), world.device(), timeout);
    if (group) local_ = std::move(group);
  }
  for (int l = 0; l < topology.local_size; ++l) {
    NodeTopology t = topology;
    t.local_rank = l;
    auto group = new_group(store, rank, size, t.peer_ranks(), world.device(), timeout);
    if (group) global_ = std::make_unique<MeteredCommunicator>(wrap_cross_node ? wrap_cross_node(std::move(group))
                                                                               : std::move(group));
  }
  local_sync_ = std::make_unique<DataParallelSync>(*local_, module);
}

DasoSync::~DasoSync() {
  // Sends still in flight (an epoch cut short by an error) must not outlive their buffers,
  // and must not hold this rank until a timeout: abort the groups, then collect them.
  if (!sends_.empty()) {
    global_->abort();
    local_->abort();
  }
  for (Send& s : sends_) {
    try {
      wait_all(s.works);
    } catch (...) {  // the error has been, or will be, reported by whoever failed first
    }
  }
}

std::vector<double> DasoSync::sum(std::vector<double> values) { return sum_over_ranks(world_, std::move(values)); }

int64_t DasoSync::max(int64_t value) { return max_over_ranks(world_, value); }

void DasoSync::start(double examples, int64_t earlier_backwards) {
  armed_ = schedule_.local_sync();
  if (armed_) in_group(false, [&] { local_sync_->arm(examples, earlier_backwards); });
}

Tensor DasoSync::count_before_backward() {
  // Without the node's average (DASO's local skips) the backward is seeded with sums and
  // this rank's own count divides them, as before the reducer took the seed over.
  Tensor count;
  if (armed_) in_group(false, [&] { count = local_sync_->seed_count(); });
  return count;
}

void DasoSync::reduce(double examples, bool divide) {
  if (armed_) {
    armed_ = false;
    // The node's reducer was armed alike, so it seeded and divides as this one decided.
    in_group(false, [&] { local_sync_->finish(); });
  } else if (divide) {
    // Without the node's average this rank steps on its own gradients (DASO's local skips).
    divide_gradients(params_, examples);
  }
}

Tensor DasoSync::pack(bool cast) const {
  NoGradGuard no_grad;
  const DType wire = cast ? schedule_.options().downcast_type : dtype_;
  Tensor flat = empty({numel_}, Options(wire, world_.device()));
  int64_t offset = 0;
  for (const Variable& p : params_) {
    flat.narrow(0, offset, p.numel()).copy_(p.data().reshape({-1}));
    offset += p.numel();
  }
  return flat;
}

void DasoSync::start_send(const Tensor& flat, bool cast) {
  const DType wire = flat.dtype();
  // Chunks of at most sending_chunk_size elements, the remainder first (as Heat).
  const int64_t chunk = schedule_.options().sending_chunk_size;
  const int64_t pieces = numel_ == 0 ? 0 : (numel_ + chunk - 1) / chunk;
  std::vector<int64_t> sizes;
  if (pieces > 0) sizes.push_back(numel_ - chunk * (pieces - 1));
  for (int64_t i = 1; i < pieces; ++i) sizes.push_back(chunk);
  Send send;
  send.cast = cast;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    Tensor piece = flat.narrow(0, offset, n);
    offset += n;
    if (cast) {
      // 16-bit values are gathered and summed in float32 here: a 16-bit running sum would
      // round at every node.
      Tensor gathered = empty({global_->size(), n}, Options(wire, world_.device()));
      send.works.push_back(global_->all_gather(piece, gathered));
      send.chunks.push_back(gathered);
    } else {
      send.works.push_back(global_->all_reduce({piece}, ReduceOp::Sum));
      send.chunks.push_back(piece);
    }
  }
  sends_.push_back(std::move(send));
}

void DasoSync::refuse_non_finite(const Tensor& flat) {
  const DType wire = flat.dtype();
  if (all(isfinite(flat)).item<bool>()) return;
  // The error path only: find the first parameter at fault, and say whether it is the
  // parameter itself or its conversion to the wire dtype (float16 ends at 65504).
  std::string what = "the parameters";
  int64_t offset = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const int64_t n = params_[i].numel();
    Tensor piece = flat.narrow(0, offset, n);
    offset += n;
    const int64_t bad = n - wick::sum(isfinite(piece)).item<int64_t>();
    if (bad == 0) continue;
    const Tensor original = params_[i].data();
    const int64_t nans = wick::sum(isnan(original)).item<int64_t>();
    const int64_t infs = wick::sum(isinf(original)).item<int64_t>();
    what = "parameter '" + names_[i] + "' " + shape_str(params_[i].shape()) + " (" +
           (nans + infs > 0 ? std::to_string(nans) + " NaN and " + std::to_string(infs) + " infinite of " +
                                  std::to_string(n) + " values"
                            : std::to_string(bad) + " of " + std::to_string(n) + " values beyond the range of " +
                                  dtype_name(wire) + ", the downcast type") +
           ")";
    break;
  }
  // The peers are waiting for this rank's send: they fail at once instead of at their timeout.
  global_->abort();
  local_->abort();
  throw Error("DASO: rank " + std::to_string(world_.rank()) + " (node " + std::to_string(topology_.node) +
              ", local rank " + std::to_string(topology_.local_rank) + ") refuses to send " + what +
              " to the other nodes: averaging it would spread it to every rank (the training diverged?)");
}

Tensor DasoSync::finish_send(Send& send) {
  wait_all(send.works);
  const DType acc = dtype_ == DType::Float64 ? DType::Float64 : DType::Float32;
  std::vector<Tensor> parts;
  for (const Tensor& c : send.chunks) parts.push_back(send.cast ? c.to(acc).sum({0}) : c.to(acc));
  Tensor flat = parts.size() == 1 ? parts[0] : cat(parts, 0);
  return flat;
}

// Heat's weighting: the local copy counts 2 * batches_to_wait times against one share per
// node of the sum received: p = (w p + sum) / (nodes + w).
void DasoSync::merge(Send& send, int64_t batches_to_wait) {
  NoGradGuard no_grad;
  Tensor total = finish_send(send);
  const double w = DasoSchedule::merge_weight(batches_to_wait);
  const double denom = static_cast<double>(topology_.nodes) + w;
  int64_t offset = 0;
  for (Variable& p : params_) {
    Tensor update = total.narrow(0, offset, p.numel()).reshape(p.shape());
    offset += p.numel();
    Tensor merged = p.data().to(total.dtype()).mul_(w / denom).add_(div(update, denom));
    p.data().copy_(merged);
  }
}

void DasoSync::replace(Send& send) {
  NoGradGuard no_grad;
  Tensor total = finish_send(send);
  total.div_(static_cast<double>(topology_.nodes));
  int64_t offset = 0;
  for (Variable& p : params_) {
    p.data().copy_(total.narrow(0, offset, p.numel()).reshape(p.shape()));
    offset += p.numel();
  }
}

namespace {
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}
}  // namespace

// A failure in a group is reported with the job's ranks in it: the group's own numbering
// would not tell which process died or hung.
template <class F>
void DasoSync::in_group(bool cross_node, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    const std::vector<int> ranks = cross_node ? topology_.peer_ranks() : topology_.node_ranks();
    throw Error(std::string("DASO: ") + (cross_node ? "the cross-node group" : "the node's group") + " (ranks " +
                rank_list(ranks) + ") failed on rank " + std::to_string(world_.rank()) + ": " + e.what());
  }
}

void DasoSync::after_step() {
  const DasoSchedule::Decision d = schedule_.step();
  const int64_t me = topology_.local_rank;
  if (d.send && me == d.send_group) {
    Tensor flat = pack(d.cast);
    refuse_non_finite(flat);  // before the group: the fault is this rank's, not the group's
    in_group(true, [&] { start_send(flat, d.cast); });
  }
  if (d.merge && me == d.merge_group) {
    WICK_CHECK(!sends_.empty(), "DASO: internal error: nothing to merge");
    Send send = std::move(sends_.front());
    sends_.pop_front();
    in_group(true, [&] { merge(send, d.merge_wait); });
  }
  if (d.broadcast_root >= 0)
    in_group(false, [&] { local_sync_->broadcast_parameters(static_cast<int>(d.broadcast_root)); });
  if (d.replace) {
    if (me == d.send_group) {
      WICK_CHECK(sends_.size() == 1, "DASO: internal error: ", sends_.size(), " sends outstanding at a replace");
      Send send = std::move(sends_.front());
      sends_.pop_front();
      in_group(true, [&] { replace(send); });
    }
    in_group(false, [&] { local_sync_->broadcast_parameters(static_cast<int>(d.send_group)); });
  }
}

namespace {
// DasoSchedule::State as 13 float64 values (integers are exact in float64 far beyond any
// epoch or batch count), in this order.
Tensor encode_state(const DasoSchedule::State& s) {
  return tensor<double>({static_cast<double>(s.epoch), static_cast<double>(s.batch),
                         static_cast<double>(s.global_skip), static_cast<double>(s.local_skip),
                         static_cast<double>(s.batches_to_wait), static_cast<double>(s.send_group),
                         static_cast<double>(s.previous_send_group), static_cast<double>(s.pending_group),
                         static_cast<double>(s.pending_wait), s.local_sync ? 1.0 : 0.0, s.best_loss,
                         static_cast<double>(s.bad_epochs), 0.0});
}

DasoSchedule::State decode_state(const Tensor& t) {
  WICK_CHECK(t.dtype() == DType::Float64 && t.dim() == 1 && t.numel() == 13,
             "DASO: load_state_dict: 'daso.schedule' must be float64 of shape [13], got ", dtype_name(t.dtype()), " ",
             shape_str(t.shape()));
  const std::vector<double> v = t.to_vector<double>();
  auto integer = [&](size_t i, double lo) {
    WICK_CHECK(std::isfinite(v[i]) && v[i] == std::floor(v[i]) && v[i] >= lo && v[i] < 1e15,
               "DASO: load_state_dict: entry ", i, " of 'daso.schedule' is not a valid count: ", v[i]);
    return static_cast<int64_t>(v[i]);
  };
  DasoSchedule::State s;
  s.epoch = integer(0, 0);
  s.batch = integer(1, 0);
  s.global_skip = integer(2, 0);
  s.local_skip = integer(3, 0);
  s.batches_to_wait = integer(4, -1e15);
  s.send_group = integer(5, 0);
  s.previous_send_group = integer(6, -1);
  s.pending_group = integer(7, -1);
  s.pending_wait = integer(8, 0);
  s.local_sync = v[9] != 0;
  s.best_loss = v[10];
  s.bad_epochs = integer(11, 0);
  return s;
}
}  // namespace

TensorMap DasoSync::state_dict() const { return {{"daso.schedule", encode_state(schedule_.state())}}; }

void DasoSync::load_state_dict(const TensorMap& state) {
  auto it = state.find("daso.schedule");
  WICK_CHECK(it != state.end() && state.size() == 1, "DASO: load_state_dict: expected exactly 'daso.schedule', got ",
             state.size(), " entries");
  DasoSchedule::State s = decode_state(it->second);
  WICK_CHECK(s.send_group < topology_.local_size && s.previous_send_group < topology_.local_size &&
                 s.pending_group < 0 && s.batch == 0,
             "DASO: load_state_dict: the saved schedule (send group ", s.send_group, ", batch ", s.batch,
             ") does not fit ", topology_.local_size, " ranks per node at an epoch's end");
  schedule_.set_state(s);
}

void DasoSync::start_epoch(int64_t steps) {
  // The schedule evolves the same way on every rank; after a resume only the rank that read
  // the checkpoint has its state, so every epoch starts from rank 0's.
  Tensor state = encode_state(schedule_.state()).to(world_.device());
  world_.broadcast({state}, 0)->wait();
  schedule_.set_state(decode_state(state.cpu()));
  schedule_.set_batches_per_epoch(steps);
}

void DasoSync::end_epoch(double mean_loss) { schedule_.end_epoch(mean_loss); }

void DasoSync::broadcast_parameters(int root) {
  std::vector<Tensor> values;
  for (const Variable& p : module_.parameters()) values.push_back(p.data());
  broadcast_values(world_, values, root);
}

void DasoSync::broadcast_buffers(int root) { broadcast_values(world_, module_.buffers(), root); }

}  // namespace wick::distributed
