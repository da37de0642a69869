#pragma once
// LoopState: where a training loop stands (lamp's LoopState) and the learning curve so far.
// It is what a checkpoint stores besides the model, the optimizer and the schedule.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <wick/tensor/safetensors.h>
#include <wick/train/tensorboard.h>

namespace wick {

struct CurvePoint {
  int64_t epoch = 0;  // 0-based
  double train_loss = 0;
  double train_accuracy = 0;
  std::optional<double> validation_loss, smoothed_validation_loss, validation_accuracy;
  double examples_per_second = 0;  // training, over all replicas
  double learning_rate = 0;        // of the first parameter group
  double wall_time = 0;            // when the epoch ended, seconds since 1970-01-01 UTC
  // Your step's metrics (SupervisedModel::metrics), means over the epoch's examples.
  std::map<std::string, double> train_metrics, validation_metrics;
};

struct LoopState {
  int64_t epoch = 0;  // epochs completed
  std::optional<double> smoothed_validation_loss;  // the latest
  std::optional<double> min_validation_loss;       // smallest smoothed validation loss
  std::optional<int64_t> min_validation_epoch;
  std::vector<CurvePoint> learning_curve;
};

// To and from 0-d / 2-d float64 tensors under "loop." keys (checkpoints).
TensorMap loop_state_to_tensors(const LoopState& state);
// Throws wick::Error naming the key when one is missing or malformed.
LoopState loop_state_from_tensors(const TensorMap& tensors);

// The learning curve as CSV (header line, one line per epoch, empty cells where there was
// no validation), written atomically.
std::string learning_curve_csv(const std::vector<CurvePoint>& curve);
void write_learning_curve_csv(const std::string& path, const std::vector<CurvePoint>& curve);
// The learning curve as JSON lines: one object per epoch with the CSV's columns and
// wall_time; a missing value is null, a non-finite one NaN / Infinity / -Infinity as
// Python's json module writes and reads them. Written atomically.
std::string learning_curve_jsonl(const std::vector<CurvePoint>& curve);
void write_learning_curve_jsonl(const std::string& path, const std::vector<CurvePoint>& curve);
// One point of the learning curve as TensorBoard scalars (train/loss, train/accuracy,
// train/examples_per_second, train/learning_rate, validation/loss,
// validation/smoothed_loss, validation/accuracy, train/metric/<name>,
// validation/metric/<name>; step = epoch + 1; wall time = when the epoch ended). The
// training loop appends them after every epoch (TensorBoardWriter, wick/train/tensorboard.h).
std::vector<ScalarEvent> curve_point_scalars(const CurvePoint& point);
// The losses (train, validation, smoothed validation) against the epoch, as a PNG plot.
void write_learning_curve_png(const std::string& path, const std::vector<CurvePoint>& curve);

}  // namespace wick
