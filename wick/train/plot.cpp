#include <wick/train/plot.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include <wick/tensor/atomic_file.h>
#include <wick/tensor/error.h>
#include <wick/train/bitmap_font.h>
#include <wick/train/png_encoder.h>

namespace wick {
namespace {

struct Rgb {
  uint8_t r, g, b;
};

Rgb from_hex(unsigned hex) {
  return {static_cast<uint8_t>(hex >> 16), static_cast<uint8_t>(hex >> 8), static_cast<uint8_t>(hex)};
}

constexpr Rgb kBackground{255, 255, 255};
constexpr Rgb kText{34, 34, 34};
constexpr Rgb kFrame{90, 90, 90};
constexpr Rgb kGrid{228, 228, 228};
constexpr Rgb kLegendBorder{190, 190, 190};

// Text sizes: each font pixel is drawn as scale x scale pixels.
constexpr int kTitleScale = 3;
constexpr int kTextScale = 2;

constexpr unsigned kPalette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

// Pixels [x0, x1) x [y0, y1).
struct Rect {
  int x0, y0, x1, y1;
  bool contains(int x, int y) const { return x >= x0 && x < x1 && y >= y0 && y < y1; }
};

class Canvas {
 public:
  Canvas(int width, int height)
      : width_(width), height_(height), pixels_(3 * static_cast<size_t>(width) * height, 255) {}
  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint8_t>& pixels() const { return pixels_; }

  // Mixes `c` over the pixel with weight alpha in [0, 1]; outside the canvas is ignored.
  void blend(int x, int y, Rgb c, double alpha = 1) {
    if (x < 0 || y < 0 || x >= width_ || y >= height_ || alpha <= 0) return;
    alpha = std::min(alpha, 1.0);
    uint8_t* p = &pixels_[3 * (static_cast<size_t>(y) * width_ + x)];
    const uint8_t src[3] = {c.r, c.g, c.b};
    for (int k = 0; k < 3; ++k) p[k] = static_cast<uint8_t>(std::lround(src[k] * alpha + p[k] * (1 - alpha)));
  }
  void fill(const Rect& r, Rgb c) {
    for (int y = r.y0; y < r.y1; ++y)
      for (int x = r.x0; x < r.x1; ++x) blend(x, y, c);
  }
  // A one-pixel outline just inside r.
  void outline(const Rect& r, Rgb c) {
    fill({r.x0, r.y0, r.x1, r.y0 + 1}, c);
    fill({r.x0, r.y1 - 1, r.x1, r.y1}, c);
    fill({r.x0, r.y0, r.x0 + 1, r.y1}, c);
    fill({r.x1 - 1, r.y0, r.x1, r.y1}, c);
  }

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;
};

// How much of each pixel one series covers (0..1). Drawing a series into a coverage mask
// and compositing it once keeps the joints between segments from darkening where two
// anti-aliased segments overlap.
class Coverage {
 public:
  Coverage(int width, int height, Rect clip)
      : width_(width), clip_(clip), value_(static_cast<size_t>(width) * height, 0.f) {}

  // A segment of the given half width, anti-aliased by the distance of each pixel centre
  // to the segment.
  void segment(double x0, double y0, double x1, double y1, double half_width) {
    const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    const int bx0 = static_cast<int>(std::floor(std::min(x0, x1) - half_width - 1));
    const int bx1 = static_cast<int>(std::ceil(std::max(x0, x1) + half_width + 1));
    const int by0 = static_cast<int>(std::floor(std::min(y0, y1) - half_width - 1));
    const int by1 = static_cast<int>(std::ceil(std::max(y0, y1) + half_width + 1));
    for (int y = std::max(by0, clip_.y0); y <= std::min(by1, clip_.y1 - 1); ++y) {
      for (int x = std::max(bx0, clip_.x0); x <= std::min(bx1, clip_.x1 - 1); ++x) {
        double t = len2 > 0 ? std::clamp(((x - x0) * dx + (y - y0) * dy) / len2, 0.0, 1.0) : 0.0;
        double ex = x0 + t * dx - x, ey = y0 + t * dy - y;
        cover(x, y, half_width + 0.5 - std::sqrt(ex * ex + ey * ey));
      }
    }
  }
  void dot(double cx, double cy, double radius) { segment(cx, cy, cx, cy, radius); }

