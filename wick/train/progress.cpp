#include <wick/train/progress.h>

#include <unistd.h>

#include <cmath>

namespace wick {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

Progress::Progress(std::string label, int64_t total, Style style, std::FILE* out, double log_every_seconds)
    : label_(std::move(label)), total_(total), style_(style), out_(out), log_every_(log_every_seconds) {
  if (style_ == Style::Auto) style_ = isatty(fileno(out_)) ? Style::Bar : Style::Lines;
  start_ = last_draw_ = Clock::now();
}

bool Progress::due() const {
  if (style_ == Style::Off) return false;
  double since = std::chrono::duration<double>(Clock::now() - last_draw_).count();
  return since >= (style_ == Style::Bar ? 0.2 : log_every_);
}

void Progress::update(int64_t batches, int64_t examples, double loss) {
  if (!due()) return;
  draw(batches, examples, loss);
}

void Progress::finish(const std::string& summary) {
  if (style_ == Style::Off) return;
  if (style_ == Style::Bar) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s  %s  (%s)\n", label_.c_str(), summary.c_str(),
               format_duration(std::chrono::duration<double>(Clock::now() - start_).count()).c_str());
  std::fflush(out_);
}

void Progress::draw(int64_t batches, int64_t examples, double loss) {
  last_draw_ = Clock::now();
  double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  double rate = elapsed > 0 ? static_cast<double>(examples) / elapsed : 0;
  double eta = (total_ > 0 && batches > 0) ? elapsed * static_cast<double>(total_ - batches) / static_cast<double>(batches) : NAN;
  std::string counts = total_ > 0 ? std::to_string(batches) + "/" + std::to_string(total_) : std::to_string(batches);
  if (style_ == Style::Bar) {
    constexpr int kWidth = 24;
    std::string bar(kWidth, ' ');
    if (total_ > 0) {
      int filled = static_cast<int>(kWidth * std::min<int64_t>(batches, total_) / total_);
      for (int i = 0; i < filled; ++i) bar[i] = '=';
      if (filled < kWidth) bar[filled] = '>';
    }
    std::fprintf(out_, "\r\033[K%s [%s] %s  loss %.4f  %.0f ex/s  ETA %s", label_.c_str(), bar.c_str(), counts.c_str(),
                 loss, rate, format_duration(eta).c_str());
  } else {
    std::fprintf(out_, "%s  batch %s  loss %.4f  %.0f ex/s  ETA %s\n", label_.c_str(), counts.c_str(), loss, rate,
                 format_duration(eta).c_str());
  }
  std::fflush(out_);
}

}  // namespace wick
