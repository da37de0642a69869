// A pipeline's messages on the control channel (stage_command.h): every command and reply
// round-trips field for field, each has a command type of its own, and a malformed payload
// or a value out of range is refused with the command, the field and the sizes named.
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <wick/distributed/control/control_message.h>
#include <wick/distributed/pipeline/stage_command.h>

#include "tests/support/reference.h"

namespace wick::distributed {
namespace {

using wick::test::expect_error;

// One of each command, with values other than the defaults wherever a field has one.
std::vector<StageCommand> one_of_each_command() {
  return {
      stage::Description{"seed 1\nstarts 0 3\n"},
      stage::Refusal{"the pipeline description was refused: 2 stages for 3 ranks"},
      stage::Forward{7, true, BatchNormStatistics::PerMicroBatch},
      stage::Backward{7},
      stage::TrainStep{kMaxMicroBatches, PipelineSchedule::GPipe, BatchNormStatistics::PerMicroBatch},
      stage::Step{{1e-3, 0.25, -0.0}},
      stage::Clip{0.5},
      stage::AverageGradients{96},
      stage::SetMode{false},
      stage::SendState{},
      stage::LoadState{},
      stage::SendOptimizerState{},
      stage::LoadOptimizerState{{{}, {"0.step", "0.exp_avg"}, {}}},
      stage::SendGenerators{},
      stage::LoadGenerators{{{1, 2}, {~uint64_t{0}, 1u << 31}}},
      stage::Stop{},
      stage::Abort{},
  };
}

TEST(StageCommand, EveryCommandRoundTripsWithATypeOfItsOwn) {
  const std::vector<StageCommand> commands = one_of_each_command();
  std::set<size_t> kinds;
  std::set<CommandType> types;
  for (const StageCommand& c : commands) {
    const Command encoded = encode_stage_command(c);
    EXPECT_EQ(encoded.type, stage_command_type(c));
    EXPECT_TRUE(known_command_type(static_cast<uint8_t>(encoded.type)));
    EXPECT_NE(std::string(command_type_name(encoded.type)).find("Pipeline"), std::string::npos)
        << command_type_name(encoded.type);
    const StageCommand decoded = decode_stage_command(encoded, "stage 1");
    EXPECT_TRUE(decoded == c) << command_type_name(encoded.type);
    EXPECT_EQ(encode_stage_command(decoded).payload, encoded.payload);
    kinds.insert(c.index());
    types.insert(encoded.type);
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<StageCommand>);  // every alternative is covered
  EXPECT_EQ(types.size(), kinds.size());                        // and travels as its own type
  EXPECT_FALSE(types.count(CommandType::Custom));
}

TEST(StageCommand, FieldsTravelAsNamedLittleEndianValues) {
  // A Step's learning rates as doubles, not int64 bits to be memcpy'd: u32 count, f64 each.
  const Command step = encode_stage_command(stage::Step{{0.5, 2.0}});
  EXPECT_EQ(step.type, CommandType::PipelineStep);
  EXPECT_EQ(step.payload, PayloadWriter().u32(2).f64(0.5).f64(2.0).take());
  const Command forward = encode_stage_command(stage::Forward{3, true, BatchNormStatistics::PerMicroBatch});
  EXPECT_EQ(forward.payload, PayloadWriter().u64(3).u8(1).u8(1).take());
  // Setting train mode and running an epoch are different commands with different names.
  EXPECT_EQ(encode_stage_command(stage::SetMode{true}).type, CommandType::PipelineSetMode);
  EXPECT_NE(CommandType::PipelineSetMode, CommandType::Train);
}

TEST(StageCommand, RepliesRoundTrip) {
  const std::vector<StageReply> replies = {stage::OptimizerStateNames{{"0.step", "3.exp_avg_sq", ""}},
                                           stage::OptimizerStateNames{},
                                           stage::GeneratorReply{{42, ~uint64_t{0} - 5}}};
  for (const StageReply& r : replies) {
    const Bytes bytes = encode_stage_reply(r);
    EXPECT_TRUE(decode_stage_reply(bytes, "rank 2") == r);
    EXPECT_EQ(encode_stage_reply(decode_stage_reply(bytes, "rank 2")), bytes);
  }
}

TEST(StageCommand, RefusesACommandOfAnotherKind) {
  for (CommandType type : {CommandType::Train, CommandType::Validate, CommandType::Stop, CommandType::Custom})
    expect_error([&] { decode_stage_command({type, {}}, "PipelineModel: stage 2"); },
                 {"PipelineModel: stage 2 got a control command '", command_type_name(type),
                  "' instead of a pipeline command"});
}

TEST(StageCommand, RefusesMalformedPayloads) {
  const std::string who = "PipelineModel: stage 1";
  // Every command with fields, one byte short and one byte long.
  for (const StageCommand& c : one_of_each_command()) {
    Command encoded = encode_stage_command(c);
    const std::string name = command_type_name(encoded.type);
    if (!encoded.payload.empty()) {
      Command shorter = encoded;
      shorter.payload.pop_back();
      // Cut in a list, the count no longer fits the bytes left; elsewhere a field is short.
      try {
        decode_stage_command(shorter, who);
        ADD_FAILURE() << name << " one byte short was decoded";
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(who + ": " + name + " command"), std::string::npos) << what;
        EXPECT_TRUE(what.find("payload truncated") != std::string::npos ||
                    what.find("bytes left can hold") != std::string::npos)
            << what;
      }
    }
    Command longer = encoded;
    longer.payload.push_back('\0');
    expect_error([&] { decode_stage_command(longer, who); }, {who, name + " command", "1 unexpected trailing bytes"});
  }
  auto expect_refused = [&](CommandType type, const Bytes& payload, const std::vector<std::string>& words) {
    expect_error([&] { decode_stage_command({type, payload}, who); }, words);
  };
  // A Step announcing 3 learning rates and carrying 1: refused before 3 are allocated.
  expect_refused(CommandType::PipelineStep, PayloadWriter().u32(3).f64(0.5).take(),
                 {"PipelineStep command", "learning_rates announces 3 items", "8 bytes left"});
  expect_refused(CommandType::PipelineLoadOptimizerState, PayloadWriter().u32(0xffffffffu).take(),
                 {"PipelineLoadOptimizerState command", "names announces 4294967295 items"});
  expect_refused(CommandType::PipelineForward, PayloadWriter().u64(2).u8(2).u8(0).take(),
                 {"PipelineForward command", "record_graph is 2, expected 0 or 1"});
  expect_refused(CommandType::PipelineTrainStep, PayloadWriter().u64(2).u8(5).u8(0).take(),
                 {"PipelineTrainStep command", "schedule is 5, expected 0..1"});
  expect_refused(CommandType::PipelineTrainStep, PayloadWriter().u64(2).u8(0).u8(2).take(),
                 {"statistics is 2, expected 0..1"});
  for (int64_t m : {int64_t{0}, int64_t{-3}, kMaxMicroBatches + 1})
    expect_refused(CommandType::PipelineBackward, PayloadWriter().u64(static_cast<uint64_t>(m)).take(),
                   {"PipelineBackward command", "micro_batches is " + std::to_string(m), "expected 1..1048576"});
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
    expect_refused(CommandType::PipelineClip, PayloadWriter().f64(bad).take(), {"PipelineClip command", "max_norm"});
  expect_refused(CommandType::PipelineAverageGradients, PayloadWriter().f64(-1).take(),
                 {"PipelineAverageGradients command", "examples must be finite and >= 0, got -1"});
}

TEST(StageCommand, RankZeroRefusesToSendAValueOutOfRange) {
  expect_error([] { encode_stage_command(stage::Forward{0, true, BatchNormStatistics::PerStep}); },
               {"encoding a pipeline PipelineForward command", "micro_batches is 0"});
  expect_error([] { encode_stage_command(stage::Clip{-2}); }, {"PipelineClip command", "max_norm", "-2"});
  expect_error([] { encode_stage_command(stage::Description{std::string(kMaxDescriptionBytes + 1, 'x')}); },
               {"PipelineDescription command", "text of 16777217 bytes", "16777216"});
}

TEST(StageCommand, RefusesMalformedReplies) {
  expect_error([] { decode_stage_reply({}, "PipelineModel: rank 2's reply"); }, {"rank 2's reply", "empty reply"});
  expect_error([] { decode_stage_reply({'\x09'}, "rank 2"); }, {"rank 2", "unknown reply type 9"});
  Bytes generator = encode_stage_reply(stage::GeneratorReply{{1, 2}});
  generator.pop_back();
  expect_error([&] { decode_stage_reply(generator, "rank 2"); }, {"rank 2", "GeneratorState reply", "truncated"});
}

}  // namespace
}  // namespace wick::distributed