  void composite(Canvas& canvas, Rgb c) const {
    for (int y = clip_.y0; y < clip_.y1; ++y)
      for (int x = clip_.x0; x < clip_.x1; ++x) canvas.blend(x, y, c, value_[static_cast<size_t>(y) * width_ + x]);
  }

 private:
  void cover(int x, int y, double amount) {
    float& v = value_[static_cast<size_t>(y) * width_ + x];
    v = std::max(v, static_cast<float>(std::clamp(amount, 0.0, 1.0)));
  }
  int width_;
  Rect clip_;
  std::vector<float> value_;
};

// --- text -------------------------------------------------------------------------------

int text_width(const std::string& s, int scale) {
  return s.empty() ? 0 : (static_cast<int>(s.size()) * font::kAdvance - 1) * scale;
}
int cap_height(int scale) { return 7 * scale; }

// Horizontal text with its top-left corner (of the capitals) at (x, y).
void draw_text(Canvas& canvas, int x, int y, const std::string& s, int scale, Rgb c) {
  for (size_t i = 0; i < s.size(); ++i) {
    const font::Glyph g = font::glyph(s[i]);
    const int left = x + static_cast<int>(i) * font::kAdvance * scale;
    for (int row = 0; row < font::kGlyphHeight; ++row)
      for (int col = 0; col < font::kGlyphWidth; ++col)
        if (g[row] >> (font::kGlyphWidth - 1 - col) & 1)
          canvas.fill({left + col * scale, y + row * scale, left + (col + 1) * scale, y + (row + 1) * scale}, c);
  }
}

// Text turned a quarter left (reading upwards), the capitals' top edge at column x and the
// text starting at row y_bottom.
void draw_text_upwards(Canvas& canvas, int x, int y_bottom, const std::string& s, int scale, Rgb c) {
  for (size_t i = 0; i < s.size(); ++i) {
    const font::Glyph g = font::glyph(s[i]);
    const int start = static_cast<int>(i) * font::kAdvance * scale;
    for (int row = 0; row < font::kGlyphHeight; ++row)
      for (int col = 0; col < font::kGlyphWidth; ++col)
        if (g[row] >> (font::kGlyphWidth - 1 - col) & 1) {
          int along = start + col * scale;
          canvas.fill({x + row * scale, y_bottom - along - scale, x + (row + 1) * scale, y_bottom - along}, c);
        }
  }
}

// --- axes -------------------------------------------------------------------------------

struct Axis {
  double lo, hi, step;
  std::vector<double> ticks;
  std::vector<std::string> labels;
};

// 1, 2 or 5 times a power of ten, near range / target_ticks.
double nice_step(double range, int target_ticks) {
  const double raw = range / target_ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * magnitude;
}

// Every label of an axis in one format: fixed with as many decimals as the step needs, or,
// for very small or large values, scientific with as many digits ("2.5e-4").
std::string tick_label(double v, double step, double largest) {
  char buf[48];
  if (std::abs(v) < step * 1e-6) return "0";  // no "-0.0" from rounding
  const int step_exponent = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  if (step_exponent >= -4 && largest < 1e6) {
    std::snprintf(buf, sizeof buf, "%.*f", std::max(0, -step_exponent), v);
    return buf;
  }
  const int value_exponent = static_cast<int>(std::floor(std::log10(largest) + 1e-9));
  std::snprintf(buf, sizeof buf, "%.*e", std::max(0, value_exponent - step_exponent), v);
  // "2.5e-04" -> "2.5e-4", "1e+07" -> "1e7"
  std::string out = buf;
  size_t e = out.find('e');
  std::string exponent = out.substr(e + 1);
  bool negative = exponent[0] == '-';
  exponent = exponent.substr(1);
  while (exponent.size() > 1 && exponent[0] == '0') exponent.erase(0, 1);
  return out.substr(0, e + 1) + (negative ? "-" : "") + exponent;
}

// An axis over [lo, hi] with bounds rounded out to whole steps; `integers` keeps the step at
// 1 or more (epochs).
Axis make_axis(double lo, double hi, int target_ticks, bool integers) {
  if (!(lo <= hi)) lo = 0, hi = 1;  // no finite data
  if (lo == hi) {
    const double pad = lo != 0 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
  Axis a;
  a.step = nice_step(hi - lo, target_ticks);
  if (integers) a.step = std::max(a.step, 1.0);
  a.lo = std::floor(lo / a.step + 1e-9) * a.step;
  a.hi = std::ceil(hi / a.step - 1e-9) * a.step;
  const auto n = static_cast<int>(std::lround((a.hi - a.lo) / a.step));
  const double largest = std::max(std::abs(a.lo), std::abs(a.hi));
  for (int i = 0; i <= n; ++i) {
    a.ticks.push_back(a.lo + i * a.step);
    a.labels.push_back(tick_label(a.ticks.back(), a.step, largest));
  }
  return a;
}

// m * 10^exponent for a log axis: written out between 1e-4 and 1e5, else "2e-6".
std::string power_label(int m, int exponent) {
  char buf[48];
  if (exponent >= -4 && exponent <= 5)
    std::snprintf(buf, sizeof buf, "%.*f", std::max(0, -exponent), m * std::pow(10.0, exponent));
  else
    std::snprintf(buf, sizeof buf, "%de%d", m, exponent);
  return buf;
}

// A log10 axis over [lo, hi], given as exponents: ticks at powers of ten (every k-th one
// over many decades), and at 2 and 5 times them over two decades or fewer.
Axis make_log_axis(double lo, double hi) {
  if (!(lo <= hi)) lo = 0, hi = 1;  // no usable data
  Axis a;
  a.lo = std::floor(lo + 1e-9);
  a.hi = std::max(std::ceil(hi - 1e-9), a.lo + 1);
  const auto decades = static_cast<int>(std::lround(a.hi - a.lo));
  const int every = (decades + 5) / 6;
  a.step = every;
  for (int d = 0; d <= decades; ++d) {
    const int exponent = static_cast<int>(a.lo) + d;
    if (d % every == 0) {
      a.ticks.push_back(exponent);
      a.labels.push_back(power_label(1, exponent));
    }
    if (decades <= 2 && d < decades)
      for (int m : {2, 5}) {
        a.ticks.push_back(exponent + std::log10(m));
        a.labels.push_back(power_label(m, exponent));
      }
  }
  return a;
}

}  // namespace

unsigned series_colour(size_t index) { return kPalette[index % std::size(kPalette)]; }

void write_line_plot_png(const std::string& path, const LinePlot& plot) {
  const char* op = "write_line_plot_png";
  WICK_CHECK(plot.width >= 320 && plot.height >= 200, op, ": ", path, ": image size ", plot.width, "x", plot.height,
             " is below the minimum 320x200");
  WICK_CHECK(plot.width <= 10000 && plot.height <= 10000, op, ": ", path, ": image size ", plot.width, "x", plot.height,
             " is above the maximum 10000x10000");
  // A point is drawn when finite (and positive on a log axis); y is placed by ty(y).
  auto usable = [&](const LineSeries& s, size_t i) {
    return std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && (!plot.log_y || s.y[i] > 0);
  };
  auto ty = [&](double y) { return plot.log_y ? std::log10(y) : y; };
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  bool integer_x = true;
  for (const LineSeries& s : plot.series) {
    WICK_CHECK(s.x.size() == s.y.size(), op, ": ", path, ": series '", s.name, "' has ", s.x.size(), " x values but ",
               s.y.size(), " y values");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s, i)) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, ty(s.y[i]));
      y_hi = std::max(y_hi, ty(s.y[i]));
      integer_x = integer_x && s.x[i] == std::round(s.x[i]);
    }
  }
  const Axis ya = plot.log_y ? make_log_axis(y_lo, y_hi) : make_axis(y_lo, y_hi, 6, false);
  // Fewer x ticks when their labels would touch (long numbers, narrow images).
  Axis xa;
  for (int target : {8, 6, 4, 3, 2}) {
    xa = make_axis(x_lo, x_hi, target, integer_x);
    int widest = 0;
    for (const auto& l : xa.labels) widest = std::max(widest, text_width(l, kTextScale));
    const double spacing = (plot.width - 160.0) / std::max<size_t>(xa.ticks.size() - 1, 1);
    if (widest + 16 <= spacing) break;
  }

  // Layout, outside in: title on top, x label at the bottom, y label on the left, then the
  // tick labels, then the plot area.
  const int W = plot.width, H = plot.height, margin = 14, gap = 10;
  const int text_h = cap_height(kTextScale);
  int tick_label_w = 0;
  for (const auto& l : ya.labels) tick_label_w = std::max(tick_label_w, text_width(l, kTextScale));
  // A title too long for the large font gets the small one.
  const int title_scale = text_width(plot.title, kTitleScale) <= W - 2 * margin ? kTitleScale : kTextScale;
  const int title_h = plot.title.empty() ? 0 : cap_height(title_scale) + 2 * gap;
  const int y_label_w = plot.y_label.empty() ? 0 : text_h + gap;
  const int x_label_h = plot.x_label.empty() ? 0 : text_h + gap;
  Rect area{margin + y_label_w + tick_label_w + gap, margin + std::max(title_h, 6),
            W - margin - std::max(text_width(xa.labels.back(), kTextScale) / 2, 10),
            H - margin - x_label_h - text_h - gap - 8};
  WICK_CHECK(area.x1 - area.x0 > 50 && area.y1 - area.y0 > 50, op, ": ", path, ": the labels leave no room for ",
             "the plot in ", W, "x", H, " pixels");
  // Data to pixel centres: the axis bounds land on the frame lines.
  auto px = [&](double x) { return area.x0 + (x - xa.lo) / (xa.hi - xa.lo) * (area.x1 - 1 - area.x0); };
  auto py_axis = [&](double t) { return area.y1 - 1 - (t - ya.lo) / (ya.hi - ya.lo) * (area.y1 - 1 - area.y0); };
  auto py = [&](double y) { return py_axis(ty(y)); };

  Canvas canvas(W, H);
  if (!plot.title.empty()) {
    // Centred over the plot area, but kept inside the image.
    const int w = text_width(plot.title, title_scale);
    const int x = std::clamp((area.x0 + area.x1) / 2 - w / 2, margin, std::max(margin, W - margin - w));
    draw_text(canvas, x, margin + gap / 2, plot.title, title_scale, kText);
  }
  if (!plot.x_label.empty())
    draw_text(canvas, (area.x0 + area.x1) / 2 - text_width(plot.x_label, kTextScale) / 2,
              H - margin - text_h - 2 * kTextScale, plot.x_label, kTextScale, kText);
  if (!plot.y_label.empty())
    draw_text_upwards(canvas, margin, (area.y0 + area.y1) / 2 + text_width(plot.y_label, kTextScale) / 2, plot.y_label,
                      kTextScale, kText);

  // Grid, ticks and their labels.
  for (size_t i = 0; i < xa.ticks.size(); ++i) {
    const int x = static_cast<int>(std::lround(px(xa.ticks[i])));
    canvas.fill({x, area.y0, x + 1, area.y1}, kGrid);
    canvas.fill({x, area.y1, x + 1, area.y1 + 5}, kFrame);
    draw_text(canvas, x - text_width(xa.labels[i], kTextScale) / 2, area.y1 + 5 + gap / 2, xa.labels[i], kTextScale,
              kText);
  }
  for (size_t i = 0; i < ya.ticks.size(); ++i) {
    const int y = static_cast<int>(std::lround(py_axis(ya.ticks[i])));
    canvas.fill({area.x0, y, area.x1, y + 1}, kGrid);
    canvas.fill({area.x0 - 5, y, area.x0, y + 1}, kFrame);
    draw_text(canvas, area.x0 - 5 - gap / 2 - text_width(ya.labels[i], kTextScale), y - text_h / 2, ya.labels[i],
              kTextScale, kText);
  }
  canvas.outline({area.x0 - 1, area.y0 - 1, area.x1 + 1, area.y1 + 1}, kFrame);

  // The series, each through its own coverage mask.
  for (size_t si = 0; si < plot.series.size(); ++si) {
    const LineSeries& s = plot.series[si];
    Coverage cov(W, H, area);
    const bool markers = s.x.size() <= 40;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!usable(s, i)) continue;
      const bool next = i + 1 < s.x.size() && usable(s, i + 1);
      const bool previous = i > 0 && usable(s, i - 1);
      if (next) cov.segment(px(s.x[i]), py(s.y[i]), px(s.x[i + 1]), py(s.y[i + 1]), 1.25);
      if (markers || (!next && !previous)) cov.dot(px(s.x[i]), py(s.y[i]), 3.0);
    }
    cov.composite(canvas, from_hex(series_colour(si)));
  }

  // The legend, in the inner corner that hides the fewest points.
  std::vector<const LineSeries*> named;
  for (const LineSeries& s : plot.series)
    if (!s.name.empty()) named.push_back(&s);
  if (!named.empty()) {
    int name_w = 0;
    for (const LineSeries* s : named) name_w = std::max(name_w, text_width(s->name, kTextScale));
    const int row_h = text_h + 10, sample_w = 28, pad = 10;
    const int box_w = pad + sample_w + 8 + name_w + pad,
              box_h = pad + row_h * static_cast<int>(named.size()) - 10 + pad;
    std::vector<Rect> corners = {
        {area.x1 - 10 - box_w, area.y0 + 10, area.x1 - 10, area.y0 + 10 + box_h},
        {area.x1 - 10 - box_w, area.y1 - 10 - box_h, area.x1 - 10, area.y1 - 10},
        {area.x0 + 10, area.y0 + 10, area.x0 + 10 + box_w, area.y0 + 10 + box_h},
        {area.x0 + 10, area.y1 - 10 - box_h, area.x0 + 10 + box_w, area.y1 - 10},
    };
    Rect box = corners[0];
    size_t fewest = std::numeric_limits<size_t>::max();
    for (const Rect& r : corners) {
      // Points and points along segments, so that a line crossing the corner counts too.
      size_t hidden = 0;
      for (const LineSeries& s : plot.series)
        for (size_t i = 0; i < s.x.size(); ++i) {
          if (!usable(s, i)) continue;
          const bool next = i + 1 < s.x.size() && usable(s, i + 1);
          for (int k = 0; k < (next ? 16 : 1); ++k) {
            double t = k / 16.0;
            double x = px(s.x[i]) + (next ? t * (px(s.x[i + 1]) - px(s.x[i])) : 0);
            double y = py(s.y[i]) + (next ? t * (py(s.y[i + 1]) - py(s.y[i])) : 0);
            hidden += r.contains(static_cast<int>(x), static_cast<int>(y));
          }
        }
      if (hidden < fewest) {
        fewest = hidden;
        box = r;
      }
    }
    canvas.fill(box, kBackground);
    canvas.outline(box, kLegendBorder);
    size_t colour_index = 0;
    for (size_t si = 0; si < plot.series.size(); ++si) {
      if (plot.series[si].name.empty()) continue;
      const int top = box.y0 + pad + row_h * static_cast<int>(colour_index++);
      const Rgb c = from_hex(series_colour(si));
      canvas.fill({box.x0 + pad, top + text_h / 2 - 1, box.x0 + pad + sample_w, top + text_h / 2 + 2}, c);
      draw_text(canvas, box.x0 + pad + sample_w + 8, top, plot.series[si].name, kTextScale, kText);
    }
  }

  write_file_atomically(path, encode_png_rgb(W, H, canvas.pixels()), op);
}

}  // namespace wick
