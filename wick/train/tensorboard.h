#pragma once
// TensorBoard's event files, written and read without TensorFlow, for the scalars dashboard
// (`tensorboard --logdir DIR`). The format is public (TensorFlow's event.proto and its
// record framing); wick writes what the scalars dashboard reads:
//   file    = record*; the first record's event holds file_version "brain.Event:2"
//   record  = uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes,
//             `length` bytes of a serialized Event, uint32 masked CRC-32C of them
//   Event   = wall_time (field 1, double), step (2, int64), file_version (3, string) or
//             summary (5, Summary)
//   Summary = value (1, repeated Value); Value = tag (1, string), simple_value (2, float)
//   masked CRC = ((crc >> 15) | (crc << 17)) + 0xa282ead8, crc being CRC-32C (Castagnoli)
// The reader checks every length against what is left and every CRC, and throws wick::Error
// naming the file, the offset and the reason; it reads the records the writer writes and
// skips Event fields and Value kinds it does not know (images, histograms).
#include <cstdint>
#include <string>
#include <vector>

namespace wick {

struct ScalarEvent {
  std::string tag;
  int64_t step = 0;
  double value = 0;      // stored as float32, as TensorBoard's simple_value is
  double wall_time = 0;  // seconds since 1970-01-01 UTC
};

// The bytes of an event file holding `events` (one Event each) after the version record
// stamped `file_wall_time`.
std::string tensorboard_events(const std::vector<ScalarEvent>& events, double file_wall_time);
// Written atomically (a temporary name, then renamed over `path`), so a reader never sees
// half a file; the loops rewrite it whole after every epoch.
void write_tensorboard_events(const std::string& path, const std::vector<ScalarEvent>& events, double file_wall_time);
// The scalar events of an event file's bytes (`what` names them in errors).
std::vector<ScalarEvent> parse_tensorboard_events(const std::string& bytes, const std::string& what);
std::vector<ScalarEvent> read_tensorboard_events(const std::string& path);

// CRC-32C (Castagnoli), as TensorFlow's records use it.
uint32_t crc32c(const void* data, size_t size);

}  // namespace wick
