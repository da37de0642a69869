#include <wick/distributed/data_parallel/sharded_sync.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <wick/autograd/grad_mode.h>
#include <wick/optim/optimizer_spec.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/reduce.h>
#include <wick/tensor/storage_residency.h>

namespace wick::distributed {

namespace {

bool same_memory(const Tensor& a, const Tensor& b) { return a.shares_storage(b) && a.offset() == b.offset(); }

// Optimizers whose update of an element reads only that element's parameter, gradient and
// state: a flat slice of several parameters then steps exactly as the parameters would.
// (LAMB's trust ratio and Adafactor's factored moments are per parameter: not these.)
bool elementwise(const std::string& type) {
  return type == "SGD" || type == "Adam" || type == "AdamW" || type == "RMSprop" || type == "Adagrad";
}

TensorMap group_entries(const Optimizer& o) {
  TensorMap out;
  for (auto& [key, t] : o.state_dict())
    if (key.rfind("group.", 0) == 0) out.emplace(key, t);
  return out;
}

}  // namespace

ShardedSync::ShardedSync(Communicator& comm, Module& module, Optimizer& optimizer, ShardStrategy strategy,
                         DataParallelOptions options)
    : comm_(comm),
      module_(module),
      user_optimizer_(optimizer),
      strategy_(strategy),
      options_(options),
      params_(module.parameters()) {
  const char* who = "ShardedSync";
  WICK_CHECK(strategy_ != ShardStrategy::None, who, ": no sharding asked for (use DataParallelSync)");
  WICK_CHECK(options_.bucket_bytes > 0, who, ": bucket_bytes must be > 0, got ", options_.bucket_bytes);
  WICK_CHECK(options_.reduce_scatters_in_flight >= 0, who, ": reduce_scatters_in_flight must be >= 0, got ",
             options_.reduce_scatters_in_flight);
  WICK_CHECK(strategy_ == ShardStrategy::Full || (options_.forward_prefetch && options_.backward_prefetch), who,
             ": forward_prefetch and backward_prefetch choose when ShardStrategy::Full gathers its units before "
             "their use; shard=",
             shard_strategy_name(strategy_), " gathers every unit after the step");
  WICK_CHECK(!options_.only_driver_steps, who, ": every rank steps its shard (only_driver_steps is not supported)");
  WICK_CHECK(!options_.reduce_dtype || *options_.reduce_dtype == DType::BFloat16 ||
                 *options_.reduce_dtype == DType::Float16 || *options_.reduce_dtype == DType::Float32,
             who, ": reduce_dtype must be bfloat16, float16 or float32, got ",
             options_.reduce_dtype ? dtype_name(*options_.reduce_dtype) : "");
  WICK_CHECK(!options_.daso, who, ": DASO exchanges whole models; it does not shard");
  WICK_CHECK(!options_.param_dtype || strategy_ == ShardStrategy::Full, who, ": param_dtype (",
             options_.param_dtype ? dtype_name(*options_.param_dtype) : "",
             ") gathers the shard_units' parameters in 16 bits for compute; shard=", shard_strategy_name(strategy_),
             " keeps whole float32 parameters on every rank (gathered after the step, in float32): use shard=full, or "
             "autocast alone (TrainerOptions::precision)");
  WICK_CHECK(
      !options_.param_dtype || *options_.param_dtype == DType::BFloat16 || *options_.param_dtype == DType::Float16, who,
      ": param_dtype must be bfloat16 or float16, got ", options_.param_dtype ? dtype_name(*options_.param_dtype) : "");
  WICK_CHECK(elementwise(optimizer.name()), who, ": the optimizer ", optimizer.name(),
             " does not update element by element, so its state cannot be sliced across parameters; "
             "sharding supports SGD, Adam, AdamW, RMSprop and Adagrad");

  // Which optimizer group each of the module's parameters is in: units never mix groups.
  std::unordered_map<const Variable::Impl*, size_t> group_of;
  size_t in_optimizer = 0;
  for (size_t g = 0; g < optimizer.num_groups(); ++g)
    for (const auto& [name, p] : optimizer.params(g)) {
      group_of.emplace(p.impl().get(), g);
      ++in_optimizer;
    }
  std::vector<size_t> param_group(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    auto it = group_of.find(params_[k].impl().get());
    WICK_CHECK(it != group_of.end(), who, ": parameter ", k, " of the module (shape ", shape_str(params_[k].shape()),
               ") is not in the optimizer; every parameter must be stepped by it");
    param_group[k] = it->second;
  }
  WICK_CHECK(in_optimizer == params_.size(), who, ": the optimizer has ", in_optimizer, " parameters but the module ",
             params_.size(), "; give it the module's parameters");

  // Units per (wrapped module, group, dtype, device), filled in reverse registration order;
  // a wrapped module's are not split by bucket_bytes.
  const int64_t world = comm_.size(), rank = comm_.rank();
  wrapped_of_ = fully_sharded() || !options_.shard_units.empty() ? find_wrapped_modules()
                                                                 : std::vector<int64_t>(params_.size(), -1);
  unit_of_.assign(params_.size(), 0);
  index_in_unit_.assign(params_.size(), 0);
  std::map<std::tuple<int64_t, size_t, DType, std::string>, size_t> open;
  std::vector<int64_t> bytes;
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k].data();
    auto kind = std::make_tuple(wrapped_of_[k], param_group[k], p.dtype(), p.device().str());
    auto it = open.find(kind);
    if (it == open.end() || (wrapped_of_[k] < 0 && bytes[it->second] >= options_.bucket_bytes)) {
      units_.emplace_back();
      units_.back().wrapped = wrapped_of_[k];
      group_of_unit_.push_back(param_group[k]);
      bytes.push_back(0);
      it = open.insert_or_assign(kind, units_.size() - 1).first;
    }
    Unit& u = units_[it->second];
    u.offsets.push_back(u.params.empty() ? 0 : u.offsets.back() + params_[u.params.back()].numel());
    index_in_unit_[k] = u.params.size();
    u.params.push_back(k);
    bytes[it->second] += static_cast<int64_t>(p.nbytes());
  }
  if (!wrapped_.empty()) {
    // Reductions launch in unit order, so the units go in the order backward completes
    // them: by their first-registered parameter, the last to get its gradient. (A root
    // unit holding the first embedding and the final norm would otherwise hold back every
    // wrapped module's reduce-scatter to the end of backward.)
    std::vector<size_t> order(units_.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return units_[a].params.back() > units_[b].params.back(); });
    std::vector<Unit> sorted;
    std::vector<size_t> groups;
    for (size_t j : order) {
      sorted.push_back(std::move(units_[j]));
      groups.push_back(group_of_unit_[j]);
    }
    units_ = std::move(sorted);
    group_of_unit_ = std::move(groups);
  }
  for (size_t j = 0; j < units_.size(); ++j) {
    for (size_t k : units_[j].params) unit_of_[k] = j;
    if (units_[j].wrapped >= 0) wrapped_[static_cast<size_t>(units_[j].wrapped)].units.push_back(j);
  }
  NoGradGuard no_grad;
  for (Unit& u : units_) {
    const int64_t numel = u.offsets.back() + params_[u.params.back()].numel();
    u.shard = (numel + world - 1) / world;  // padded: every rank's slice the same size
  }
  // ZeRO-2's and Full's gradient slices and Full's parameter slices, each kind in one
  // allocation (slices are what a rank keeps: see pack_slices).
  std::vector<size_t> all_units(units_.size()), wrapped_units;
  for (size_t j = 0; j < units_.size(); ++j) {
    all_units[j] = j;
    if (sharded_between_uses(units_[j])) wrapped_units.push_back(j);
  }
  std::vector<Tensor> grad_slices =
      strategy_ == ShardStrategy::Optimizer ? std::vector<Tensor>{} : pack_slices(all_units, std::nullopt);
  std::vector<Tensor> param_slices = pack_slices(wrapped_units, std::nullopt);
  for (size_t j = 0; j < units_.size(); ++j) {
    Unit& u = units_[j];
    const Tensor& first = params_[u.params.front()].data();
    const Options o(first.dtype(), first.device());
    u.values = zeros({u.shard * world}, o);
    for (size_t i = 0; i < u.params.size(); ++i) {
      Variable p = params_[u.params[i]];
      Tensor s = slot(u, u.values, i);
      s.copy_(p.data());
      p.set_data(s);  // the parameter lives in its unit from now on
    }
    // param_dtype: a wrapped unit computes in it, so its gradients come back in it.
    const bool narrowed = sharded_between_uses(u) && options_.param_dtype && is_floating(first.dtype());
    if (narrowed) {
      u.compute = empty({u.shard * world}, Options(*options_.param_dtype, first.device()));
      StorageResidency::release(*u.compute.storage());  // each gather allocates and fills it
    }
    const DType grad_dtype = narrowed ? *options_.param_dtype : first.dtype();
    u.reduce_dtype = options_.reduce_dtype && is_floating(first.dtype()) ? *options_.reduce_dtype : grad_dtype;
    if (strategy_ == ShardStrategy::Optimizer) u.grads = zeros({u.shard * world}, o);
    u.grad_shard =
        strategy_ == ShardStrategy::Optimizer ? u.grads.narrow(0, rank * u.shard, u.shard) : grad_slices[j].zero_();
    // A wrapped unit's slice is a tensor apart from `values`, which is released.
    Tensor mine = u.values.narrow(0, rank * u.shard, u.shard);
    u.shard_param = Variable(sharded_between_uses(u) ? param_slices[j].copy_(mine) : mine, true);
  }

  // The shard optimizer: the user's type, one group per user group, holding that group's
  // slices; its hyper-parameters are copied from the user's before every step.
  std::vector<NamedParameters> groups(optimizer.num_groups());
  for (size_t j = 0; j < units_.size(); ++j)
    groups[group_of_unit_[j]].emplace_back("unit" + std::to_string(j), units_[j].shard_param);
  shard_optimizer_ = make_optimizer({optimizer.name(), {}}, groups.empty() ? NamedParameters{} : groups[0]);
  for (size_t g = 1; g < groups.size(); ++g) shard_optimizer_->add_param_group({groups[g], {}});
  shard_optimizer_->set_master_weights(optimizer.master_weights());
  // Its moments (and master copies) of every unit also in one allocation per buffer.
  shard_optimizer_->set_buffer_placement([this, all_units](const std::string& param, const std::string& buffer,
                                                           const Options& options) {
    const size_t j = std::stoul(param.substr(4));  // "unit<j>"
    std::vector<Tensor>& slices = state_slices_[buffer + "/" + dtype_name(options.dtype) + "/" + options.device.str()];
    if (slices.empty()) slices = pack_slices(all_units, options);
    return slices[j];
  });
  copy_hyper_parameters();

  taken_.assign(params_.size(), false);
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(
        params_[k].register_post_accumulate_grad_hook([this, k](const Variable&) { on_gradient_final(k); }));
  if (!wrapped_.empty()) install_forward_hooks();
}

