#pragma once
// Optimizer: updates named parameters in place from their gradients, in parameter groups
// that each carry their own hyper-parameters (PyTorch's torch.optim design).
//
//   SGD opt({{params, SGDOptions{.lr = 0.1, .momentum = 0.9}}});
//   loss.backward(); opt.step(); opt.zero_grad();
//
// State (momentum buffers, moments, step counts) lives per parameter name and is saved as a
// flat name -> Tensor map that fits a safetensors file:
//   "state.<param name>.<buffer>"  the buffer, in the parameter's dtype and device
//   "group.<i>.<hyper-parameter>"  0-d float64 (booleans as 0 / 1)
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <wick/autograd/variable.h>
#include <wick/tensor/optim_step.h>
#include <wick/tensor/safetensors.h>

namespace wick {

using NamedParameters = std::vector<std::pair<std::string, Variable>>;

// PyTorch's parameter-group dict: the group's parameters and the hyper-parameters it sets
// by name (flags as 0 / 1); every other one is the optimizer's default, as in
//   AdamW opt({{head, {{"lr", 1e-3}}}, {body, {}}}, AdamOptions{.lr = 1e-4, .weight_decay = 1e-2});
// where both groups get weight_decay 1e-2 (a group written as an options struct gets that
// struct's own defaults instead).
struct ParamGroup {
  NamedParameters params;
  std::map<std::string, double> options;
};

// One hyper-parameter of a group, by name, pointing into an optimizer's options struct
// (exactly one of number / flag is set). Every options struct lists its own with fields().
struct HyperParameter {
  const char* name;
  double* number = nullptr;
  bool* flag = nullptr;
};

// Pure 16-bit parameters (float16 / bfloat16 weights, no float32 copy in the model): with
// master weights, the optimizer keeps a float32 copy of each such parameter in its state
// ("state.<name>.master", created from the parameter at its first step), widens the
// gradient, runs the update and the optimizer's buffers in float32 on the copy, and writes
// the parameter from it with one rounding. float32 / float64 parameters are stepped directly
// either way. Off (the default): a 16-bit parameter is updated in its own dtype (the
// arithmetic is float32 inside the fused kernels, but updates below half a 16-bit ulp are
// lost each step). Nearest rounds the write-back to nearest; Stochastic rounds bfloat16
// parameters stochastically (wick/tensor/optim_step.h stochastic_round_, from the default
// generator: an update below half an ulp moves the parameter with the probability that
// makes it right on average) and float16 ones to nearest.
enum class MasterWeights : uint8_t { Off, Nearest, Stochastic };

// Where the optimizer makes a parameter's state buffers (moments, momentum, master copies),
// asked with the parameter's name, the buffer's name and its dtype and device: a tensor of the
// parameter's shape to hold the buffer (its contents are overwritten), or an undefined tensor
// for a fresh allocation, the default. ShardedSync places the buffers of all its slices in one
// allocation per buffer, so the allocator rounds each buffer's size once, not once per slice.
using BufferPlacement =
    std::function<Tensor(const std::string& param, const std::string& buffer, const Options& options)>;

namespace optim_detail {
// A parameter's state buffers by name, and where a new one is made (empty: a fresh tensor).
struct ParamState : std::map<std::string, Tensor> {
  std::function<Tensor(const std::string& buffer, const Options& options)> place;
};
}  // namespace optim_detail

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (others are skipped), without
  // recording a graph.
  void step();
  // Drops every gradient (set_to_none) or zeroes it in place.
  void zero_grad(bool set_to_none = true);

  size_t num_groups() const { return groups_.size(); }
  const NamedParameters& params(size_t group) const;
  // The learning rate of a group (schedulers read and write it).
  double lr(size_t group) const;
  void set_lr(size_t group, double lr);
  // Any hyper-parameter of a group by its options-struct name ("momentum", "beta1"...), for
  // schedulers that cycle more than the lr. Flags read as 0 / 1; hyper_parameter and
  // set_hyper_parameter throw when the group has no such name.
  bool has_hyper_parameter(size_t group, const std::string& name) const;
  double hyper_parameter(size_t group, const std::string& name) const;
  void set_hyper_parameter(size_t group, const std::string& name, double value);
  // The optimizer's type ("SGD", "AdamW"), for messages.
  const char* name() const { return name_; }

