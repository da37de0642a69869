// A pipeline's state across its stages, gathered on rank 0 and handed back: parameters and
// buffers (named as the unsplit model's), the other stages' optimizer states and every
// stage's random generator, for checkpoints and the best model.
#include <wick/distributed/pipeline/pipeline.h>

#include <bit>
#include <optional>
#include <variant>

#include <wick/autograd/grad_mode.h>
#include <wick/distributed/pipeline/stage_command.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>
#include <wick/tensor/join.h>

namespace wick::distributed {

namespace {
// Rank `s`'s reply to the last command, which must be a `Reply`.
template <class Reply>
Reply reply_of(const Bytes& bytes, int s) {
  const std::string who = "PipelineModel: rank " + std::to_string(s) + "'s reply";
  StageReply reply = decode_stage_reply(bytes, who);
  Reply* r = std::get_if<Reply>(&reply);
  WICK_CHECK(r != nullptr, who, " is of another kind than the command asked for");
  return std::move(*r);
}
}  // namespace

StateDict PipelineModel::state_dict() const {
  if (comm_.rank() != 0 || comm_.size() == 1 || stopped_) return Module::state_dict();
  // Gathering talks to the other ranks but changes nothing of this module's state.
  return const_cast<PipelineModel*>(this)->state_dict_of_all_stages();
}

Module::LoadResult PipelineModel::load_state_dict(const StateDict& dict, bool strict) {
  if (comm_.rank() != 0 || comm_.size() == 1 || stopped_) return Module::load_state_dict(dict, strict);
  WICK_CHECK(strict, "PipelineModel::load_state_dict: only strict loading is supported across stages");
  load_state_dict_into_all_stages(dict);
  return {};
}

std::vector<std::pair<std::string, Tensor>> PipelineModel::stage_state(int stage) const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t l = 0; l < layers_.size(); ++l)
    if (stage_of_[l] == stage)
      for (const auto& [name, t] : layers_[l].module->state_dict().to_map()) out.emplace_back(std::to_string(l) + "." + name, t);
  return out;
}

StateDict PipelineModel::state_dict_of_all_stages() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::state_dict_of_all_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::state_dict_of_all_stages: the pipeline was stopped");
  if (comm_.size() > 1) command(encode_stage_command(stage::SendState{}));
  std::map<std::string, Tensor> all;
  for (int s = 0; s < comm_.size(); ++s)
    for (auto& [name, t] : stage_state(s)) {
      if (s > 0) {
        Tensor got = receive(s, kActivations);
        WICK_CHECK(got.shape() == t.shape() && got.dtype() == t.dtype(), "PipelineModel: rank ", s, " sent ",
                   name, " as ", dtype_name(got.dtype()), " ", shape_str(got.shape()), ", expected ",
                   dtype_name(t.dtype()), " ", shape_str(t.shape()));
        t.copy_(got);
      }
      all[name] = t;
    }
  return StateDict(all);
}

void PipelineModel::load_state_dict_into_all_stages(const StateDict& dict) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::load_state_dict_into_all_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::load_state_dict_into_all_stages: the pipeline was stopped");
  // Everything is checked before anything is written or sent.
  std::map<std::string, Tensor> given = dict.to_map();
  size_t expected = 0;
  for (int s = 0; s < comm_.size(); ++s)
    for (const auto& [name, t] : stage_state(s)) {
      ++expected;
      auto it = given.find(name);
      WICK_CHECK(it != given.end(), "PipelineModel::load_state_dict_into_all_stages: missing '", name, "'");
      WICK_CHECK(it->second.shape() == t.shape() && it->second.dtype() == t.dtype(),
                 "PipelineModel::load_state_dict_into_all_stages: '", name, "' is ", dtype_name(it->second.dtype()),
                 " ", shape_str(it->second.shape()), ", the model has ", dtype_name(t.dtype()), " ",
                 shape_str(t.shape()));
    }
  WICK_CHECK(given.size() == expected, "PipelineModel::load_state_dict_into_all_stages: ", given.size() - expected,
             " unexpected entries");
  if (comm_.size() > 1) command(encode_stage_command(stage::LoadState{}));
  Outbox outbox;
  NoGradGuard no_grad;
  for (int s = 0; s < comm_.size(); ++s)
    for (auto& [name, t] : stage_state(s)) {
      t.copy_(given.at(name));
      if (s > 0) send(t, s, kActivations, outbox);
    }
  outbox.wait();
}

