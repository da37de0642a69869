// The set-up of a pipeline described by rank 0: the description as text (layers, optimizer,
// seed, stage starts, an example's shape), checked on rank 0 and built on every rank.
#include <wick/distributed/pipeline/pipeline.h>

#include <cstring>
#include <iterator>
#include <sstream>
#include <variant>

#include <wick/autograd/grad_mode.h>
#include <wick/distributed/pipeline/stage_command.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/generator.h>

namespace wick::distributed {

namespace {

std::string encode_description(const PipelineDescription& d) {
  std::ostringstream s;
  s << "seed " << d.seed << "\nstarts";
  for (size_t start : d.stage_starts) s << ' ' << start;
  s << "\ninput " << static_cast<int>(d.input_dtype);
  for (int64_t size : d.input_shape) s << ' ' << size;
  s << "\noptimizer " << encode_optimizer_spec(d.optimizer) << "\nlayers\n" << encode_layer_specs(d.layers);
  return s.str();
}

PipelineDescription decode_description(const std::string& text) {
  PipelineDescription d;
  std::istringstream s(text);
  auto line = [&](const char* key) {
    std::string l;
    WICK_CHECK(std::getline(s, l) && l.rfind(key, 0) == 0, "join_pipeline: malformed description (expected '", key,
               "')");
    return std::istringstream(l.substr(std::strlen(key)));
  };
  auto numbers = [](std::istringstream in, const char* what) {
    std::vector<int64_t> out;
    for (std::string w; in >> w;) {
      char* end = nullptr;
      const long long v = std::strtoll(w.c_str(), &end, 10);
      WICK_CHECK(*end == '\0' && v >= 0 && v < (1LL << 40), "join_pipeline: malformed ", what, " '", w, "'");
      out.push_back(v);
    }
    return out;
  };
  std::vector<int64_t> seed = numbers(line("seed"), "seed");
  WICK_CHECK(seed.size() == 1, "join_pipeline: malformed seed");
  d.seed = static_cast<uint64_t>(seed[0]);
  for (int64_t v : numbers(line("starts"), "stage start")) d.stage_starts.push_back(static_cast<size_t>(v));
  std::vector<int64_t> input = numbers(line("input"), "input shape");
  WICK_CHECK(!input.empty() && input[0] < kNumDTypes && input.size() <= 9, "join_pipeline: malformed input");
  d.input_dtype = static_cast<DType>(input[0]);
  d.input_shape.assign(input.begin() + 1, input.end());
  d.optimizer = decode_optimizer_spec(line("optimizer ").str());
  line("layers");
  std::string rest((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
  d.layers = decode_layer_specs(rest);
  return d;
}

// The description's stage starts, or stages of about equal parameter counts.
std::vector<size_t> stage_starts_of(const PipelineDescription& d, const std::vector<StagedLayer>& layers, int stages) {
  if (!d.stage_starts.empty()) return d.stage_starts;
  std::vector<int64_t> sizes;
  for (const StagedLayer& l : layers) {
    int64_t n = 0;
    for (const Variable& p : l.module->parameters()) n += p.numel();
    sizes.push_back(n);
  }
  return balanced_stage_starts(sizes, static_cast<size_t>(stages));
}

// Everything a rank needs from a description, built the same way everywhere.
DistributedPipeline build_pipeline(Communicator& comm, ControlEndpoint control, PipelineDescription d, Device device,
                                   Milliseconds timeout) {
  Generator g(d.seed);
  std::vector<StagedLayer> layers = make_layers(d.layers, &g);
  d.stage_starts = stage_starts_of(d, layers, comm.size());
  DistributedPipeline out;
  out.model = std::make_shared<PipelineModel>(comm, control, std::move(layers), d.stage_starts, device, timeout);
  out.optimizer = make_optimizer(d.optimizer, out.model->named_parameters());
  out.description = std::move(d);
  return out;
}

// Rank 0's part of the hand-over, on the control channel: the description or the refusal.
void broadcast_to_stages(const ControlEndpoint& control, const StageCommand& command) {
  WICK_CHECK(control.driver != nullptr, "distribute_pipeline: rank 0 needs the driver's end of the control channel");
  control.driver->broadcast(encode_stage_command(command));
}

}  // namespace

DistributedPipeline distribute_pipeline(Communicator& comm, ControlEndpoint control,
                                        const PipelineDescription& description, Device device, Milliseconds timeout) {
  WICK_CHECK(comm.rank() == 0, "distribute_pipeline runs on rank 0; the others call join_pipeline");
  std::string text;
  try {
    text = encode_description(description);
    WICK_CHECK(text.size() <= kMaxDescriptionBytes, "the description takes ", text.size(),
               " bytes, more than ", kMaxDescriptionBytes);
    // Everything the other ranks will do with it, checked here first.
    PipelineDescription d = decode_description(text);
    Generator g(d.seed);
    std::vector<StagedLayer> layers = make_layers(d.layers, &g);
    const std::vector<size_t> starts = stage_starts_of(d, layers, comm.size());
    WICK_CHECK(starts.size() == static_cast<size_t>(comm.size()), starts.size(), " stages for ", comm.size(),
               " ranks");
    check_stages(layers, starts, starts.size());
    if (!d.input_shape.empty()) {
      // The whole model on the CPU, its stages as they will be (so errors name them).
      StagedModel whole(layers, starts, std::vector<Device>(starts.size(), Device::cpu()));
      whole.eval();
      NoGradGuard no_grad;
      Shape batch = {2};
      batch.insert(batch.end(), d.input_shape.begin(), d.input_shape.end());
      whole.forward(Variable(zeros(batch, d.input_dtype)));
    }
  } catch (const Error& e) {
    const std::string why = std::string("the pipeline description was refused: ") + e.what();
    if (comm.size() > 1) broadcast_to_stages(control, stage::Refusal{why});
    throw Error("distribute_pipeline: " + why);
  }
  if (comm.size() > 1) broadcast_to_stages(control, stage::Description{text});
  return build_pipeline(comm, control, decode_description(text), device, timeout);
}

DistributedPipeline join_pipeline(Communicator& comm, ControlEndpoint control, Device device, Milliseconds timeout) {
  WICK_CHECK(comm.rank() != 0, "join_pipeline runs on ranks other than 0; rank 0 calls distribute_pipeline");
  WICK_CHECK(control.follower != nullptr, "join_pipeline: rank ", comm.rank(),
             " needs a follower's end of the control channel");
  const StageCommand c = decode_stage_command(control.follower->receive(timeout), "join_pipeline");
  if (const auto* refusal = std::get_if<stage::Refusal>(&c)) throw Error("join_pipeline: rank 0 says " + refusal->reason);
  const auto* description = std::get_if<stage::Description>(&c);
  WICK_CHECK(description != nullptr, "join_pipeline: expected rank 0's description, got a '",
             command_type_name(stage_command_type(c)), "' command");
  const std::string& text = description->text;
  return build_pipeline(comm, control, decode_description(text), device, timeout);
}

}  // namespace wick::distributed
