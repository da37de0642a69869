// ShardedSync's wrapped modules (DataParallelOptions::shard_units). Full sharding
// (ShardStrategy::Full): their parameters gathered before their forward and their backward
// and released after, the next module's gather launched while the current one computes.
// ZeRO-1/2: their forward waits for their units' gathers after the step.
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/distributed/data_parallel/sharded_sync.h>
#include <wick/tensor/error.h>
#include <wick/tensor/storage_residency.h>

namespace wick::distributed {

namespace {

Module* find_submodule(Module& root, const std::string& name) {
  Module* m = &root;
  size_t begin = 0;
  while (m && begin <= name.size()) {
    const size_t dot = std::min(name.find('.', begin), name.size());
    const std::string part = name.substr(begin, dot - begin);
    Module* next = nullptr;
    for (const auto& [child_name, child] : m->named_children())
      if (child_name == part) next = child.get();
    m = next;
    begin = dot + 1;
  }
  return m;
}

bool resident(const Tensor& t) { return StorageResidency::resident(*t.storage()); }

}  // namespace

std::vector<int64_t> ShardedSync::find_wrapped_modules() {
  const std::string who = std::string("ShardedSync (shard=") + shard_strategy_name(strategy_) + ")";
  WICK_CHECK(!options_.shard_units.empty(), who,
             ": no units named; list the submodules whose parameters are sharded between uses in "
             "DataParallelOptions::shard_units, in forward order (e.g. each transformer block: \"h.0\", \"h.1\", ...)");
  std::unordered_map<const Variable::Impl*, size_t> index;
  for (size_t k = 0; k < params_.size(); ++k) index.emplace(params_[k].impl().get(), k);
  std::vector<int64_t> of(params_.size(), -1);
  std::unordered_set<const Module*> wrapped_modules;
  for (const std::string& name : options_.shard_units) {
    Module* m = name.empty() ? nullptr : find_submodule(module_, name);
    WICK_CHECK(m != nullptr, who, ": the model (", module_.type_name(), ") has no submodule '", name,
               "' (DataParallelOptions::shard_units)");
    Wrapped w;
    w.name = name;
    w.module = m;
    for (const auto& [param_name, p] : m->named_parameters()) {
      const size_t k = index.at(p.impl().get());
      WICK_CHECK(of[k] < 0, who, ": parameter '", name, ".", param_name, "' is in unit '",
                 of[k] < 0 ? "" : wrapped_[static_cast<size_t>(of[k])].name,
                 "' too; units must not share parameters (nested units, tied weights)");
      of[k] = static_cast<int64_t>(wrapped_.size());
      ++w.params;
    }
    WICK_CHECK(w.params > 0, who, ": unit '", name, "' has no parameters");
    wrapped_modules.insert(m);
    wrapped_.push_back(std::move(w));
  }
  // A parameter of a unit that a module outside every unit also holds (a tied weight) would
  // be read before the unit's hook: released (Full) or while its gather after the step is in
  // flight. Walk the modules outside the units.
  std::vector<std::pair<std::string, Module*>> todo{{"", &module_}};
  while (!todo.empty()) {
    auto [prefix, m] = todo.back();
    todo.pop_back();
    for (const auto& [param_name, p] : m->named_parameters(false)) {
      const int64_t w = of[index.at(p.impl().get())];
      WICK_CHECK(w < 0, who, ": parameter '", prefix, param_name, "' outside the units is unit '",
                 w < 0 ? "" : wrapped_[static_cast<size_t>(w)].name,
                 "''s too (a tied weight); tied parameters must be in one unit or outside all");
    }
    for (const auto& [child_name, child] : m->named_children())
      if (!wrapped_modules.contains(child.get())) todo.emplace_back(prefix + child_name + ".", child.get());
  }
  return of;
}

void ShardedSync::install_forward_hooks() {
  for (size_t w = 0; w < wrapped_.size(); ++w) {
    Module::ForwardHook post;  // ZeRO-1/2 keeps the parameters whole after the forward
    if (fully_sharded()) post = [this, w](Module&, const std::vector<Variable>& outputs) { after_forward(w, outputs); };
    wrapped_[w].hooks =
        wrapped_[w].module->register_forward_hooks([this, w](Module&) { before_forward(w); }, std::move(post));
  }
}

int64_t ShardedSync::wrapped_gathered() const {
  int64_t n = 0;
  for (const Wrapped& w : wrapped_) {
    bool whole = false;
    for (size_t j : w.units) whole = whole || units_[j].gather || resident(gathered(units_[j]));
    n += whole ? 1 : 0;
  }
  return n;
}

void ShardedSync::launch_gather(size_t w, bool prefetch) {
  bool launched = false;
  for (size_t j : wrapped_[w].units) {
    Unit& u = units_[j];
    const Tensor& into = gathered(u);
    if (u.gather || resident(into)) continue;
    StorageResidency::materialize(*into.storage());
    // param_dtype: the float32 master slice travels converted (half the bytes).
    if (u.compute.defined()) u.gather_input = u.shard_param.data().to(u.compute.dtype());
    u.gather = comm_.all_gather(u.compute.defined() ? u.gather_input : u.shard_param.data(), into);
    stats_.bytes += static_cast<int64_t>(into.nbytes());
    launched = true;
  }
  if (!launched) return;
  ++stats_.gathers;
  if (prefetch) ++stats_.prefetched;
  stats_.most_gathered = std::max(stats_.most_gathered, wrapped_gathered());
}

void ShardedSync::wait_gathered(size_t w) {
  launch_gather(w, false);
  for (size_t j : wrapped_[w].units)
    if (units_[j].gather) {
      units_[j].gather->wait();
      units_[j].gather.reset();
      units_[j].gather_input = Tensor();
    }
}

void ShardedSync::release(size_t w) {
  if (whole_) return;
  for (size_t j : wrapped_[w].units) {
    Unit& u = units_[j];
    if (u.gather) {  // a prefetch nobody used
      u.gather->wait();
      u.gather.reset();
      u.gather_input = Tensor();
    }
    if (resident(gathered(u))) StorageResidency::release(*gathered(u).storage());
  }
}

void ShardedSync::before_forward(size_t w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fully_sharded()) {
    for (size_t j : wrapped_[w].units) wait_step_gather(units_[j], stats_.waited_by_module);
    return;
  }
  if (whole_) {
    if (!grad_enabled()) return;  // evaluation of the whole model between epochs
    shard_everything();
  }
  // A forward inside backward is a checkpoint's recomputation (of a unit within the
  // checkpointed region): the unit comes back for it (and stays for its backward, which
  // follows), the next one is not needed again.
  const bool recomputing = backward_running();
  if (!recomputing) wrapped_[w].final_in_backward = 0;
  wait_gathered(w);
  if (options_.forward_prefetch && !recomputing && w + 1 < wrapped_.size()) launch_gather(w + 1, true);
}

