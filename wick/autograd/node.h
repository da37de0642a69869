#pragma once
// The backward graph. Each differentiable op that records creates one Node (a named class,
// so errors say e.g. "MatmulBackward"). A node maps the gradients w.r.t. its outputs to the
// gradients w.r.t. its inputs, and knows through its edges which node receives each.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <wick/autograd/variable.h>

namespace wick {

class Node;

// The sequence number the next node made (on any thread) will get: nodes numbered from here
// on were made after this call (activation checkpointing tells its segment's nodes so).
uint64_t next_node_sequence_nr();

// Where a gradient goes: input `input_nr` of node `fn` (null fn: nowhere, the input needed
// no gradient).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
};

class Node {
 public:
  Node();
  // Releases the edges through release_node, so that freeing a long chain is a loop.
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual const char* name() const = 0;
  // Given the gradients w.r.t. each output (undefined = zero, never all undefined),
  // returns the gradient w.r.t. each input edge (undefined where none flows).
  virtual std::vector<Variable> apply(std::vector<Variable>&& grad_outputs) = 0;
  // Frees what the node saved for backward (after a backward without retain_graph) and
  // says whether there was anything: only then is a second backward through it an error.
  virtual bool release_saved() { return false; }
  // For release_saved overrides: resets every saved member, `return release(a_, b_);`.
  template <class... Saved>
  static bool release(Saved&... saved) {
    ((saved = Saved()), ...);
    return true;
  }

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  void add_next_edge(Edge e) { next_edges_.push_back(std::move(e)); }
  uint32_t num_outputs() const { return num_outputs_; }
  void set_num_outputs(uint32_t n) { num_outputs_ = n; }
  // Creation order: the engine runs later nodes first among those ready.
  uint64_t sequence_nr() const { return sequence_nr_; }

  // Hooks on the gradient of output `output_nr`, run before apply (see Variable::register_hook).
  struct PreHook {
    uint64_t id;
    uint32_t output_nr;
    Variable::GradHook fn;
  };
  std::vector<PreHook>& pre_hooks() { return pre_hooks_; }

  bool released() const { return released_; }
  void mark_released() { released_ = true; }

  // Shape, dtype and device of each input, recorded with the edges: the engine checks every
  // gradient against them (a wrong shape names this node) and converts the dtype.
  struct InputMeta {
    Shape shape;
    DType dtype;
    Device device;
  };
  const std::vector<InputMeta>& input_meta() const { return input_meta_; }
  void add_input_meta(InputMeta m) { input_meta_.push_back(std::move(m)); }

 private:
  std::vector<Edge> next_edges_;
  std::vector<InputMeta> input_meta_;
  std::vector<PreHook> pre_hooks_;
  uint32_t num_outputs_ = 1;
  uint64_t sequence_nr_;
  bool released_ = false;
};

// The sink of a leaf's gradient: accumulates into Variable::grad(), then runs the leaf's
// post-accumulate hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<Variable::Impl> leaf);
  const char* name() const override { return "AccumulateGrad"; }
  std::vector<Variable> apply(std::vector<Variable>&& grad_outputs) override;
  const std::shared_ptr<Variable::Impl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<Variable::Impl> leaf_;
};

struct Variable::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();  // releases grad_fn through release_node

  Tensor data;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<AccumulateGrad> grad_accumulator;                   // leaves: made on first use in a graph
  std::shared_ptr<Impl> grad;                                       // the accumulated gradient
  std::vector<std::pair<uint64_t, Variable::GradHook>> leaf_hooks;  // leaves: run before accumulation
  std::vector<std::pair<uint64_t, Variable::PostAccumulateHook>> post_hooks;
};

// Drops `node` (leaving it null) without recursing: destroying a node drops its edges and
// saved variables, which drop earlier nodes, one stack frame per node of a chain, so a long
// chain would overflow the stack. References dropped while a release is under way are queued
// per thread and destroyed by the outermost call's loop (as PyTorch's deleteNode does).
void release_node(std::shared_ptr<Node>& node) noexcept;

// The edge a gradient for `v` must flow into: its grad_fn, or its leaf accumulator, or
// none when v does not require grad.
Edge gradient_edge(const Variable& v);

// Whether an op on these inputs must record a node: grad mode is on and some input
// requires grad.
bool needs_grad(std::initializer_list<const Variable*> inputs);
bool needs_grad(const std::vector<const Variable*>& inputs);

// Makes `node` the producer of `outputs`: edges from `inputs` (with their metadata) and the
// outputs' grad_fn / output_nr / requires_grad. Call only when needs_grad(inputs).
void connect(const std::shared_ptr<Node>& node, std::initializer_list<const Variable*> inputs,
             std::initializer_list<Variable*> outputs);
// The same for ops with a variable number of inputs or outputs (cat, split).
void connect(const std::shared_ptr<Node>& node, const std::vector<const Variable*>& inputs,
             const std::vector<Variable*>& outputs);

// The usual pattern of a differentiable op:
//   Variable out(forward(a.data(), b.data()));
//   record<MulBackward>({&a, &b}, {&out}, a, b);   // constructs the node only when needed
template <class N, class... Args>
void record(std::initializer_list<const Variable*> inputs, std::initializer_list<Variable*> outputs, Args&&... args) {
  if (!needs_grad(inputs)) return;
  connect(std::make_shared<N>(std::forward<Args>(args)...), inputs, outputs);
}

// Whether the backward running on this thread keeps the graph's saved tensors (retain_graph
// or create_graph), for Node::apply: a node may consume what it saved (write its gradient
// over a saved tensor) only when it does not, since it then runs at most once.
bool backward_retains_graph();
// Whether a backward (or autograd::grad) is running on this thread: a forward run now is a
// recomputation (checkpoint), which fully sharded data parallelism must not take for the
// next step's forward (it prefetches nothing ahead for it).
bool backward_running();

// Runs backward from `roots` with initial gradients `grads` (see Variable::backward).
void run_backward(const std::vector<Variable>& roots, const std::vector<Variable>& grads, bool retain_graph,
                  bool create_graph);

// Computes and returns d(outputs)/d(inputs) without touching any .grad() (torch.autograd.grad).
std::vector<Variable> grad(const std::vector<Variable>& outputs, const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs = {}, bool retain_graph = false,
                           bool create_graph = false);

// Backward from several outputs at once (torch.autograd.backward): the leaves' .grad()
// receive sum_i d<grad_outputs[i], outputs[i]>, each node running once. grad_outputs may be
// omitted when every output has one element (ones are used).
//   auto parts = split(x, 2); backward({parts[0], parts[1]}, {g0, g1});
void backward(const std::vector<Variable>& outputs, const std::vector<Variable>& grad_outputs = {},
              bool retain_graph = false, bool create_graph = false);

// The same functions under PyTorch's namespace name: wick::autograd::grad, ::backward.
namespace autograd {
using wick::backward;
using wick::grad;
}  // namespace autograd

}  // namespace wick