ShardedSync::~ShardedSync() {
  for (size_t k = 0; k < params_.size(); ++k) params_[k].remove_hook(hooks_[k]);
  for (const Wrapped& w : wrapped_) w.module->remove_forward_hooks(w.hooks);
  std::vector<std::shared_ptr<Work>> pending;
  for (Unit& u : units_) {
    pending.push_back(u.work);
    // A gather after the step that completes leaves the model readable (training that
    // failed elsewhere); one that fails leaves its parameters on the stand-in, so a read
    // throws rather than seeing a unit half written.
    if (!sharded_between_uses(u) && u.gather) try {
        wait_step_gather(u, stats_.waited_later);
      } catch (const Error&) {
      }
    pending.push_back(u.gather);
  }
  pending.push_back(count_work_);
  for (const auto& work : pending)
    if (work) try {
        work->wait();
      } catch (const Error&) {
      }
}

Tensor ShardedSync::whole_gradient(const Unit& u) const {
  // ZeRO-2 and Full fill it in reduce_dtype directly: each gradient is rounded once, by its
  // copy into the unit, as DataParallelSync's compressed buckets.
  const DType dtype = strategy_ == ShardStrategy::Optimizer ? u.grad_shard.dtype() : u.reduce_dtype;
  return zeros({u.shard * comm_.size()}, Options(dtype, u.values.device()));
}

