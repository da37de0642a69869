#include <wick/optim/optimizer.h>

#include <wick/autograd/grad_mode.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/optim_step.h>

#include <tuple>
#include <vector>

namespace wick {

namespace {
void check_parameter(const char* who, const std::string& pname, const Variable& p) {
  WICK_CHECK(p.defined(), who, ": parameter '", pname, "' is undefined");
  WICK_CHECK(p.data().is_floating_point(), who, ": parameter '", pname, "' is ", dtype_name(p.dtype()),
             ", not floating point");
}
}  // namespace

Optimizer::Optimizer(std::vector<NamedParameters> groups, const char* name) : name_(name), groups_(std::move(groups)) {
  WICK_CHECK(!groups_.empty(), name_, ": no parameter groups");
  std::map<std::string, bool> seen;
  for (const auto& g : groups_) {
    for (const auto& [pname, p] : g) {
      check_parameter(name_, pname, p);
      // State is keyed by name, so two parameters may not share one.
      WICK_CHECK(!seen[pname], name_, ": parameter name '", pname, "' appears twice");
      seen[pname] = true;
    }
  }
}

void Optimizer::add_param_group(ParamGroup group) {
  const std::string who = std::string(name_) + ".add_param_group";
  for (size_t i = 0; i < group.params.size(); ++i) {
    const auto& [pname, p] = group.params[i];
    check_parameter(who.c_str(), pname, p);
    for (size_t j = 0; j < i; ++j)
      WICK_CHECK(group.params[j].first != pname && !group.params[j].second.is_same(p), who, ": parameter '", pname,
                 "' appears twice in the new group");
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (const auto& [other_name, other] : groups_[gi]) {
        WICK_CHECK(other_name != pname, who, ": parameter '", pname, "' is already in group ", gi);
        WICK_CHECK(!other.is_same(p), who, ": parameter '", pname, "' is already in group ", gi, " as '", other_name,
                   "'");
      }
  }
  add_group_options(group.options);  // checks, then appends: the last thing that can throw
  groups_.push_back(std::move(group.params));
}

bool Optimizer::uses_master(const Tensor& p) const {
  return master_weights_ != MasterWeights::Off && (p.dtype() == DType::Float16 || p.dtype() == DType::BFloat16);
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    std::vector<Slot> slots;
    std::vector<std::pair<Tensor, Tensor>> from_master;  // (16-bit parameter, its float32 master)
    for (auto& [pname, p] : groups_[gi]) {
      Variable g = p.grad();
      if (!g.defined()) continue;
      State& state = state_[pname];
      if (placement_ && !state.place) set_place(pname, state);
      if (!uses_master(p.data())) {
        slots.push_back({p.data(), g.data(), &state});
        continue;
      }
      Tensor& master = state["master"];
      if (!master.defined())
        master = optim_detail::placed_copy(state, "master", p.data(), Options(DType::Float32, p.device()));
      slots.push_back({master, g.data().to(DType::Float32), &state});
      from_master.emplace_back(p.data(), master);
    }
    if (slots.empty()) continue;
    step_group(gi, slots);
    for (auto& [param, master] : from_master) {  // the one rounding
      if (master_weights_ == MasterWeights::Stochastic && param.dtype() == DType::BFloat16)
        stochastic_round_(param, master);
      else param.copy_(master);
    }
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& g : groups_)
    for (auto& [pname, p] : g)
      if (p.grad().defined()) p.zero_grad(set_to_none);
}

const NamedParameters& Optimizer::params(size_t group) const {
  WICK_CHECK(group < groups_.size(), name_, ": group ", group, " out of range (", groups_.size(), " groups)");
  return groups_[group];
}

HyperParameter Optimizer::field(size_t group, const std::string& key) {
  WICK_CHECK(group < groups_.size(), name_, ": group ", group, " out of range (", groups_.size(), " groups)");
  for (const HyperParameter& f : fields(group))
    if (key == f.name) return f;
  detail::throw_error(name_, ": group ", group, " has no hyper-parameter '", key, "'");
}

double Optimizer::lr(size_t group) const { return *const_cast<Optimizer*>(this)->field(group, "lr").number; }

void Optimizer::set_lr(size_t group, double lr) { *field(group, "lr").number = lr; }

