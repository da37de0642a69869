#include <wick/autograd/checkpoint.h>

#include <unordered_map>
#include <unordered_set>

#include <wick/autograd/autocast.h>
#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>

namespace wick {

namespace {

struct RandomState {
  std::vector<Generator*> generators;  // default_generator() is resolved per thread: null here
  std::vector<std::pair<uint64_t, uint64_t>> states;
};

RandomState capture_random(const CheckpointOptions& o) {
  RandomState r;
  if (!o.preserve_rng_state) return r;
  r.generators.push_back(nullptr);
  for (Generator* g : o.generators) r.generators.push_back(g);
  for (Generator* g : r.generators) {
    Generator& gen = g ? *g : default_generator();
    r.states.emplace_back(gen.seed(), gen.offset());
  }
  return r;
}

// Sets the generators to a captured state for its scope. Backward may run on another thread
// than the forward did; this thread's default generator is the one the recomputation draws
// from, so it is the one set.
class RandomReplay {
 public:
  explicit RandomReplay(const RandomState& r) {
    for (size_t i = 0; i < r.generators.size(); ++i) {
      Generator& gen = r.generators[i] ? *r.generators[i] : default_generator();
      previous_.emplace_back(&gen, std::make_pair(gen.seed(), gen.offset()));
      gen.set_state(r.states[i].first, r.states[i].second);
    }
  }
  ~RandomReplay() {
    for (auto& [gen, state] : previous_) gen->set_state(state.first, state.second);
  }
  RandomReplay(const RandomReplay&) = delete;
  RandomReplay& operator=(const RandomReplay&) = delete;

 private:
  std::vector<std::pair<Generator*, std::pair<uint64_t, uint64_t>>> previous_;
};

class CheckpointBackward final : public Node {
 public:
  CheckpointBackward(CheckpointFunction fn, std::vector<Variable> inputs, std::vector<size_t> grad_inputs,
                     std::vector<Variable> params, std::vector<size_t> outputs, std::vector<Shape> output_shapes,
                     RandomState random, detail::AutocastSnapshot autocast)
      : fn_(std::move(fn)),
        inputs_(std::move(inputs)),
        grad_inputs_(std::move(grad_inputs)),
        params_(std::move(params)),
        outputs_(std::move(outputs)),
        output_shapes_(std::move(output_shapes)),
        random_(std::move(random)),
        autocast_(autocast) {}
  const char* name() const override { return "CheckpointBackward"; }

  std::vector<Variable> apply(std::vector<Variable>&& grads) override {
    // The recomputed graph starts from detached copies of the inputs, so a gradient made with
    // create_graph would not reach the inputs' own graph: a second derivative would be
    // silently wrong (0 through the inputs). Refused, as the fused nodes refuse it.
    WICK_CHECK(!grad_enabled(), name(),
               ": double backward (create_graph) is not supported; call the function "
               "without checkpoint() to differentiate it twice");
    std::vector<Variable> fresh;
    for (size_t i = 0; i < inputs_.size(); ++i) fresh.push_back(inputs_[i].detach());
    for (size_t i : grad_inputs_) fresh[i].set_requires_grad(true);
    std::vector<Variable> outs;
    {
      RandomReplay random(random_);
      detail::AutocastReplay autocast(autocast_);
      GradModeGuard grad_mode(true);
      outs = fn_(fresh);
    }
    // The outputs the gradients are for, checked against the first forward's: a function
    // that computes something else the second time would get silently wrong gradients.
    std::vector<Variable> roots, root_grads;
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const size_t j = outputs_[k];
      WICK_CHECK(j < outs.size() && outs[j].defined() && outs[j].shape() == output_shapes_[k],
                 "CheckpointBackward: the recomputed forward returned ", outs.size(), " outputs",
                 j < outs.size() && outs[j].defined()
                     ? ", output " + std::to_string(j) + " of shape " + shape_str(outs[j].shape())
                     : std::string(),
                 " where the first forward's output ", j, " had shape ", shape_str(output_shapes_[k]),
                 "; the checkpointed function must compute the same thing twice");
      if (!grads[k].defined() || !outs[j].requires_grad()) continue;
      roots.push_back(outs[j]);
      root_grads.push_back(grads[k]);
    }
    std::vector<Variable> targets;
    for (size_t i : grad_inputs_) targets.push_back(fresh[i]);
    for (const Variable& p : params_) targets.push_back(p);
    if (roots.empty()) return std::vector<Variable>(targets.size());
    return grad(roots, targets, root_grads, /*retain_graph=*/false, /*create_graph=*/false);
  }