std::vector<Tensor> ShardedSync::pack_slices(const std::vector<size_t>& units, std::optional<Options> options) const {
  // The CPU allocator rounds a block of 4 MB or more up to whole 2 MB pages: at 101M
  // parameters on 4 ranks each GPT block's slice is 12.01 MB, and a block per slice (its
  // parameters, gradient and two AdamW moments) left 67 MB a rank unused. Units of one
  // dtype and device share a block; `options` gives another dtype (or device) for all.
  std::vector<Tensor> out(units_.size());
  std::map<std::pair<DType, std::string>, std::vector<size_t>> by_kind;
  for (size_t j : units) {
    const Tensor& first = params_[units_[j].params.front()].data();
    const Options o = options.value_or(first.options());
    by_kind[{o.dtype, o.device.str()}].push_back(j);
  }
  for (const auto& [kind, members] : by_kind) {
    int64_t total = 0;
    for (size_t j : members) total += units_[j].shard;
    const Tensor& first = params_[units_[members.front()].params.front()].data();
    const Tensor flat = empty({total}, options.value_or(first.options()));
    int64_t at = 0;
    for (size_t j : members) {
      out[j] = flat.narrow(0, at, units_[j].shard);
      at += units_[j].shard;
    }
  }
  return out;
}

Tensor ShardedSync::slot(const Unit& u, const Tensor& flat, size_t i) const {
  const Variable& p = params_[u.params[i]];
  return flat.narrow(0, u.offsets[i], p.numel()).view(p.shape());
}