  // torch.optim.Optimizer.add_param_group: appends a group whose hyper-parameters are the
  // optimizer's defaults (what it was constructed with, see OptimizerWith::defaults) with
  // the group's own entries set by name. An empty parameter list is allowed, as in torch.
  // Refuses, changing nothing, a parameter already in a group (the same variable, or the
  // same name, since state is kept by name), an unknown hyper-parameter name and values the
  // optimizer's constructor would refuse. Schedulers made before do not drive the new group
  // (see lr_scheduler.h).
  void add_param_group(ParamGroup group);

  // Before a CUDA graph that holds this optimizer's step is replayed (the Trainer's
  // cuda_graphs): brings what the captured step reads on the device up to date with the
  // host's settings (capturable AdamW / Adam: the learning rates). Nothing by default.
  virtual void before_graph_replay() {}

  void set_master_weights(MasterWeights m) { master_weights_ = m; }
  // Buffers made from now on (by a step or load_state_dict) go where `placement` says.
  void set_buffer_placement(BufferPlacement placement);
  MasterWeights master_weights() const { return master_weights_; }

  // A parameter's state buffer itself ("exp_avg", "step"...; torch's optimizer.state[p]),
  // undefined when it has none (yet): writing it changes the optimizer's state.
  Tensor state_buffer(const std::string& param, const std::string& buffer) const;

  TensorMap state_dict() const;
  // Restores state and hyper-parameters. Every key must name a known group field or a
  // parameter of this optimizer with a buffer of the right shape; throws otherwise.
  void load_state_dict(const TensorMap& state);

 protected:
  using Fields = std::vector<HyperParameter>;
  using State = optim_detail::ParamState;

  // A parameter to update: its value (aliasing the Variable's data), its gradient and its
  // buffers (empty at its first step).
  struct Slot {
    Tensor param;
    Tensor grad;
    State* state;
  };

  Optimizer(std::vector<NamedParameters> groups, const char* name);
  // A group's hyper-parameters; "lr" must be among them.
  virtual Fields fields(size_t group) = 0;
  // Updates in place the parameters of `group` that have a gradient.
  virtual void step_group(size_t group, const std::vector<Slot>& slots) = 0;
  // The buffers a parameter has once it has been stepped (for load_state_dict's checks).
  virtual std::vector<std::string> buffer_names(size_t group) const = 0;
  // add_param_group's part in the options: appends the defaults with `options` set by name,
  // after checking them; throws with nothing appended otherwise.
  virtual void add_group_options(const std::map<std::string, double>& options) = 0;

  const char* name_;

 private:
  HyperParameter field(size_t group, const std::string& key);
  std::vector<NamedParameters> groups_;
  // Whether parameter p is stepped through a float32 master copy.
  bool uses_master(const Tensor& p) const;
  // Points a parameter's state at the placement (a no-op without one).
  void set_place(const std::string& pname, State& state) const;

  std::map<std::string, State> state_;  // by parameter name
  MasterWeights master_weights_ = MasterWeights::Off;
  BufferPlacement placement_;
};

namespace optim_detail {
// Sets the field `key` of a fields() list; throws naming `optimizer` when it has none.
void set_field(const std::vector<HyperParameter>& fields, const std::string& key, double value, const char* optimizer);
}  // namespace optim_detail

// An optimizer whose groups each hold an `Options` struct (with a fields() list).
template <class Options>
class OptimizerWith : public Optimizer {
 public:
  using Group = std::pair<NamedParameters, Options>;
  Options& options(size_t group) { return options_.at(group); }
  const Options& options(size_t group) const { return options_.at(group); }
  // torch's optimizer.defaults, what add_param_group starts from: the options passed to the
  // one-group or the ParamGroup constructor, or the optimizer's own defaults (Options{}, and
  // AdamW's weight_decay 1e-2) when it was made from a list of options structs.
  const Options& defaults() const { return defaults_; }

