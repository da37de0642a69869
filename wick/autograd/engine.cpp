// The backward engine: an iterative walk of the graph (no recursion, so deep graphs cannot
// overflow the stack). First count, for every node reachable from the roots, how many
// edges lead into it; then run nodes whose count has dropped to zero, latest-created first,
// summing the gradients that arrive for each of their outputs.
#include <wick/autograd/autocast.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/autograd/ops.h>
#include <wick/tensor/elementwise.h>
#include <wick/tensor/factories.h>

#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace wick {

namespace {

// Adds `g` into `slot`, out of place and through the differentiable add, so that with
// create_graph the sum is part of the recorded graph.
void accumulate(Variable& slot, Variable g) {
  if (!g.defined()) return;
  slot = slot.defined() ? add(slot, g) : std::move(g);
}

// Checks a gradient against the input it is for, converting its dtype if needed.
Variable validate(const Node& node, size_t input, const Node::InputMeta& meta, Variable g) {
  if (!g.defined()) return g;
  WICK_CHECK(g.shape() == meta.shape, node.name(), " returned a gradient of shape ", shape_str(g.shape()),
             " for input ", input, " of shape ", shape_str(meta.shape));
  WICK_CHECK(g.device() == meta.device, node.name(), " returned a gradient on ", g.device(), " for input ", input,
             " on ", meta.device);
  if (g.dtype() != meta.dtype) g = Variable(g.data().to(meta.dtype));
  return g;
}

// The retain_graph of the backward running on this thread (restored when it returns: a hook
// may run a backward of its own).
thread_local bool t_retains_graph = false;
thread_local int t_backward_depth = 0;  // backwards running on this thread (hooks may nest them)

struct ByNewest {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

// Where autograd::grad() wants gradients captured instead of accumulated: the gradient
// flowing into input `input_nr` of `node`.
struct Capture {
  Node* node;
  uint32_t input_nr;
};

void execute(const std::vector<Edge>& root_edges, const std::vector<Variable>& root_grads, bool retain_graph,
             bool create_graph, const std::vector<Capture>* captures, std::vector<Variable>* captured) {
  GradModeGuard mode(create_graph);
  struct RetainsGraph {
    bool previous = t_retains_graph;
    explicit RetainsGraph(bool retain) {
      t_retains_graph = retain;
      ++t_backward_depth;
    }
    ~RetainsGraph() {
      t_retains_graph = previous;
      --t_backward_depth;
    }
  } retains(retain_graph);
  // Each op's gradient runs in the dtype its forward chose; a backward started inside an
  // AutocastGuard must not re-cast it.
  struct AutocastPause {
    AutocastPause() { detail::suspend_autocast(); }
    ~AutocastPause() { detail::resume_autocast(); }
  } autocast_off;

  // 1. Dependency counts over everything reachable from the roots.
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& e : root_edges)
    if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.fn) continue;
      ++deps[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }

  // 2. Seed the roots' gradients.
  std::unordered_map<Node*, std::vector<Variable>> buffers;
  auto buffer_for = [&](Node* n) -> std::vector<Variable>& {
    auto& b = buffers[n];
    if (b.empty()) b.resize(n->num_outputs());
    return b;
  };
  for (size_t i = 0; i < root_edges.size(); ++i)
    if (root_edges[i].fn) accumulate(buffer_for(root_edges[i].fn.get())[root_edges[i].input_nr], root_grads[i]);

  std::priority_queue<Node*, std::vector<Node*>, ByNewest> ready;
  for (Node* n : seen)
    if (deps[n] == 0) ready.push(n);

  // Nodes are kept alive by the graph the roots hold; root_edges hold the roots' nodes.
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Variable> grads = std::move(buffer_for(node));
    buffers.erase(node);

    bool any = false;
    for (const Variable& g : grads) any = any || g.defined();

    for (auto& hook : node->pre_hooks()) {
      Variable& g = grads[hook.output_nr];
      if (!g.defined()) continue;
      Variable replaced = hook.fn(g);
      if (replaced.defined()) g = replaced;
    }

    std::vector<Variable> outs;
    if (captures) {
      for (size_t k = 0; k < captures->size(); ++k)
        if ((*captures)[k].node == node) accumulate((*captured)[k], grads[(*captures)[k].input_nr]);
    }
    // autograd::grad() leaves .grad() alone: captured leaves are not accumulated.
    bool skip = !any || (captures && dynamic_cast<AccumulateGrad*>(node) != nullptr);
    if (!skip) {
      WICK_CHECK(!node->released(), node->name(),
                 ": trying to run backward through the graph a second time "
                 "(its saved tensors were freed; pass retain_graph=true to the first backward)");
      outs = node->apply(std::move(grads));
      WICK_CHECK(outs.size() == node->next_edges().size(), node->name(), " returned ", outs.size(), " gradients for ",
                 node->next_edges().size(), " inputs");
      if (!retain_graph && node->release_saved()) node->mark_released();
    }

