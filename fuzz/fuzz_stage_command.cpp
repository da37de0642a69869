// A pipeline's messages on arbitrary bytes: the first byte is taken as the command type and
// the rest as its payload, the way a stage reads rank 0's command, and the whole input as a
// stage's reply, the way rank 0 reads it. Each must decode or throw wick::Error, never crash
// or allocate far beyond the input; and what decodes must encode back to the same bytes
// (one encoding per message, so the two directions cannot drift apart).
#include <cstdlib>

#include <wick/distributed/pipeline/stage_command.h>
#include <wick/tensor/error.h>

using namespace wick::distributed;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Bytes input(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size);
  if (size >= 1) {
    const Command command{static_cast<CommandType>(data[0]), Bytes(input.begin() + 1, input.end())};
    try {
      const Command again = encode_stage_command(decode_stage_command(command, "fuzz"));
      if (again.type != command.type || again.payload != command.payload) std::abort();
    } catch (const wick::Error&) {
    }
  }
  try {
    if (encode_stage_reply(decode_stage_reply(input, "fuzz")) != input) std::abort();
  } catch (const wick::Error&) {
  }
  return 0;
}
