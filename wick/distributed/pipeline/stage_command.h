#pragma once
// What rank 0 of a pipeline tells its stages, and what they answer, on the job's control
// channel. Each command is a struct of named fields with a CommandType of its own, so the
// frame's type byte says what follows; encode_stage_command and decode_stage_command are the
// only code that lays the fields out (little-endian through the control channel's
// PayloadWriter) and reads them back, checking every count against the bytes that arrived
// before allocating and every value against its range. Tensors (activations, gradients,
// parameters) never travel here: they take the communicator, in an order both ends know
// from the command.
//
//   control.driver->broadcast(encode_stage_command(stage::Step{{1e-3, 1e-4}}));
//   StageCommand c = decode_stage_command(follower->receive(timeout), "stage 2");
//   if (auto* step = std::get_if<stage::Step>(&c)) ... step->learning_rates ...
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <wick/distributed/control/control_channel.h>
#include <wick/distributed/pipeline/micro_batches.h>

namespace wick::distributed {

// No pipeline step has more micro-batches than this; a command announcing more is refused
// before a stage plans (and allocates for) its schedule.
inline constexpr int64_t kMaxMicroBatches = int64_t{1} << 20;
// A pipeline description (layers and optimizer as text) or a refusal is at most this long.
inline constexpr size_t kMaxDescriptionBytes = size_t{16} << 20;

// Each struct lists its fields once, in wire order, in fields(); the codec walks that list
// to write and to read, so the two cannot disagree.
namespace stage {

// A command without fields: its type says it all.
template <CommandType Type>
struct Signal {
  static constexpr CommandType type = Type;
  template <class S, class V> static void fields(S&, V&&) {}
  bool operator==(const Signal&) const = default;
};

// distribute_pipeline to join_pipeline: the model and optimizer every rank builds.
struct Description {
  static constexpr CommandType type = CommandType::PipelineDescription;
  std::string text;  // encode_description's
  template <class S, class V> static void fields(S& s, V&& v) { v("text", s.text); }
  bool operator==(const Description&) const = default;
};

// distribute_pipeline to join_pipeline: rank 0 refused the description, for this reason.
struct Refusal {
  static constexpr CommandType type = CommandType::PipelineRefused;
  std::string reason;
  template <class S, class V> static void fields(S& s, V&& v) { v("reason", s.reason); }
  bool operator==(const Refusal&) const = default;
};

// Rank 0's forward() of a batch as `micro_batches` micro-batches, pipelined (GPipe).
struct Forward {
  static constexpr CommandType type = CommandType::PipelineForward;
  int64_t micro_batches = 1;
  bool record_graph = false;  // autograd is on: keep each micro-batch's graph for Backward
  BatchNormStatistics statistics = BatchNormStatistics::PerStep;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("micro_batches", s.micro_batches);
    v("record_graph", s.record_graph);
    v("statistics", s.statistics);
  }
  bool operator==(const Forward&) const = default;
};

// The backward of the last Forward's micro-batches.
struct Backward {
  static constexpr CommandType type = CommandType::PipelineBackward;
  int64_t micro_batches = 1;
  template <class S, class V> static void fields(S& s, V&& v) { v("micro_batches", s.micro_batches); }
  bool operator==(const Backward&) const = default;
};

// One train_step: forwards and backwards of `micro_batches`, in `schedule`'s order.
struct TrainStep {
  static constexpr CommandType type = CommandType::PipelineTrainStep;
  int64_t micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  BatchNormStatistics statistics = BatchNormStatistics::PerStep;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("micro_batches", s.micro_batches);
    v("schedule", s.schedule);
    v("statistics", s.statistics);
  }
  bool operator==(const TrainStep&) const = default;
};

// Step this stage's optimizer with rank 0's learning rates, one per group, as absolute
// values (none: rank 0's stage has no parameters, each stage keeps its own).
struct Step {
  static constexpr CommandType type = CommandType::PipelineStep;
  std::vector<double> learning_rates;
  template <class S, class V> static void fields(S& s, V&& v) { v("learning_rates", s.learning_rates); }
  bool operator==(const Step&) const = default;
};

// Clip the gradients of all stages together to a total 2-norm of max_norm.
struct Clip {
  static constexpr CommandType type = CommandType::PipelineClip;
  double max_norm = 1;
  template <class S, class V> static void fields(S& s, V&& v) { v("max_norm", s.max_norm); }
  bool operator==(const Clip&) const = default;
};

// Make this stage's gradients, sums over the step's examples, their means over the examples
// of every replica: `examples` is rank 0's (this replica's) count.
struct AverageGradients {
  static constexpr CommandType type = CommandType::PipelineAverageGradients;
  double examples = 0;
  template <class S, class V> static void fields(S& s, V&& v) { v("examples", s.examples); }
  bool operator==(const AverageGradients&) const = default;
};