std::vector<double> ShardedSync::sum(std::vector<double> values) { return sum_over_ranks(comm_, std::move(values)); }

int64_t ShardedSync::max(int64_t value) { return max_over_ranks(comm_, value); }

void ShardedSync::copy_hyper_parameters() {
  // By name, one at a time: load_state_dict would also replace the state (the moments).
  for (const auto& [key, t] : group_entries(user_optimizer_)) {
    const size_t dot = key.find('.', 6);
    shard_optimizer_->set_hyper_parameter(std::stoul(key.substr(6, dot - 6)), key.substr(dot + 1), t.item<double>());
  }
}

void ShardedSync::start(double examples, int64_t /*earlier_backwards*/) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = true;
  next_launch_ = 0;
  in_flight_.clear();
  taken_.assign(params_.size(), false);
  for (Unit& u : units_) {
    u.pending = u.params.size();
    u.work.reset();
  }
  count_ = full({1}, examples, Options(DType::Float64, comm_.device()));
  count_work_ = comm_.all_reduce({count_}, ReduceOp::Sum);
  count_ready_ = false;
}

Tensor ShardedSync::count_before_backward() {
  WICK_CHECK(count_work_, "ShardedSync: the example count asked for before arm");
  if (!count_ready_) count_work_->wait();
  count_ready_ = true;
  return count_.view({});
}

void ShardedSync::take_gradient(Unit& u, size_t i) {
  NoGradGuard no_grad;
  Variable p = params_[u.params[i]];
  if (!u.grads.defined()) {
    u.grads = whole_gradient(u);
    if (strategy_ != ShardStrategy::Optimizer)
      stats_.most_whole_gradients = std::max(stats_.most_whole_gradients, static_cast<int64_t>(whole_gradients_held()));
  }
  Tensor s = slot(u, u.grads, i);
  if (!p.grad().defined()) s.zero_();  // unused here, or this rank ran no backward: it adds nothing
  else if (!same_memory(p.grad().data(), s)) s.copy_(p.grad().data());
  // Drop the autograd's own buffer at once: ZeRO-1 keeps the gradient as its slot (later
  // backwards of the group accumulate there), ZeRO-2 only in the unit until it is reduced.
  if (strategy_ == ShardStrategy::Optimizer) p.set_grad(Variable(s));
  else p.zero_grad(true);
}

void ShardedSync::on_gradient_final(size_t param) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fully_sharded()) note_final(param);
  if (!armed_ || taken_[param]) return;
  taken_[param] = true;
  Unit& u = units_[unit_of_[param]];
  take_gradient(u, index_in_unit_[param]);
  if (--u.pending == 0) launch_in_order();
}

