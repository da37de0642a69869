#include <wick/distributed/control/control_channel.h>

#include <string_view>

#include <wick/tensor/error.h>

namespace wick::distributed {

const char* command_type_name(CommandType type) {
  switch (type) {
    case CommandType::Train: return "Train";
    case CommandType::Validate: return "Validate";
    case CommandType::Stop: return "Stop";
    case CommandType::Custom: return "Custom";
    case CommandType::PipelineDescription: return "PipelineDescription";
    case CommandType::PipelineRefused: return "PipelineRefused";
    case CommandType::PipelineForward: return "PipelineForward";
    case CommandType::PipelineBackward: return "PipelineBackward";
    case CommandType::PipelineTrainStep: return "PipelineTrainStep";
    case CommandType::PipelineStep: return "PipelineStep";
    case CommandType::PipelineClip: return "PipelineClip";
    case CommandType::PipelineAverageGradients: return "PipelineAverageGradients";
    case CommandType::PipelineSetMode: return "PipelineSetMode";
    case CommandType::PipelineSendState: return "PipelineSendState";
    case CommandType::PipelineLoadState: return "PipelineLoadState";
    case CommandType::PipelineSendOptimizerState: return "PipelineSendOptimizerState";
    case CommandType::PipelineLoadOptimizerState: return "PipelineLoadOptimizerState";
    case CommandType::PipelineSendGenerators: return "PipelineSendGenerators";
    case CommandType::PipelineLoadGenerators: return "PipelineLoadGenerators";
    case CommandType::PipelineStop: return "PipelineStop";
    case CommandType::PipelineAbort: return "PipelineAbort";
  }
  return "unknown";
}

bool known_command_type(uint8_t type) {
  return std::string_view(command_type_name(static_cast<CommandType>(type))) != "unknown";
}

Bytes encode_int64(int64_t value) {
  Bytes out(8);
  auto v = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

int64_t decode_int64(const Bytes& bytes) {
  WICK_CHECK(bytes.size() == 8, "decode_int64: expected 8 bytes, got ", bytes.size());
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return static_cast<int64_t>(v);
}

}  // namespace wick::distributed