void ShardedSync::after_forward(size_t w, const std::vector<Variable>& outputs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (whole_) return;
  if (!backward_running()) release(w);  // a recomputed unit is released after its backward
  if (!grad_enabled()) return;
  // The backward of the module starts when the gradient of its outputs is complete.
  for (Variable out : outputs)
    if (out.defined() && out.requires_grad())
      out.register_hook([this, w](const Variable&) {
        before_backward(w);
        return Variable();
      });
}

void ShardedSync::before_backward(size_t w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (whole_) return;
  wait_gathered(w);
  if (options_.backward_prefetch && w > 0) launch_gather(w - 1, true);
}

void ShardedSync::note_final(size_t param) {
  const int64_t w = wrapped_of_[param];
  if (w < 0 || whole_) return;
  Wrapped& m = wrapped_[static_cast<size_t>(w)];
  if (++m.final_in_backward < m.params) return;
  m.final_in_backward = 0;
  release(static_cast<size_t>(w));
}

void ShardedSync::gather_everything() {
  std::lock_guard<std::mutex> lock(mu_);
  wait_step_gathers();
  if (whole_ || !fully_sharded()) return;
  for (size_t w = 0; w < wrapped_.size(); ++w)
    for (size_t j : wrapped_[w].units) {
      Unit& u = units_[j];
      if (u.compute.defined()) {
        // param_dtype: whole in float32 from the master slices; the 16-bit copy goes.
        if (u.gather) {
          u.gather->wait();
          u.gather.reset();
          u.gather_input = Tensor();
        }
        if (resident(u.compute)) StorageResidency::release(*u.compute.storage());
        point_parameters(u, u.values);
      } else if (u.gather || resident(u.values)) {
        continue;
      }
      StorageResidency::materialize(*u.values.storage());
      u.gather = comm_.all_gather(u.shard_param.data(), u.values);
    }
  for (Unit& u : units_)
    if (u.gather) {
      u.gather->wait();
      u.gather.reset();
    }
  whole_ = true;
}

void ShardedSync::shard_everything() {
  NoGradGuard no_grad;
  const int64_t rank = comm_.rank();
  // The values may have changed while whole (a checkpoint loaded, a broadcast): the slices
  // are taken from them.
  for (Unit& u : units_) {
    if (!sharded_between_uses(u)) continue;
    u.shard_param.data().copy_(u.values.narrow(0, rank * u.shard, u.shard));
    if (!u.compute.defined()) continue;
    // param_dtype: the float32 whole goes until the epoch's end; the parameters compute in
    // the 16-bit buffer, gathered before each use.
    StorageResidency::release(*u.values.storage());
    point_parameters(u, u.compute);
  }
  whole_ = false;
  for (size_t w = 0; w < wrapped_.size(); ++w) release(w);
}

}  // namespace wick::distributed