bool Optimizer::has_hyper_parameter(size_t group, const std::string& name) const {
  WICK_CHECK(group < groups_.size(), name_, ": group ", group, " out of range (", groups_.size(), " groups)");
  for (const HyperParameter& f : const_cast<Optimizer*>(this)->fields(group))
    if (name == f.name) return true;
  return false;
}

double Optimizer::hyper_parameter(size_t group, const std::string& name) const {
  HyperParameter f = const_cast<Optimizer*>(this)->field(group, name);
  return f.number ? *f.number : (*f.flag ? 1.0 : 0.0);
}

void Optimizer::set_hyper_parameter(size_t group, const std::string& name, double value) {
  HyperParameter f = field(group, name);
  if (f.number) *f.number = value;
  else *f.flag = value != 0;
}

Tensor Optimizer::state_buffer(const std::string& param, const std::string& buffer) const {
  auto it = state_.find(param);
  if (it == state_.end()) return Tensor();
  auto b = it->second.find(buffer);
  return b == it->second.end() ? Tensor() : b->second;
}

TensorMap Optimizer::state_dict() const {
  auto* self = const_cast<Optimizer*>(this);
  TensorMap out;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (const HyperParameter& f : self->fields(gi)) {
      double v = f.number ? *f.number : (*f.flag ? 1.0 : 0.0);
      out["group." + std::to_string(gi) + "." + f.name] = scalar_tensor(v, DType::Float64);
    }
  }
  for (const auto& [pname, buffers] : state_)
    for (const auto& [bname, t] : buffers) out["state." + pname + "." + bname] = t.clone();
  return out;
}

void Optimizer::load_state_dict(const TensorMap& state) {
  // Validate everything before changing anything, so a bad map leaves the optimizer as it was.
  std::map<std::string, std::pair<size_t, const Variable*>> by_name;
  for (size_t gi = 0; gi < groups_.size(); ++gi)
    for (const auto& [pname, p] : groups_[gi]) by_name[pname] = {gi, &p};
  std::vector<std::pair<HyperParameter, double>> hyper;
  std::map<std::string, State> new_state;
  // The buffers, converted; put where the placement says only once everything is checked
  // (the placement may hand out the very tensors the current state holds).
  std::vector<std::tuple<std::string, std::string, Tensor>> buffers;
  for (const auto& [key, t] : state) {
    WICK_CHECK(t.defined(), name_, ".load_state_dict: '", key, "' is undefined");
    if (key.rfind("group.", 0) == 0) {
      size_t dot = key.find('.', 6);
      WICK_CHECK(dot != std::string::npos && dot > 6, name_, ".load_state_dict: malformed key '", key, "'");
      size_t gi = 0;
      for (size_t i = 6; i < dot; ++i) {
        WICK_CHECK(key[i] >= '0' && key[i] <= '9', name_, ".load_state_dict: malformed key '", key, "'");
        gi = gi * 10 + static_cast<size_t>(key[i] - '0');
      }
      WICK_CHECK(gi < groups_.size(), name_, ".load_state_dict: '", key, "' names group ", gi, " but there are ",
                 groups_.size(), " groups");
      WICK_CHECK(t.numel() == 1, name_, ".load_state_dict: '", key, "' has shape ", shape_str(t.shape()),
                 ", expected one element");
      hyper.emplace_back(field(gi, key.substr(dot + 1)), t.item<double>());
    } else if (key.rfind("state.", 0) == 0) {
      // Parameter names may contain dots; the buffer name is the last component.
      size_t dot = key.rfind('.');
      std::string pname = key.substr(6, dot > 6 ? dot - 6 : 0), bname = key.substr(dot + 1);
      auto it = by_name.find(pname);
      WICK_CHECK(dot > 6 && it != by_name.end(), name_, ".load_state_dict: '", key,
                 "' names no parameter of this optimizer");
      const Tensor& p = it->second.second->data();
      std::vector<std::string> known = buffer_names(it->second.first);
      // Buffers of a parameter with a master copy are float32, like the copy.
      const Options buffer_options = uses_master(p) ? Options(DType::Float32, p.device()) : p.options();
      if (uses_master(p)) known.push_back("master");
      bool ok = bname == "step";
      for (const auto& b : known) ok = ok || b == bname;
      WICK_CHECK(ok, name_, ".load_state_dict: '", key, "': unknown buffer '", bname, "'");
      // Per-parameter counters are 0-d float64 on the CPU (the step; NAdam's mu product).
      if (bname == "step" || bname == "mu_product") {
        WICK_CHECK(t.numel() == 1, name_, ".load_state_dict: '", key, "' has shape ", shape_str(t.shape()),
                   ", expected one element");
        new_state[pname][bname] = t.to(DType::Float64).cpu().reshape({}).clone();
      } else {
        WICK_CHECK(t.shape() == p.shape(), name_, ".load_state_dict: '", key, "' has shape ", shape_str(t.shape()),
                   " but parameter '", pname, "' has shape ", shape_str(p.shape()));
        buffers.emplace_back(pname, bname, t.to(buffer_options));
      }
    } else {
      detail::throw_error(name_, ".load_state_dict: unexpected key '", key, "'");
    }
  }
  for (auto& [f, v] : hyper) {
    if (f.number) *f.number = v;
    else *f.flag = v != 0;
  }
  for (auto& [pname, bname, t] : buffers) {
    State& state = new_state[pname];
    if (!state.place) set_place(pname, state);
    state[bname] = optim_detail::placed_copy(state, bname, t, t.options());
  }
  for (auto& [pname, state] : new_state)
    if (!state.place) set_place(pname, state);
  state_ = std::move(new_state);
}

