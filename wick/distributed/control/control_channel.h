#pragma once
// The control channel between the driver (rank 0) and the followers (ranks 1..n-1), as
// lamp's distributed loop uses it: the driver broadcasts a command before each phase
// (Train, Validate, Stop...), followers answer with small messages the driver gathers
// (batch counts, losses), and a Store carries rendezvous data for the communicators.
// Tensor data never travels here; NCCL/Gloo move it.
//
// Two implementations share these interfaces so the training loops do not care which one
// they get: ControlServer/ControlClient (TCP, for processes and machines) and
// InProcessControl (threads of one process). Every blocking call takes or has a timeout,
// and a peer that disappears makes the next call on the other side throw wick::Error
// naming the rank instead of hanging.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <wick/distributed/comm/store.h>

namespace wick::distributed {

// The type byte of a command: what the follower is asked to do. A payload's layout is
// fixed by its type, so a follower knows how to read it before it looks inside.
enum class CommandType : uint8_t {
  // The data-parallel loop's (distributed_training.h); Custom carries the driver's setup.
  Train = 1, Validate = 2, Stop = 3, Custom = 4,
  // A pipeline's, rank 0 to its stages: the fields of each are in
  // wick/distributed/pipeline/stage_command.h.
  PipelineDescription = 16, PipelineRefused, PipelineForward, PipelineBackward, PipelineTrainStep, PipelineStep,
  PipelineClip, PipelineAverageGradients, PipelineSetMode, PipelineSendState, PipelineLoadState,
  PipelineSendOptimizerState, PipelineLoadOptimizerState, PipelineSendGenerators, PipelineLoadGenerators,
  PipelineStop, PipelineAbort,
};

// "Train", "PipelineForward"...; "unknown" for a byte that names no command.
const char* command_type_name(CommandType type);
// Whether a type byte read from the wire names a command.
bool known_command_type(uint8_t type);

struct Command {
  CommandType type = CommandType::Custom;
  Bytes payload;  // small: an epoch number, a flag; see encode_int64
};

// Little helpers for the common payload of one integer (an epoch, a batch count).
Bytes encode_int64(int64_t value);
// Throws wick::Error unless `bytes` holds exactly one encoded int64.
int64_t decode_int64(const Bytes& bytes);

// The driver's end: rank 0.
class DriverChannel {
 public:
  virtual ~DriverChannel() = default;
  virtual int world_size() const = 0;
  // Sends `command` to every follower, in order with earlier commands. Throws wick::Error
  // naming every follower that has disconnected (the live ones still get the command).
  virtual void broadcast(const Command& command) = 0;
  // Takes the next message each follower sent with send_to_driver, waiting up to `timeout`
  // in total. Returns world_size() entries: entry r is rank r's message, entry 0 (the
  // driver) is empty. Throws wick::Error naming the ranks that disconnected or did not send
  // in time; nothing is taken then (the other ranks' messages stay queued).
  virtual std::vector<Bytes> gather(Milliseconds timeout) = 0;
  // The job's key-value store, shared with every follower's store().
  virtual Store& store() = 0;
};

// A follower's end: ranks 1..world_size-1.
class FollowerChannel {
 public:
  virtual ~FollowerChannel() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // The next command from the driver. Throws wick::Error when none arrives within
  // `timeout`, or when the driver has gone and no command is left to read.
  virtual Command receive(Milliseconds timeout) = 0;
  // Queues a small message for the driver's next gather(). Throws wick::Error when the
  // driver has gone.
  virtual void send_to_driver(const Bytes& message) = 0;
  virtual Store& store() = 0;
};

// One rank's end of the control channel, for code that runs the same on every rank (the
// pipeline's): the driver's on rank 0, a follower's on the others, neither in a world of
// one. It does not own the channel.
struct ControlEndpoint {
  DriverChannel* driver = nullptr;
  FollowerChannel* follower = nullptr;
};

}  // namespace wick::distributed
