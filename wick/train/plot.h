#pragma once
// Line plots written as PNG images, for learning curves (epoch against train loss,
// validation loss, smoothed validation loss) without a Python round trip:
//
//   LinePlot plot{.title = "Learning curve", .x_label = "epoch", .y_label = "loss"};
//   plot.series.push_back({"train loss", epochs, train_losses});
//   plot.series.push_back({"valid loss", valid_epochs, valid_losses});
//   write_line_plot_png("curve.png", plot);
//
// Axes fit every finite point, rounded out to tick steps of 1, 2 or 5 times a power of ten
// (powers of ten on a log y axis); each series gets a colour of its own (in order: blue,
// orange, green, red, purple, brown, pink, grey, olive, cyan, then again) and, when named,
// a legend entry.
#include <string>
#include <vector>

namespace wick {

struct LineSeries {
  std::string name{};
  // Equal lengths. A point whose x or y is NaN or infinite is a gap: the line stops before
  // it and starts again after it. A point with no neighbour on either side shows as a dot.
  std::vector<double> x{}, y{};
};

struct LinePlot {
  std::string title{}, x_label{}, y_label{};
  std::vector<LineSeries> series{};
  int width = 800, height = 500;  // pixels; at least 320 x 200
  // A log10 y axis (losses over several decades); points with y <= 0 are then gaps.
  bool log_y = false;
};

// Draws `plot` and writes it to `path` as an RGB PNG, atomically (a temporary file in the
// same folder, then rename). Throws wick::Error naming the path when it cannot be written,
// and on series whose x and y differ in length.
void write_line_plot_png(const std::string& path, const LinePlot& plot);

// The RGB colour (0xRRGGBB) of series `index` in a plot.
unsigned series_colour(size_t index);

}  // namespace wick
