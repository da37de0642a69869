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
#include <chrono>
#include <cstdint>
#include <optional>
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

struct TensorBoardWriterOptions {
  // Drops the events the file already holds at steps >= purge_step before appending, as
  // PyTorch's SummaryWriter(purge_step=) hides them: a run resumed from a checkpoint passes
  // the first step it will log again, so the points a crashed run wrote after its last
  // checkpoint do not stay beside the resumed run's.
  std::optional<int64_t> purge_step;
  std::string file_name = "events.out.tfevents.wick";  // TensorBoard reads names holding "tfevents"
  // Records are buffered and appended when this many are pending or this long has passed
  // since the last append (and by flush() and the destructor).
  int max_pending = 64;
  double flush_seconds = 10;
};

// An event file appended to as training goes (PyTorch's SummaryWriter.add_scalar): one
// record per scalar, so the cost of a point does not grow with the run. Opening a file that
// exists keeps its records: a torn last record (a writer killed mid-append) and, with
// purge_step, the events at later steps are dropped by rewriting the file atomically; a
// record damaged elsewhere is an error naming the file and the offset. One writer per file.
//
//   TensorBoardWriter tb("run/tb");
//   tb.add_scalar("train/loss", loss, step);   // tensorboard --logdir run/tb
class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const std::string& dir, TensorBoardWriterOptions options = {});
  ~TensorBoardWriter();  // appends what is pending; an error there is dropped (call flush() to see it)
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // wall_time: seconds since 1970-01-01 UTC; now when omitted.
  void add_scalar(const std::string& tag, double value, int64_t step);
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);
  // Appends the pending records to the file.
  void flush();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  TensorBoardWriterOptions options_;
  std::string pending_;
  int pending_records_ = 0;
  std::chrono::steady_clock::time_point last_flush_;
};

// CRC-32C (Castagnoli), as TensorFlow's records use it.
uint32_t crc32c(const void* data, size_t size);

}  // namespace wick