void ShardedSync::launch_in_order() {
  while (next_launch_ < units_.size() && units_[next_launch_].pending == 0) {
    Unit& u = units_[next_launch_++];
    for (size_t i = 0; i < u.params.size(); ++i)
      if (!taken_[u.params[i]]) {
        take_gradient(u, i);
        taken_[u.params[i]] = true;
      }
    if (!u.grads.defined()) u.grads = whole_gradient(u);  // no parameters
    if (strategy_ == ShardStrategy::Optimizer) {
      // ZeRO-1's whole gradient is what .grad() shows: compressed, it travels as a copy.
      if (u.grads.dtype() != u.reduce_dtype) u.wire = u.grads.to(u.reduce_dtype);
      u.work = comm_.all_reduce({u.wire.defined() ? u.wire : u.grads}, ReduceOp::Sum);
      continue;
    }
    // Compressed, the slice lands in reduce_dtype and reduce() widens it into grad_shard.
    if (u.grad_shard.dtype() != u.reduce_dtype) u.wire = empty({u.shard}, Options(u.reduce_dtype, u.grads.device()));
    // The reduction may work in the whole gradient (Gloo would otherwise copy it), which it
    // keeps until it is done and frees then. Waiting for the
    // units launched before the last few bounds how many whole gradients exist at once
    // (FSDP2 keeps one reduce-scatter in flight); otherwise every unit's would live until
    // finish, as much memory as the gradients ZeRO-2 is there to shard.
    u.work =
        comm_.reduce_scatter_consuming(std::move(u.grads), u.wire.defined() ? u.wire : u.grad_shard, ReduceOp::Sum);
    u.grads = Tensor();
    in_flight_.push_back(next_launch_ - 1);
    while (in_flight_.size() > static_cast<size_t>(options_.reduce_scatters_in_flight)) {
      Unit& done = units_[in_flight_.front()];
      in_flight_.pop_front();
      done.work->wait();
      done.work.reset();
    }
  }
}

void ShardedSync::launch_reduction() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return;
  for (Unit& u : units_) u.pending = 0;
  launch_in_order();
  armed_ = false;
}

void ShardedSync::reduce(double /*examples*/, bool divide) {
  WICK_CHECK(count_work_, "ShardedSync: the gradient reduction was not armed");
  launch_reduction();
  std::vector<std::shared_ptr<Work>> works;
  for (Unit& u : units_)
    if (u.work) works.push_back(u.work);
  if (!count_ready_) works.push_back(count_work_);
  count_work_.reset();
  in_flight_.clear();
  wait_all(works);
  if (fully_sharded() && !whole_)  // the modules some of whose parameters had no gradient
    for (size_t w = 0; w < wrapped_.size(); ++w) release(w);
  const double count = divide ? count_.cpu().item<double>() : 0.0;
  divide = count > 0;
  NoGradGuard no_grad;
  for (Unit& u : units_) {
    u.work.reset();
    if (u.wire.defined()) {  // the sums in reduce_dtype, widened before the division (as DataParallelSync's)
      (strategy_ == ShardStrategy::Optimizer ? u.grads : u.grad_shard).copy_(u.wire);
      u.wire = Tensor();
    }
    if (strategy_ == ShardStrategy::Optimizer) {
      if (divide) u.grads.mul_(1.0 / count);
      for (size_t i = 0; i < u.params.size(); ++i) params_[u.params[i]].set_grad(Variable(slot(u, u.grads, i)));
    } else {
      if (divide) u.grad_shard.mul_(1.0 / count);
      u.grads = Tensor();  // the full gradient was needed only until its reduction
    }
  }
}

void ShardedSync::clip(const std::vector<Variable>& /*params*/, double max_norm) {
  NoGradGuard no_grad;
  // Each rank holds the mean gradient's slices it owns; their squared norms add up over the
  // ranks to the whole model's (the padding is zero).
  double squares = 0;
  for (const Unit& u : units_) {
    const double n = norm(u.grad_shard, 2.0).to(DType::Float64).cpu().item<double>();
    squares += n * n;
  }
  const double total = std::sqrt(sum_over_ranks(comm_, {squares})[0]);
  const double coef = max_norm / (total + 1e-6);  // clip_grad_norm_'s
  if (coef >= 1.0) return;
  // ZeRO-1 scales the whole gradient, which .grad() shows; ZeRO-2 has only its slices.
  for (Unit& u : units_) (strategy_ == ShardStrategy::Optimizer ? u.grads : u.grad_shard).mul_(coef);
}

