#include <wick/nn/module.h>

#include <set>
#include <sstream>

#include <wick/autograd/grad_mode.h>

namespace wick {

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::ostringstream os;
  for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << "'" << names[i] << "'";
  return os.str();
}

}  // namespace

// Calls f(dotted prefix, module) for this module and every descendant, parents first.
template <class F>
void Module::visit(const std::string& prefix, F&& f) const {
  f(prefix, *this);
  for (const auto& [name, child] : children_) child->visit(prefix + name + ".", f);
}

void Module::check_new_name(const std::string& name) const {
  WICK_CHECK(!name.empty(), type_name(), ": an entry name must not be empty");
  WICK_CHECK(name.find('.') == std::string::npos, type_name(), ": entry name '", name,
             "' must not contain '.' (dots separate the levels of the tree)");
  auto taken = [&](const auto& entries) {
    for (const auto& e : entries)
      if (e.first == name) return true;
    return false;
  };
  WICK_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), type_name(), ": the name '", name,
             "' is already registered");
}

Variable Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name);
  WICK_CHECK(value.defined(), type_name(), ": register_parameter('", name, "') got an undefined tensor");
  WICK_CHECK(!requires_grad || value.is_floating_point(), type_name(), ": parameter '", name, "' of dtype ",
             dtype_name(value.dtype()), " cannot require grad (only floating tensors can)");
  Variable p(std::move(value), requires_grad);
  parameters_.emplace_back(name, p);
  return p;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  WICK_CHECK(value.defined(), type_name(), ": register_buffer('", name, "') got an undefined tensor");
  buffers_.emplace_back(name, std::move(value));
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name);
  WICK_CHECK(child != nullptr, type_name(), ": register_module('", name, "') got a null module");
  // A module inside its own subtree would make every walk endless.
  bool cycle = false;
  child->visit("", [&](const std::string&, const Module& m) { cycle = cycle || &m == this; });
  WICK_CHECK(!cycle, type_name(), ": register_module('", name, "') would make the module its own descendant");
  children_.emplace_back(name, std::move(child));
}

Variable Module::parameter(const std::string& name) const {
  for (const auto& [n, p] : parameters_)
    if (n == name) return p;
  detail::throw_error(type_name(), ": no parameter '", name, "'");
}

Variable Module::tie_parameter(const std::string& name, const Variable& shared) {
  for (auto& [n, p] : parameters_) {
    if (n != name) continue;
    WICK_CHECK(shared.defined(), type_name(), ": tying '", name, "' to an undefined Variable");
    WICK_CHECK(shared.shape() == p.shape() && shared.dtype() == p.dtype() && shared.device() == p.device(), type_name(),
               ": cannot tie '", name, "' (", shape_str(p.shape()), " ", dtype_name(p.dtype()), " on ", p.device(),
               ") to a parameter of ", shape_str(shared.shape()), " ", dtype_name(shared.dtype()), " on ",
               shared.device());
    p = shared;
    return p;
  }
  detail::throw_error(type_name(), ": no parameter '", name, "' to tie");
}

const Tensor& Module::buffer(const std::string& name) const {
  for (const auto& [n, b] : buffers_)
    if (n == name) return b;
  detail::throw_error(type_name(), ": no buffer '", name, "'");
}

Tensor& Module::buffer(const std::string& name) {
  return const_cast<Tensor&>(static_cast<const Module&>(*this).buffer(name));
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Variable>> out;
  std::set<const Variable::Impl*> seen;
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& [name, p] : m.parameters_)
      if (seen.insert(p.impl().get()).second) out.emplace_back(prefix + name, p);
  };
  if (recurse) visit("", add);
  else add("", *this);
  return out;
}

std::vector<Variable> Module::parameters(bool recurse) const {
  std::vector<Variable> out;
  for (auto& [name, p] : named_parameters(recurse)) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const Tensor*> seen;
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& [name, b] : m.buffers_)
      if (seen.insert(&b).second) out.emplace_back(prefix + name, b);
  };
  if (recurse) visit("", add);
  else add("", *this);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, b] : named_buffers(recurse)) out.push_back(b);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, c] : children_) out.push_back(c);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, c] : children_) c->train(on);
}

std::vector<Tensor*> Module::buffer_slots() {
  std::vector<Tensor*> slots;
  visit("", [&](const std::string&, const Module& m) {
    for (auto& [name, b] : const_cast<Module&>(m).buffers_) slots.push_back(&b);
  });
  return slots;
}