// Module::train(training) on the stage (not the data-parallel loop's Train command).
struct SetMode {
  static constexpr CommandType type = CommandType::PipelineSetMode;
  bool training = true;
  template <class S, class V> static void fields(S& s, V&& v) { v("training", s.training); }
  bool operator==(const SetMode&) const = default;
};

// Send this stage's parameters and buffers to rank 0, in the order both ends know from the
// layout (so no names travel).
using SendState = Signal<CommandType::PipelineSendState>;

// Receive them from rank 0, in the same order.
using LoadState = Signal<CommandType::PipelineLoadState>;

// Answer with OptimizerStateNames, then send those entries' tensors to rank 0 in that order.
using SendOptimizerState = Signal<CommandType::PipelineSendOptimizerState>;

// Receive the optimizer state entries named in names[stage] (entry 0 is rank 0's own and
// empty), their tensors following on the communicator in that order.
struct LoadOptimizerState {
  static constexpr CommandType type = CommandType::PipelineLoadOptimizerState;
  std::vector<std::vector<std::string>> names;
  template <class S, class V> static void fields(S& s, V&& v) { v("names", s.names); }
  bool operator==(const LoadOptimizerState&) const = default;
};

// Answer with this stage's default generator (GeneratorReply).
using SendGenerators = Signal<CommandType::PipelineSendGenerators>;

// A random generator's state: what Dropout on a stage draws from.
struct GeneratorState {
  uint64_t seed = 0, offset = 0;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("seed", s.seed);
    v("offset", s.offset);
  }
  bool operator==(const GeneratorState&) const = default;
};

// Set this stage's default generator to states[stage] (one per stage, rank 0's first).
struct LoadGenerators {
  static constexpr CommandType type = CommandType::PipelineLoadGenerators;
  std::vector<GeneratorState> states;
  template <class S, class V> static void fields(S& s, V&& v) { v("states", s.states); }
  bool operator==(const LoadGenerators&) const = default;
};

// End serve(): rank 0 is done.
using Stop = Signal<CommandType::PipelineStop>;

// End serve() with an error: rank 0 failed (its own error says why).
using Abort = Signal<CommandType::PipelineAbort>;

// A stage's answers to rank 0 (FollowerChannel::send_to_driver, read by gather): a type
// byte of their own, then the fields.
enum class ReplyType : uint8_t { OptimizerStateNames = 1, GeneratorState = 2 };

// The names of this stage's optimizer state entries, in the order their tensors follow.
struct OptimizerStateNames {
  static constexpr ReplyType type = ReplyType::OptimizerStateNames;
  std::vector<std::string> names;
  template <class S, class V> static void fields(S& s, V&& v) { v("names", s.names); }
  bool operator==(const OptimizerStateNames&) const = default;
};

struct GeneratorReply {
  static constexpr ReplyType type = ReplyType::GeneratorState;
  GeneratorState state;
  template <class S, class V> static void fields(S& s, V&& v) { v("state", s.state); }
  bool operator==(const GeneratorReply&) const = default;
};

}  // namespace stage

using StageCommand = std::variant<stage::Description, stage::Refusal, stage::Forward, stage::Backward,
                                  stage::TrainStep, stage::Step, stage::Clip, stage::AverageGradients,
                                  stage::SetMode, stage::SendState, stage::LoadState, stage::SendOptimizerState,
                                  stage::LoadOptimizerState, stage::SendGenerators, stage::LoadGenerators,
                                  stage::Stop, stage::Abort>;
using StageReply = std::variant<stage::OptimizerStateNames, stage::GeneratorReply>;

// The command type `command` travels as.
CommandType stage_command_type(const StageCommand& command);

// Refuses (wick::Error) a command whose values are out of range (micro_batches outside
// 1..kMaxMicroBatches, a max_norm that is not finite and > 0...), on rank 0 before it sends.
Command encode_stage_command(const StageCommand& command);
// Throws wick::Error naming `who` (the receiving stage) for a command of another kind (a
// data-parallel Train), a malformed payload (truncated, trailing bytes, a count beyond what
// arrived) or a value out of range. decode(encode(c)) == c, and encode(decode(x)) == x for
// every x that decodes: there is one encoding of each command.
StageCommand decode_stage_command(const Command& command, const std::string& who);

Bytes encode_stage_reply(const StageReply& reply);
// Throws wick::Error naming `who` (the sending stage) for a malformed reply.
StageReply decode_stage_reply(const Bytes& bytes, const std::string& who);

}  // namespace wick::distributed
