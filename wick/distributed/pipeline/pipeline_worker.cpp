// A serving stage: rank 0's commands, read from the control channel and carried out one by
// one until Stop (or Abort) ends serve().
#include <wick/distributed/pipeline/pipeline.h>

#include <variant>

#include <wick/autograd/grad_mode.h>
#include <wick/autograd/node.h>
#include <wick/distributed/pipeline/stage_command.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>

namespace wick::distributed {

void PipelineModel::worker_forward(bool grad, int64_t id, Outbox& outbox) {
  GradModeGuard mode(grad);
  Variable main;
  std::map<std::string, Variable> received;
  std::vector<Variable> inputs;
  for (const Message& m : receives_) {
    Tensor t = receive(m.peer, kActivations).to(device_);
    Variable v(t, grad && t.is_floating_point());
    (m.name.empty() ? main : received[m.name]) = v;
    inputs.push_back(v);
  }
  Pass pass = run_stage(main, std::move(received));
  pass.inputs = std::move(inputs);
  send_outputs(pass, outbox);
  if (grad) {
    passes_[id] = std::move(pass);
    note_passes();
  }
}

void PipelineModel::worker_backward(int64_t id, Outbox& outbox) {
  auto it = passes_.find(id);
  WICK_CHECK(it != passes_.end(), "PipelineModel: rank ", comm_.rank(), " was asked for the backward of micro-batch ",
             id, " without its forward");
  Pass pass = std::move(it->second);
  passes_.erase(it);
  std::vector<Tensor> grads;
  for (const Message& m : sends_) grads.push_back(receive(m.peer, kGradients));
  backward_from_sent(pass, std::move(grads));
  for (size_t i = 0; i < receives_.size(); ++i) {
    const Variable& in = pass.inputs[i];
    send(in.grad().defined() ? in.grad().data() : zeros_like(in.data()), receives_[i].peer, kGradients, outbox);
  }
}

void PipelineModel::set_learning_rates(Optimizer& optimizer, const std::vector<double>& lrs) {
  if (lrs.empty()) return;  // rank 0's stage has no parameters: each stage keeps its own
  WICK_CHECK(lrs.size() == optimizer.num_groups(), "PipelineModel: stage ", comm_.rank(), "'s optimizer has ",
             optimizer.num_groups(), " parameter groups and rank 0's has ", lrs.size(),
             ": every stage takes rank 0's learning rates, one per group");
  for (size_t g = 0; g < lrs.size(); ++g) optimizer.set_lr(g, lrs[g]);
}

// What a stage does for each of rank 0's commands; false ends serve().
class StageWorker {
 public:
  StageWorker(PipelineModel& model, Optimizer& optimizer) : m_(model), optimizer_(optimizer) {}