    const auto& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      Node* next = edges[i].fn.get();
      if (!next) continue;
      if (!skip) accumulate(buffer_for(next)[edges[i].input_nr], validate(*node, i, node->input_meta()[i], outs[i]));
      if (--deps[next] == 0) ready.push(next);
    }
  }
}

std::vector<Edge> root_edges_of(const std::vector<Variable>& roots, const std::vector<Variable>& grads,
                                const char* op) {
  WICK_CHECK(roots.size() == grads.size(), op, ": ", roots.size(), " outputs but ", grads.size(), " gradients");
  std::vector<Edge> edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Variable& r = roots[i];
    WICK_CHECK(r.defined() && r.requires_grad(), op, ": output ", i,
               " does not require grad and has no grad_fn (nothing to differentiate)");
    WICK_CHECK(grads[i].defined() && grads[i].shape() == r.shape(), op, ": gradient ", i, " has shape ",
               grads[i].defined() ? shape_str(grads[i].shape()) : std::string("(undefined)"), " but output ", i,
               " has shape ", shape_str(r.shape()));
    edges.push_back(gradient_edge(r));
  }
  return edges;
}

}  // namespace

AccumulateGrad::AccumulateGrad(std::shared_ptr<Variable::Impl> leaf) : leaf_(std::move(leaf)) {}

std::vector<Variable> AccumulateGrad::apply(std::vector<Variable>&& grad_outputs) {
  Variable g = std::move(grad_outputs[0]);
  for (auto& [id, hook] : leaf_->leaf_hooks) {
    Variable replaced = hook(g);
    if (replaced.defined()) g = replaced;
  }
  if (!leaf_->grad) {
    if (grad_enabled()) {
      leaf_->grad = g.impl();  // create_graph: keep the recorded gradient as it is
    } else {
      // Keep the gradient's memory only if nobody else can see it and it is a plain dense
      // buffer; otherwise a later in-place update of .grad() (clipping, all-reduce) would
      // change another tensor too, or write through stride-0 broadcast dims.
      const Tensor& d = g.data();
      bool owned = g.impl().use_count() == 1 && d.storage().use_count() == 1 && d.is_contiguous() && d.offset() == 0 &&
                   d.nbytes() == d.storage()->nbytes();
      leaf_->grad = owned ? g.impl() : Variable(d.clone()).impl();
    }
  } else if (grad_enabled()) {
    leaf_->grad = Variable(add(leaf_->grad->data, g.data())).impl();  // create_graph: keep it differentiable
  } else {
    leaf_->grad->data.add_(g.data());
  }
  Variable self(leaf_);
  for (auto& [id, hook] : leaf_->post_hooks) hook(self);
  return {};
}

namespace {

// grad_outputs, or ones for one-element outputs when it is empty.
std::vector<Variable> grad_outputs_or_ones(const std::vector<Variable>& outputs,
                                           const std::vector<Variable>& grad_outputs, const char* op) {
  if (!grad_outputs.empty()) return grad_outputs;
  std::vector<Variable> ones;
  for (const Variable& o : outputs) {
    WICK_CHECK(o.defined() && o.numel() == 1, op, ": grad_outputs can be omitted only for one-element outputs");
    ones.emplace_back(ones_like(o.data()));
  }
  return ones;
}

}  // namespace

bool backward_retains_graph() { return t_retains_graph; }
bool backward_running() { return t_backward_depth > 0; }

void run_backward(const std::vector<Variable>& roots, const std::vector<Variable>& grads, bool retain_graph,
                  bool create_graph) {
  std::vector<Edge> edges = root_edges_of(roots, grads, "backward");
  execute(edges, grads, retain_graph || create_graph, create_graph, nullptr, nullptr);
}

std::vector<Variable> grad(const std::vector<Variable>& outputs, const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs, bool retain_graph, bool create_graph) {
  const std::vector<Variable> gouts = grad_outputs_or_ones(outputs, grad_outputs, "grad");
  std::vector<Edge> edges = root_edges_of(outputs, gouts, "grad");
  std::vector<Capture> captures;
  std::vector<Edge> keep_alive;
  for (size_t i = 0; i < inputs.size(); ++i) {
    WICK_CHECK(inputs[i].requires_grad(), "grad: input ", i, " does not require grad");
    Edge e = gradient_edge(inputs[i]);
    captures.push_back({e.fn.get(), e.input_nr});
    keep_alive.push_back(std::move(e));
  }
  std::vector<Variable> captured(inputs.size());
  execute(edges, gouts, retain_graph || create_graph, create_graph, &captures, &captured);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!captured[i].defined()) captured[i] = Variable(zeros_like(inputs[i].data()));
  return captured;
}

void backward(const std::vector<Variable>& outputs, const std::vector<Variable>& grad_outputs, bool retain_graph,
              bool create_graph) {
  run_backward(outputs, grad_outputs_or_ones(outputs, grad_outputs, "backward"), retain_graph, create_graph);
}

}  // namespace wick