  bool release_saved() override { return release(inputs_, params_); }

 private:
  CheckpointFunction fn_;
  std::vector<Variable> inputs_;     // detached: the segment keeps its inputs' values only
  std::vector<size_t> grad_inputs_;  // which inputs are differentiated (this node's first edges)
  std::vector<Variable> params_;     // the leaves the function reached (the remaining edges)
  std::vector<size_t> outputs_;      // which outputs this node produces
  std::vector<Shape> output_shapes_;
  RandomState random_;
  detail::AutocastSnapshot autocast_;
};

}  // namespace

std::vector<Variable> checkpoint(const CheckpointFunction& fn, const std::vector<Variable>& inputs,
                                 const CheckpointOptions& options) {
  WICK_CHECK(static_cast<bool>(fn), "checkpoint: no function given");
  if (!grad_enabled()) return fn(inputs);

  // The first forward runs with grad mode on, to find the leaves the function reaches, and
  // its graph is dropped at once: what stays until backward is the inputs and outputs.
  const RandomState random = capture_random(options);
  const detail::AutocastSnapshot autocast = detail::autocast_snapshot();
  std::vector<Variable> fresh;
  std::vector<size_t> grad_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    WICK_CHECK(inputs[i].defined(), "checkpoint: input ", i, " is undefined");
    fresh.push_back(inputs[i].detach());
    if (inputs[i].requires_grad()) {
      fresh.back().set_requires_grad(true);
      grad_inputs.push_back(i);
    }
  }
  std::vector<Variable> outs;
  uint64_t first_node = 0;
  {
    detail::AutocastReplay own_cache(autocast);
    first_node = next_node_sequence_nr();
    outs = fn(fresh);
  }

  // Walk the segment's graph (iteratively) to its leaves.
  std::unordered_map<const Variable::Impl*, size_t> input_of;
  for (size_t i : grad_inputs) input_of[fresh[i].impl().get()] = i;
  std::vector<Variable> params;
  std::unordered_set<const Node*> seen;
  std::vector<Node*> stack;
  for (const Variable& o : outs)
    if (o.defined() && o.grad_fn() && seen.insert(o.grad_fn().get()).second) stack.push_back(o.grad_fn().get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (auto* acc = dynamic_cast<AccumulateGrad*>(n)) {
      if (!input_of.count(acc->leaf().get())) params.emplace_back(acc->leaf());
      continue;
    }
    WICK_CHECK(n->sequence_nr() >= first_node,
               "checkpoint: the function uses a variable that requires grad and was "
               "computed outside it (its graph reaches ",
               n->name(), "); pass that variable as an input");
    for (const Edge& e : n->next_edges())
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }

  std::vector<Variable> results;
  std::vector<Variable*> produced;
  std::vector<size_t> produced_index;
  std::vector<Shape> produced_shapes;
  results.reserve(outs.size());
  for (size_t j = 0; j < outs.size(); ++j) {
    results.push_back(outs[j].defined() ? outs[j].detach() : Variable());
    if (outs[j].defined() && outs[j].requires_grad()) {
      produced_index.push_back(j);
      produced_shapes.push_back(outs[j].shape());
    }
  }
  outs.clear();  // frees the first forward's graph and what it saved
  if (produced_index.empty() || (grad_inputs.empty() && params.empty())) return results;
  for (size_t j : produced_index) produced.push_back(&results[j]);

  std::vector<Variable> saved_inputs;
  for (const Variable& v : inputs) saved_inputs.push_back(v.detach());
  std::vector<const Variable*> edges;
  for (size_t i : grad_inputs) edges.push_back(&inputs[i]);
  for (const Variable& p : params) edges.push_back(&p);
  auto node = std::make_shared<CheckpointBackward>(fn, std::move(saved_inputs), grad_inputs, params, produced_index,
                                                   produced_shapes, random, autocast);
  connect(node, edges, produced);
  return results;
}

Variable checkpoint(const std::function<Variable(const Variable&)>& fn, const Variable& input,
                    const CheckpointOptions& options) {
  WICK_CHECK(static_cast<bool>(fn), "checkpoint: no function given");
  std::vector<Variable> out =
      checkpoint([fn](const std::vector<Variable>& in) { return std::vector<Variable>{fn(in[0])}; }, {input}, options);
  return out[0];
}

}  // namespace wick