  bool operator()(const stage::Forward& c) {
    PipelineModel::Outbox outbox;
    m_.passes_.clear();
    m_.begin_micro_batches(c.micro_batches, c.statistics);
    for (int64_t i = 0; i < c.micro_batches; ++i) m_.worker_forward(c.record_graph, i, outbox);
    m_.end_micro_batches();
    outbox.wait();
    return true;
  }
  bool operator()(const stage::Backward& c) {
    PipelineModel::Outbox outbox;
    for (int64_t i = 0; i < c.micro_batches; ++i) m_.worker_backward(i, outbox);
    outbox.wait();
    return true;
  }
  bool operator()(const stage::TrainStep& c) {
    m_.worker_train_step(c.micro_batches, c.schedule, c.statistics);
    return true;
  }
  bool operator()(const stage::Step& c) {
    m_.set_learning_rates(optimizer_, c.learning_rates);
    optimizer_.step();
    optimizer_.zero_grad();
    return true;
  }
  bool operator()(const stage::Clip& c) {
    m_.clip_grad_norm(c.max_norm);
    return true;
  }
  bool operator()(const stage::AverageGradients& c) {
    m_.average_own_gradients(c.examples);
    return true;
  }
  bool operator()(const stage::SetMode& c) {
    m_.Module::train(c.training);
    return true;
  }
  bool operator()(const stage::SendState&) {
    PipelineModel::Outbox outbox;
    for (const auto& [name, t] : m_.stage_state(rank())) m_.send(t, 0, PipelineModel::kActivations, outbox);
    outbox.wait();
    return true;
  }
  bool operator()(const stage::LoadState&) {
    NoGradGuard no_grad;
    for (auto& [name, t] : m_.stage_state(rank())) {
      Tensor got = m_.receive(0, PipelineModel::kActivations);
      WICK_CHECK(got.shape() == t.shape() && got.dtype() == t.dtype(), "PipelineModel: rank 0 sent ", name, " as ",
                 shape_str(got.shape()), ", expected ", shape_str(t.shape()));
      t.copy_(got);
    }
    return true;
  }
  bool operator()(const stage::SendOptimizerState&) {
    const TensorMap state = optimizer_.state_dict();
    stage::OptimizerStateNames names;
    for (const auto& [name, t] : state) names.names.push_back(name);
    m_.control_.follower->send_to_driver(encode_stage_reply(names));
    PipelineModel::Outbox outbox;
    for (const auto& [name, t] : state) m_.send(t, 0, PipelineModel::kActivations, outbox);
    outbox.wait();
    return true;
  }
  bool operator()(const stage::LoadOptimizerState& c) {
    WICK_CHECK(c.names.size() == static_cast<size_t>(m_.num_stages()), "PipelineModel: stage ", rank(),
               " got optimizer state names for ", c.names.size(), " stages, the pipeline has ", m_.num_stages());
    TensorMap state;
    for (const std::string& name : c.names[static_cast<size_t>(rank())])
      state[name] = m_.receive(0, PipelineModel::kActivations).to(m_.device_);
    if (!state.empty()) optimizer_.load_state_dict(state);
    return true;
  }
  bool operator()(const stage::SendGenerators&) {
    const Generator& g = default_generator();
    m_.control_.follower->send_to_driver(encode_stage_reply(stage::GeneratorReply{{g.seed(), g.offset()}}));
    return true;
  }
  bool operator()(const stage::LoadGenerators& c) {
    WICK_CHECK(c.states.size() == static_cast<size_t>(m_.num_stages()), "PipelineModel: stage ", rank(), " got ",
               c.states.size(), " generator states, the pipeline has ", m_.num_stages(), " stages");
    const stage::GeneratorState& s = c.states[static_cast<size_t>(rank())];
    default_generator().set_state(s.seed, s.offset);
    return true;
  }
  bool operator()(const stage::Stop&) { return false; }
  bool operator()(const stage::Abort&) {
    throw Error("PipelineModel: rank 0 gave up (its own error says why); stage " + std::to_string(rank()) +
                " stops serving");
  }
  // join_pipeline's: rank 0 describes a pipeline only before the stages serve.
  bool operator()(const stage::Description& c) { return refuse_set_up(c.type); }
  bool operator()(const stage::Refusal& c) { return refuse_set_up(c.type); }

 private:
  bool refuse_set_up(CommandType type) const {
    throw Error("PipelineModel: stage " + std::to_string(rank()) + " got a '" + command_type_name(type) +
                "' command while serving; it belongs to join_pipeline");
  }
  int rank() const { return m_.stage(); }
  PipelineModel& m_;
  Optimizer& optimizer_;
};

void PipelineModel::serve(Optimizer& optimizer) {
  WICK_CHECK(comm_.rank() > 0, "PipelineModel::serve runs on ranks other than 0");
  const std::string who = "PipelineModel: stage " + std::to_string(comm_.rank());
  StageWorker worker(*this, optimizer);
  try {
    for (;;) {
      distributed::Command received;
      try {
        received = control_.follower->receive(timeout_);
      } catch (const Error& e) {
        throw Error(who + " waiting for rank 0's next command: " + e.what());
      }
      if (!std::visit(worker, decode_stage_command(received, who))) return;
    }
  } catch (...) {
    // The other ranks must not wait for their timeout as well.
    abort();
    throw;
  }
}

}  // namespace wick::distributed
