#pragma once
// Progress of one pass over batches. On a terminal: one line redrawn in place
//   train 3/10  [=========>          ] 412/938  loss 0.4123  5230 ex/s  ETA 0:07
// Elsewhere (a log file, CI): a plain line every `log_every` seconds and one at the end,
// so logs stay readable.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace wick {

class Progress {
 public:
  enum class Style { Auto, Bar, Lines, Off };
  // `total` batches (0 when unknown).
  Progress(std::string label, int64_t total, Style style = Style::Auto, std::FILE* out = stderr,
           double log_every_seconds = 30);
  // Whether update() would draw now (callers skip computing the loss otherwise).
  bool due() const;
  // After `batches` batches and `examples` examples; `loss` is the running mean.
  void update(int64_t batches, int64_t examples, double loss);
  // Ends the line with a summary.
  void finish(const std::string& summary);

 private:
  using Clock = std::chrono::steady_clock;
  void draw(int64_t batches, int64_t examples, double loss);

  std::string label_;
  int64_t total_;
  Style style_;
  std::FILE* out_;
  double log_every_;
  Clock::time_point start_, last_draw_;
};

// "1:02:03" / "2:03".
std::string format_duration(double seconds);

}  // namespace wick