Optimizer* ShardedSync::optimizer_to_step(Optimizer* /*given*/, double loss_scale) {
  // The step writes the slices that the last step's gathers send: those of a module the
  // forward did not call may still be in flight.
  {
    std::lock_guard<std::mutex> lock(mu_);
    wait_step_gathers();
  }
  copy_hyper_parameters();  // the schedule changed the user's learning rates
  for (Unit& u : units_) u.shard_param.set_grad(Variable(u.grad_shard));
  if (strategy_ == ShardStrategy::Optimizer && loss_scale != 1.0) {
    // The scaler unscales this rank's slice; .grad() shows the whole unit, so the other
    // ranks' slices are divided here, by the same float32 reciprocal the scaler uses.
    NoGradGuard no_grad;
    const double inverse = static_cast<float>(1.0 / loss_scale);
    for (Unit& u : units_) {
      const int64_t begin = comm_.rank() * u.shard, end = begin + u.shard, whole = u.grads.numel();
      if (begin > 0) u.grads.narrow(0, 0, begin).mul_(inverse);
      if (end < whole) u.grads.narrow(0, end, whole - end).mul_(inverse);
    }
  }
  return shard_optimizer_.get();
}

void ShardedSync::point_parameters(const Unit& u, const Tensor& flat) {
  for (size_t i = 0; i < u.params.size(); ++i) params_[u.params[i]].set_data(slot(u, flat, i));
}

void ShardedSync::after_step() {
  std::lock_guard<std::mutex> lock(mu_);
  // In the order the next forward reads them (the communicator completes them in the order
  // issued): the units of no wrapped module, waited for before the forward, then each
  // wrapped module's in forward order. Full gathers its wrapped units before their use.
  for (Unit& u : units_)
    if (u.wrapped < 0) launch_step_gather(u);
  if (fully_sharded()) return;
  for (const Wrapped& w : wrapped_)
    for (size_t j : w.units) launch_step_gather(units_[j]);
}

void ShardedSync::launch_step_gather(Unit& u) {
  NoGradGuard no_grad;
  // The gather writes this rank's slice of the unit too: it sends a copy, kept until it is
  // waited for.
  u.gather_input = u.shard_param.data().clone();
  u.gather = comm_.all_gather(u.gather_input, u.values);
  if (!u.in_flight.defined())
    u.in_flight = Tensor(std::make_shared<Storage>(nullptr, u.values.nbytes(), u.values.device(), [](void*) {}),
                         u.values.shape(), u.values.strides(), 0, u.values.dtype());
  point_parameters(u, u.in_flight);
  ++stats_.after_step;
}

void ShardedSync::wait_step_gather(Unit& u, int64_t& waited) {
  if (!u.gather) return;
  u.gather->wait();
  u.gather.reset();
  u.gather_input = Tensor();
  point_parameters(u, u.values);
  ++waited;
}

void ShardedSync::wait_step_gathers() {
  for (Unit& u : units_)
    if (!sharded_between_uses(u)) wait_step_gather(u, stats_.waited_later);
}

void ShardedSync::before_forward() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Unit& u : units_)
    if (u.wrapped < 0) wait_step_gather(u, stats_.waited_before_forward);
}

void ShardedSync::broadcast_parameters(int root) {
  gather_everything();
  std::vector<Tensor> values;
  for (const Unit& u : units_) values.push_back(u.values);
  broadcast_values(comm_, values, root);
  hand_out_state(root);
}

void ShardedSync::broadcast_buffers(int root) { broadcast_values(comm_, module_.buffers(), root); }

ShardedSync::StateBytes ShardedSync::state_bytes() const {
  StateBytes b;
  for (const Unit& u : units_) {
    if (sharded_between_uses(u)) b.parameters += static_cast<int64_t>(u.shard_param.data().nbytes());
    if (!sharded_between_uses(u) || StorageResidency::resident(*u.values.storage()))
      b.parameters += static_cast<int64_t>(u.values.nbytes());
    if (u.compute.defined() && StorageResidency::resident(*u.compute.storage()))
      b.parameters += static_cast<int64_t>(u.compute.nbytes());
    b.gradients +=
        static_cast<int64_t>(strategy_ == ShardStrategy::Optimizer ? u.grads.nbytes() : u.grad_shard.nbytes());
    b.largest_unit = std::max<int64_t>(b.largest_unit, static_cast<int64_t>(u.values.nbytes()));
    if (!sharded_between_uses(u) && u.gather_input.defined())
      b.sending += static_cast<int64_t>(u.gather_input.nbytes());
  }
  for (const auto& [key, t] : shard_optimizer_->state_dict())
    if (key.rfind("state.", 0) == 0) b.optimizer += static_cast<int64_t>(t.nbytes());
  return b;
}

}  // namespace wick::distributed