void Optimizer::set_buffer_placement(BufferPlacement placement) {
  placement_ = std::move(placement);
  for (auto& [pname, state] : state_) set_place(pname, state);
}

void Optimizer::set_place(const std::string& pname, State& state) const {
  if (!placement_) return;
  state.place = [placement = placement_, pname](const std::string& buffer, const Options& options) {
    return placement(pname, buffer, options);
  };
}

namespace optim_detail {
Tensor signed_grad(const Tensor& grad, bool maximize) { return maximize ? neg(grad) : grad; }

double advance_step(std::map<std::string, Tensor>& state) {
  auto it = state.find("step");
  if (it == state.end()) it = state.emplace("step", scalar_tensor(0.0, DType::Float64)).first;
  it->second.add_(1.0);
  return it->second.item<double>();
}

namespace {
// What the state's placement gives for a new buffer (undefined: none), checked: the fused
// steps write it as a dense buffer of the parameter's shape.
Tensor placement_for(const ParamState& state, const std::string& name, const Shape& shape, const Options& options) {
  Tensor placed = state.place ? state.place(name, options) : Tensor();
  WICK_CHECK(!placed.defined() || (placed.shape() == shape && placed.dtype() == options.dtype &&
                                   placed.device() == options.device && placed.is_contiguous()),
             "optimizer: the buffer placement gave '", name, "' ", placed.defined() ? shape_str(placed.shape()) : "",
             " ", placed.defined() ? dtype_name(placed.dtype()) : "", " on ",
             placed.defined() ? placed.device().str() : "",
             placed.defined() && !placed.is_contiguous() ? " (strided)" : "", ", expected a contiguous ",
             shape_str(shape), " ", dtype_name(options.dtype), " on ", options.device.str());
  return placed;
}
}  // namespace

Tensor& buffer(ParamState& state, const char* name, const Tensor& param, double fill) {
  auto it = state.find(name);
  if (it != state.end()) return it->second;
  Tensor placed = placement_for(state, name, param.shape(), param.options());
  if (placed.defined()) placed.fill_(fill);
  else placed = full_like(param, fill);
  return state.emplace(name, placed).first->second;
}

Tensor placed_copy(const ParamState& state, const std::string& name, const Tensor& value, const Options& options) {
  Tensor placed = placement_for(state, name, value.shape(), options);
  if (!placed.defined()) return value.to(options).clone();
  placed.copy_(value);
  return placed;
}
}  // namespace optim_detail

namespace optim_detail {
void set_field(const std::vector<HyperParameter>& fields, const std::string& key, double value, const char* optimizer) {
  std::string known;
  for (const HyperParameter& f : fields) {
    if (key == f.name) {
      if (f.number) *f.number = value;
      else *f.flag = value != 0;
      return;
    }
    known += (known.empty() ? "" : ", ") + std::string(f.name);
  }
  wick::detail::throw_error(optimizer, ": a parameter group sets '", key,
                            "', which is not one of its hyper-parameters (", known, ")");
}
}  // namespace optim_detail

}  // namespace wick