template <class Convert>
void Module::convert_all(Convert convert) {
  for (auto& [name, p] : named_parameters()) {
    p.set_data(convert(p.data()));
    if (Variable g = p.grad(); g.defined()) p.set_grad(Variable(convert(g.data())));
  }
  for (Tensor* b : buffer_slots()) *b = convert(*b);
}

Module& Module::to(Device device) {
  convert_all([&](const Tensor& t) { return t.to(device); });
  return *this;
}

Module& Module::to(DType dtype) {
  WICK_CHECK(is_floating(dtype), type_name(), ".to: parameters can only be converted to a floating dtype, not ",
             dtype_name(dtype));
  convert_all([&](const Tensor& t) { return t.is_floating_point() ? t.to(dtype) : t; });
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (auto& [name, p] : named_parameters()) p.zero_grad(set_to_none);
}

StateDict Module::state_dict() const {
  StateDict dict;
  visit("", [&](const std::string& prefix, const Module& m) {
    for (const auto& [name, p] : m.parameters_) dict.insert(prefix + name, p.data());
    for (const auto& [name, b] : m.buffers_) dict.insert(prefix + name, b);
  });
  return dict;
}

Module::LoadResult Module::load_state_dict(const StateDict& dict, bool strict) {
  // Every destination by name: parameters write into their Variable's value, buffers into
  // the stored tensor; both in place, so aliases (optimizers, layers) see the new values.
  std::vector<std::pair<std::string, Tensor*>> targets;
  visit("", [&](const std::string& prefix, const Module& m) {
    auto& mm = const_cast<Module&>(m);
    for (auto& [name, p] : mm.parameters_) targets.emplace_back(prefix + name, &p.data());
    for (auto& [name, b] : mm.buffers_) targets.emplace_back(prefix + name, &b);
  });

  LoadResult result;
  std::set<std::string> expected;
  for (const auto& [name, t] : targets) {
    expected.insert(name);
    if (!dict.contains(name)) result.missing_keys.push_back(name);
  }
  for (const auto& [name, t] : dict)
    if (!expected.count(name)) result.unexpected_keys.push_back(name);
  if (strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty())) {
    std::ostringstream os;
    os << type_name() << ".load_state_dict: the keys do not match";
    if (!result.missing_keys.empty()) os << "; missing keys: " << join_names(result.missing_keys);
    if (!result.unexpected_keys.empty()) os << "; unexpected keys: " << join_names(result.unexpected_keys);
    throw Error(os.str());
  }

  for (const auto& [name, target] : targets) {
    if (!dict.contains(name)) continue;
    const Tensor& src = dict.at(name);
    WICK_CHECK(src.defined(), type_name(), ".load_state_dict: '", name, "' is an undefined tensor");
    WICK_CHECK(src.shape() == target->shape(), type_name(), ".load_state_dict: shape mismatch for '", name,
               "': the module has ", shape_str(target->shape()), ", the state dict ", shape_str(src.shape()));
  }
  // Another dtype is cast into the module's (as PyTorch's copy_ does): a float32 state dict
  // loads into a float64 module.
  NoGradGuard no_grad;
  for (auto& [name, target] : targets)
    if (dict.contains(name)) target->copy_(dict.at(name));
  return result;
}

}  // namespace wick

namespace wick {

Module::ForwardHookId Module::register_forward_hooks(ForwardPreHook pre, ForwardHook post) {
  forward_hooks_.push_back({next_forward_hook_, std::move(pre), std::move(post)});
  return next_forward_hook_++;
}

void Module::remove_forward_hooks(ForwardHookId id) {
  std::erase_if(forward_hooks_, [id](const ForwardHooks& h) { return h.id == id; });
}

void Module::run_forward_pre_hooks() {
  // A copy: a hook may remove hooks.
  const std::vector<ForwardHooks> hooks = forward_hooks_;
  for (const ForwardHooks& h : hooks)
    if (h.pre) h.pre(*this);
}

void Module::run_forward_hooks(const std::vector<Variable>& outputs) {
  const std::vector<ForwardHooks> hooks = forward_hooks_;
  for (const ForwardHooks& h : hooks)
    if (h.post) h.post(*this, outputs);
}

}  // namespace wick
