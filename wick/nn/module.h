#pragma once
// Module: a tree of named parameters (Variables that require grad), buffers (Tensors such as
// BatchNorm's running statistics) and child modules, as in PyTorch's nn.Module.
//
//   class Block : public UnaryModule {
//    public:
//     Block() {
//       fc = register_module("fc", std::make_shared<Linear>(4, 8));
//       scale = register_parameter("scale", ones({8}));
//     }
//     Variable forward(const Variable& x) override { return relu(fc->forward(x)) * scale; }
//     std::shared_ptr<Linear> fc;
//     Variable scale;
//   };
//   // named_parameters(): "fc.weight", "fc.bias", "scale"
//
// Each layer has its own typed forward; modules that map one Variable to one Variable
// implement UnaryModule so that Sequential can chain them.
//
// Parameters keep their identity for the module's life: to(device) and to(dtype) replace
// the value inside the same Variable, so an optimizer built over parameters() stays valid.
// Buffers live in the module (a layer reads them through buffer(name) or the reference
// register_buffer returns, which to() updates in place).
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include <wick/autograd/variable.h>
#include <wick/nn/state_dict.h>

namespace wick {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The layer's type ("Linear"), used in messages.
  virtual const char* type_name() const { return "Module"; }

  // --- the tree -----------------------------------------------------------------------
  // Names are unique within a module (across parameters, buffers and children), non-empty
  // and without '.'. A parameter of a non-floating dtype cannot require grad.
  Variable register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // This module's own entries by name (throw when absent).
  Variable parameter(const std::string& name) const;
  Tensor& buffer(const std::string& name);
  const Tensor& buffer(const std::string& name) const;

  // Dotted names ("block1.conv.weight") in registration order, own entries before the
  // children's. A parameter reachable twice (a shared module) is listed once, under its
  // first name.
  std::vector<std::pair<std::string, Variable>> named_parameters(bool recurse = true) const;
  std::vector<Variable> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;

  // --- mode, placement, gradients -------------------------------------------------------
  // Sets training mode here and in every descendant.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter (with its gradient) and buffer; to(dtype) converts only the
  // floating ones (integer buffers such as step counters keep their dtype), like PyTorch.
  Module& to(Device device);
  Module& to(DType dtype);

  void zero_grad(bool set_to_none = true);

  // --- state ----------------------------------------------------------------------------
  // Parameters and buffers by dotted name, each module's own first. The tensors alias the
  // module's (clone them for a snapshot).
  // Virtual so that a module spread over several processes (PipelineModel) can gather it.
  virtual StateDict state_dict() const;

  struct LoadResult {
    std::vector<std::string> missing_keys;     // expected by the module, absent from the dict
    std::vector<std::string> unexpected_keys;  // in the dict, unknown to the module
  };
  // Copies the dict's values into the parameters and buffers in place (devices may
  // differ), cast to the module's dtypes (a float32 dict loads into a float64 module, as in
  // PyTorch). Shapes must match exactly; with `strict` the names must match too.
  // Everything is checked before anything is written, so a failed load changes nothing.
  virtual LoadResult load_state_dict(const StateDict& dict, bool strict = true);

  // --- forward hooks ----------------------------------------------------------------------
  // PyTorch's forward pre-hooks and forward hooks, which nn.Module.__call__ runs: call()
  // runs them around a forward. Fully sharded data parallelism gathers a unit's parameters
  // before its forward and releases them after (wick/distributed/data_parallel/
  // sharded_sync.h). Layers have typed forwards, so a forward called directly runs none:
  // call a hooked module through call() (UnaryModule's operator() does).
  using ForwardPreHook = std::function<void(Module&)>;
  using ForwardHook = std::function<void(Module&, const std::vector<Variable>& outputs)>;
  using ForwardHookId = uint64_t;
  ForwardHookId register_forward_hooks(ForwardPreHook pre, ForwardHook post);
  void remove_forward_hooks(ForwardHookId id);
  // forward() (returning a Variable or a std::vector<Variable>) between the hooks.
  template <class F>
  auto call(F&& forward) {
    if (forward_hooks_.empty()) return forward();  // most modules, most of the time: no copies
    run_forward_pre_hooks();
    auto out = forward();
    if constexpr (std::is_same_v<decltype(out), Variable>)
      run_forward_hooks(std::vector<Variable>{out});  // spelled out: nvcc's front end refuses {out} here
    else run_forward_hooks(out);
    return out;
  }

 protected:
  // Weight tying (torch's `head.weight = embedding.weight`): this module's parameter `name`
  // becomes `shared`, a parameter of another module, of the same shape, dtype and device;
  // returns it, for the layer to keep in its member. Both names stay in state_dict() (as in
  // torch) and named_parameters() lists the one Variable once, so an optimizer updates it
  // once and its gradient sums both uses. Layers offer it as tie_weight().
  Variable tie_parameter(const std::string& name, const Variable& shared);

 private:
  void check_new_name(const std::string& name) const;
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  template <class F>
  void visit(const std::string& prefix, F&& f) const;
  // Every buffer of the tree, for writing in place.
  std::vector<Tensor*> buffer_slots();
  // Replaces each distinct parameter's value (and gradient) and each buffer by convert(value).
  template <class Convert>
  void convert_all(Convert convert);

  void run_forward_pre_hooks();
  void run_forward_hooks(const std::vector<Variable>& outputs);

  bool training_ = true;
  struct ForwardHooks {
    ForwardHookId id;
    ForwardPreHook pre;
    ForwardHook post;
  };
  std::vector<ForwardHooks> forward_hooks_;
  ForwardHookId next_forward_hook_ = 0;
  std::vector<std::pair<std::string, Variable>> parameters_;
  std::deque<std::pair<std::string, Tensor>> buffers_;  // a deque: references stay valid
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// A module mapping one Variable to one Variable (what Sequential chains).
class UnaryModule : public Module {
 public:
  virtual Variable forward(const Variable& x) = 0;
  Variable operator()(const Variable& x) {
    return call([&] { return forward(x); });
  }
};

}  // namespace wick