  // Each group's options: `defaults` with the group's own entries set by name; an unknown
  // name throws, naming the optimizer and the names it has.
  static std::vector<Group> with_defaults(std::vector<ParamGroup> groups, Options defaults, const char* name) {
    std::vector<Group> out;
    for (auto& g : groups) {
      Options o = defaults;
      for (const auto& [key, value] : g.options) optim_detail::set_field(o.fields(), key, value, name);
      out.emplace_back(std::move(g.params), o);
    }
    return out;
  }

 protected:
  OptimizerWith(std::vector<Group> groups, const char* name) : Optimizer(params_of(groups), name) {
    for (auto& g : groups) options_.push_back(g.second);
  }
  Fields fields(size_t group) override { return options_.at(group).fields(); }
  // Throws naming the optimizer when `o` holds a value it refuses (a negative lr...); the
  // constructors check every group with it, add_param_group the new one.
  virtual void check_options(const Options& o) const = 0;
  void check_all_options() const {
    for (const Options& o : options_) check_options(o);
  }
  void add_group_options(const std::map<std::string, double>& options) override {
    Options o = defaults_;
    for (const auto& [key, value] : options) optim_detail::set_field(o.fields(), key, value, name_);
    check_options(o);
    options_.push_back(o);
  }
  std::vector<Options> options_;
  Options defaults_{};

 private:
  static std::vector<NamedParameters> params_of(const std::vector<Group>& groups) {
    std::vector<NamedParameters> out;
    for (const auto& g : groups) out.push_back(g.first);
    return out;
  }
};

namespace optim_detail {
// The gradient a step uses: `grad`, or its negation for maximize (torch negates the gradient
// first, before weight decay, so maximizing f is minimizing -f exactly).
Tensor signed_grad(const Tensor& grad, bool maximize);
// step += 1 in a 0-d float64 "step" buffer (created at 0); returns the new count.
double advance_step(std::map<std::string, Tensor>& state);
// The buffer `name`, created filled with `fill` (zeros), like `param`, where the state's
// placement says, when missing.
Tensor& buffer(ParamState& state, const char* name, const Tensor& param, double fill = 0.0);
// A new buffer for `state` holding `value` (converted to `options`), where the placement says.
Tensor placed_copy(const ParamState& state, const std::string& name, const Tensor& value, const Options& options);

// The tensor lists of one fused multi-tensor step (wick/tensor/optim_step.h): parameters on
// one device that share `key` (a step count, a first-step flag).
template <class Hyper, class Key>
struct Batch {
  Key key;
  Device device;
  std::vector<Tensor> params, grads;
  FusedState<Hyper> state;
};
// Appends `param` to the batch for (key, its device), appended when new: its gradient (negated
// for maximize) and the state buffers that steps with `h` use, named as Hyper's kState in
// `state` and created as zeros like param when missing (optim_detail::buffer).
template <class Hyper, class Key>
void add_to_batch(std::vector<Batch<Hyper, Key>>& batches, const Key& key, const Hyper& h, const Tensor& param,
                  const Tensor& grad, bool maximize, ParamState& state) {
  Batch<Hyper, Key>* b = nullptr;
  for (auto& candidate : batches)
    if (candidate.key == key && candidate.device == param.device()) b = &candidate;
  if (!b) b = &batches.emplace_back(Batch<Hyper, Key>{key, param.device(), {}, {}, {}});
  b->params.push_back(param);
  b->grads.push_back(signed_grad(grad, maximize));
  for (size_t k = 0; k < kFusedStates<Hyper>; ++k)
    if (h.uses_state(k)) b->state[k].push_back(buffer(state, Hyper::kState[k], param));
}
}  // namespace optim_detail

}  // namespace wick