// The names come back on the control channel (one reply per stage), the tensors after them
// on the communicator, in the names' order.
TensorMap PipelineModel::optimizer_state_of_other_stages() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::optimizer_state_of_other_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::optimizer_state_of_other_stages: the pipeline was stopped");
  TensorMap all;
  if (comm_.size() == 1) return all;
  command(encode_stage_command(stage::SendOptimizerState{}));
  const std::vector<Bytes> replies = gather_replies("optimizer state names");
  for (int s = 1; s < comm_.size(); ++s)
    for (const std::string& name : reply_of<stage::OptimizerStateNames>(replies[s], s).names)
      all["stage" + std::to_string(s) + "." + name] = receive(s, kActivations).cpu();
  return all;
}

void PipelineModel::load_optimizer_state_of_other_stages(const TensorMap& state) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::load_optimizer_state_of_other_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::load_optimizer_state_of_other_stages: the pipeline was stopped");
  std::vector<TensorMap> by_stage(comm_.size());
  for (const auto& [key, t] : state) {
    const size_t dot = key.find('.');
    int s = -1;
    if (key.rfind("stage", 0) == 0 && dot != std::string::npos) {
      const std::string digits = key.substr(5, dot - 5);
      if (!digits.empty() && digits.size() < 6 && digits.find_first_not_of("0123456789") == std::string::npos)
        s = std::stoi(digits);
    }
    WICK_CHECK(s >= 1 && s < comm_.size(), "PipelineModel: optimizer state entry '", key, "' names no stage of 1..",
               comm_.size() - 1);
    by_stage[s][key.substr(dot + 1)] = t;
  }
  if (comm_.size() == 1) return;
  stage::LoadOptimizerState load;
  load.names.resize(by_stage.size());
  for (size_t s = 1; s < by_stage.size(); ++s)
    for (const auto& [name, t] : by_stage[s]) load.names[s].push_back(name);
  command(encode_stage_command(load));
  Outbox outbox;
  for (int s = 1; s < comm_.size(); ++s)
    for (const auto& [name, t] : by_stage[s]) send(t, s, kActivations, outbox);
  outbox.wait();
}

Tensor PipelineModel::generators_of_all_stages() {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::generators_of_all_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::generators_of_all_stages: the pipeline was stopped");
  std::vector<stage::GeneratorState> states = {{default_generator().seed(), default_generator().offset()}};
  if (comm_.size() > 1) {
    command(encode_stage_command(stage::SendGenerators{}));
    const std::vector<Bytes> replies = gather_replies("random generators");
    for (int s = 1; s < comm_.size(); ++s) states.push_back(reply_of<stage::GeneratorReply>(replies[s], s).state);
  }
  std::vector<int64_t> rows;
  for (const stage::GeneratorState& g : states) {
    rows.push_back(std::bit_cast<int64_t>(g.seed));
    rows.push_back(std::bit_cast<int64_t>(g.offset));
  }
  return tensor<int64_t>(rows, {comm_.size(), 2});
}

void PipelineModel::load_generators_into_other_stages(const Tensor& generators) {
  WICK_CHECK(comm_.rank() == 0, "PipelineModel::load_generators_into_other_stages runs on rank 0");
  WICK_CHECK(!stopped_, "PipelineModel::load_generators_into_other_stages: the pipeline was stopped");
  WICK_CHECK(generators.dtype() == DType::Int64 && generators.shape() == Shape({comm_.size(), 2}),
             "PipelineModel::load_generators_into_other_stages: expected int64 [", comm_.size(),
             ", 2] (one (seed, offset) row per stage), got ", dtype_name(generators.dtype()), " ",
             shape_str(generators.shape()));
  if (comm_.size() == 1) return;
  const std::vector<int64_t> rows = generators.cpu().contiguous().to_vector<int64_t>();
  stage::LoadGenerators load;
  for (size_t i = 0; i < rows.size(); i += 2)
    load.states.push_back({std::bit_cast<uint64_t>(rows[i]), std::bit_cast<uint64_t>(rows[i + 1])});
  command(encode_stage_command(load));
}

TensorMap PipelineSync::state_dict() const {
  TensorMap state = model_.optimizer_state_of_other_stages();
  state["generators"] = model_.generators_of_all_stages();
  return state;
}

void PipelineSync::load_state_dict(const TensorMap& state) {
  TensorMap optimizers = state;
  auto it = optimizers.find("generators");
  std::optional<Tensor> generators;
  if (it != optimizers.end()) {
    generators = it->second;
    optimizers.erase(it);
  }
  // The generators first: their check refuses a checkpoint of another stage count before
  // anything is loaded.
  if (generators) model_.load_generators_into_other_stages(*generators);
  model_.load_optimizer_state_of_other_stages(optimizers);
}

}  // namespace wick::distributed
