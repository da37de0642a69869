#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/variable.h>
#include <wick/tensor/factories.h>

#include <algorithm>
#include <atomic>
#include <vector>

namespace wick {

namespace {
std::atomic<uint64_t> next_hook_id{1};
std::atomic<uint64_t> next_sequence_nr{0};

Variable::Impl& checked(const std::shared_ptr<Variable::Impl>& impl, const char* what) {
  WICK_CHECK(impl != nullptr, "Variable::", what, ": the variable is undefined");
  return *impl;
}
}  // namespace

uint64_t next_node_sequence_nr() { return next_sequence_nr.load(std::memory_order_relaxed); }

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

Node::~Node() {
  for (Edge& e : next_edges_) release_node(e.fn);
}

Variable::Impl::~Impl() { release_node(grad_fn); }

void release_node(std::shared_ptr<Node>& node) noexcept {
  // Not the last reference: dropping it cannot free anything.
  if (!node || node.use_count() > 1) {
    node.reset();
    return;
  }
  struct Pending {
    std::vector<std::shared_ptr<Node>> nodes;
    bool draining = false;
  };
  thread_local Pending pending;
  pending.nodes.push_back(std::move(node));
  if (pending.draining) return;  // the loop below, further up this thread's stack, frees it
  pending.draining = true;
  while (!pending.nodes.empty()) {
    std::shared_ptr<Node> last = std::move(pending.nodes.back());
    pending.nodes.pop_back();
    last.reset();  // may queue the nodes it held
  }
  pending.draining = false;
}

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<Impl>()) {
  WICK_CHECK(data.defined(), "Variable: the tensor is undefined");
  impl_->data = std::move(data);
  set_requires_grad(requires_grad);
}

const Tensor& Variable::data() const { return checked(impl_, "data").data; }
Tensor& Variable::data() { return checked(impl_, "data").data; }
void Variable::set_data(Tensor t) { checked(impl_, "set_data").data = std::move(t); }
bool Variable::requires_grad() const { return impl_ && impl_->requires_grad; }

Variable& Variable::set_requires_grad(bool r) {
  Impl& impl = checked(impl_, "set_requires_grad");
  WICK_CHECK(impl.grad_fn == nullptr,
             "set_requires_grad: only leaf variables can change requires_grad (this one was "
             "made by ",
             impl.grad_fn->name(), "); use detach()");
  WICK_CHECK(!r || impl.data.is_floating_point(),
             "set_requires_grad: only floating-point tensors can require "
             "gradients, not ",
             dtype_name(impl.data.dtype()));
  impl.requires_grad = r;
  return *this;
}

bool Variable::is_leaf() const { return checked(impl_, "is_leaf").grad_fn == nullptr; }
const std::shared_ptr<Node>& Variable::grad_fn() const { return checked(impl_, "grad_fn").grad_fn; }
uint32_t Variable::output_nr() const { return checked(impl_, "output_nr").output_nr; }

Variable Variable::grad() const { return Variable(checked(impl_, "grad").grad); }

void Variable::set_grad(Variable g) {
  Impl& impl = checked(impl_, "set_grad");
  if (g.defined())
    WICK_CHECK(g.shape() == impl.data.shape(), "set_grad: gradient of shape ", shape_str(g.shape()),
               " for a variable of shape ", shape_str(impl.data.shape()));
  impl.grad = g.impl_;
}

void Variable::zero_grad(bool set_to_none) {
  Impl& impl = checked(impl_, "zero_grad");
  if (set_to_none || !impl.grad) impl.grad.reset();
  else impl.grad = Variable(zeros_like(impl.grad->data)).impl_;
}

Variable Variable::detach() const { return Variable(checked(impl_, "detach").data, false); }

void Variable::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  Impl& impl = checked(impl_, "backward");
  Tensor g = gradient;
  if (!g.defined()) {
    WICK_CHECK(impl.data.numel() == 1,
               "backward: a gradient can be created implicitly only for a one-element "
               "variable; this one has shape ",
               shape_str(impl.data.shape()), " (pass the gradient explicitly)");
    g = ones_like(impl.data);
  }
  run_backward({*this}, {Variable(g)}, retain_graph, create_graph);
}

Variable::HookId Variable::register_hook(GradHook hook) {
  Impl& impl = checked(impl_, "register_hook");
  WICK_CHECK(impl.requires_grad, "register_hook: the variable does not require grad");
  uint64_t id = next_hook_id.fetch_add(1);
  if (impl.grad_fn) impl.grad_fn->pre_hooks().push_back({id, impl.output_nr, std::move(hook)});
  else impl.leaf_hooks.emplace_back(id, std::move(hook));
  return id;
}

Variable::HookId Variable::register_post_accumulate_grad_hook(PostAccumulateHook hook) {
  Impl& impl = checked(impl_, "register_post_accumulate_grad_hook");
  WICK_CHECK(impl.requires_grad && impl.grad_fn == nullptr,
             "register_post_accumulate_grad_hook: only leaves that require grad accumulate gradients");
  uint64_t id = next_hook_id.fetch_add(1);
  impl.post_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Variable::remove_hook(HookId id) {
  Impl& impl = checked(impl_, "remove_hook");
  auto drop = [id](auto& hooks) {
    hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [id](const auto& h) { return h.first == id; }), hooks.end());
  };
  drop(impl.leaf_hooks);
  drop(impl.post_hooks);
  if (impl.grad_fn) {
    auto& pre = impl.grad_fn->pre_hooks();
    pre.erase(std::remove_if(pre.begin(), pre.end(), [id](const Node::PreHook& h) { return h.id == id; }), pre.end());
  }
}

std::ostream& operator<<(std::ostream& os, const Variable& v) {
  if (!v.defined()) return os << "Variable(undefined)";
  os << "Variable(" << v.data();
  if (v.grad_fn()) os << ", grad_fn=" << v.grad_fn()->name();
  else if (v.requires_grad()) os << ", requires_grad=true";
  return os << ')';
}

Edge gradient_edge(const Variable& v) {
  const auto& impl = v.impl();
  if (!impl || !impl->requires_grad) return {};
  if (impl->grad_fn) return {impl->grad_fn, impl->output_nr};
  std::shared_ptr<AccumulateGrad> acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(impl);
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

bool needs_grad(std::initializer_list<const Variable*> inputs) {
  return needs_grad(std::vector<const Variable*>(inputs));
}

bool needs_grad(const std::vector<const Variable*>& inputs) {
  if (!grad_enabled()) return false;
  for (const Variable* v : inputs)
    if (v->requires_grad()) return true;
  return false;
}

void connect(const std::shared_ptr<Node>& node, std::initializer_list<const Variable*> inputs,
             std::initializer_list<Variable*> outputs) {
  connect(node, std::vector<const Variable*>(inputs), std::vector<Variable*>(outputs));
}

void connect(const std::shared_ptr<Node>& node, const std::vector<const Variable*>& inputs,
             const std::vector<Variable*>& outputs) {
  for (const Variable* v : inputs) {
    node->add_next_edge(gradient_edge(*v));
    node->add_input_meta({v->shape(), v->dtype(), v->device()});
  }
  node->set_num_outputs(static_cast<uint32_t>(outputs.size()));
  uint32_t nr = 0;
  for (Variable* out : outputs) {
    Variable::Impl& impl = *out->impl();
    impl.requires_grad = true;
    impl.grad_fn = node;
    impl.output_nr = nr++;
  }
}

}  // namespace wick
