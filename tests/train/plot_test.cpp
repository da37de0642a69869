// Line plots as PNG: the file is read back (signature, IHDR, every chunk's CRC, the inflated
// image data) and the series colours must show up in the pixels.
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include <wick/train/plot.h>
#include <wick/train/png_encoder.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct Png {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // 3 * width * height
  std::vector<std::string> chunk_types;
};

uint32_t be32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<uint8_t>(s.at(at + i));
  return v;
}

// Decodes what encode_png_rgb writes (8-bit RGB, filter type 0), checking every CRC.
::testing::AssertionResult decode(const std::string& bytes, Png& png) {
  if (bytes.substr(0, 8) != std::string("\x89PNG\r\n\x1a\n", 8))
    return ::testing::AssertionFailure() << "no PNG signature";
  std::string idat;
  for (size_t at = 8; at < bytes.size();) {
    if (at + 12 > bytes.size()) return ::testing::AssertionFailure() << "truncated chunk at " << at;
    const uint32_t len = be32(bytes, at);
    const std::string type = bytes.substr(at + 4, 4), data = bytes.substr(at + 8, len);
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at + 4), len + 4);
    if (crc != be32(bytes, at + 8 + len)) return ::testing::AssertionFailure() << "bad CRC in " << type;
    png.chunk_types.push_back(type);
    if (type == "IHDR") {
      png.width = be32(data, 0);
      png.height = be32(data, 4);
      if (data.size() != 13 || data[8] != 8 || data[9] != 2 || data[12] != 0)
        return ::testing::AssertionFailure() << "not an 8-bit RGB non-interlaced IHDR";
    }
    if (type == "IDAT") idat += data;
    at += 12 + len;
  }
  const size_t row = 1 + 3 * static_cast<size_t>(png.width);
  std::vector<uint8_t> raw(row * png.height);
  uLongf raw_size = raw.size();
  int rc = uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size());
  if (rc != Z_OK || raw_size != raw.size())
    return ::testing::AssertionFailure() << "inflate gave code " << rc << " and " << raw_size << " bytes";
  for (uint32_t y = 0; y < png.height; ++y) {
    if (raw[y * row] != 0) return ::testing::AssertionFailure() << "row " << y << " uses filter " << int(raw[y * row]);
    png.rgb.insert(png.rgb.end(), raw.begin() + y * row + 1, raw.begin() + (y + 1) * row);
  }
  return ::testing::AssertionSuccess();
}

size_t count_colour(const Png& png, unsigned hex) {
  size_t n = 0;
  for (size_t i = 0; i + 2 < png.rgb.size(); i += 3)
    n += png.rgb[i] == (hex >> 16 & 0xff) && png.rgb[i + 1] == (hex >> 8 & 0xff) && png.rgb[i + 2] == (hex & 0xff);
  return n;
}

LinePlot learning_curve() {
  LinePlot plot{.title = "Learning curve", .x_label = "epoch", .y_label = "loss"};
  LineSeries train{"train loss", {}, {}}, valid{"valid loss", {}, {}}, smooth{"smoothed valid loss", {}, {}};
  double s = 0;
  for (int e = 1; e <= 30; ++e) {
    train.x.push_back(e);
    train.y.push_back(2.3 * std::exp(-e / 8.0) + 0.05);
    if (e % 3 == 0) {  // validation every third epoch
      double v = 2.3 * std::exp(-e / 9.0) + 0.12 + 0.05 * std::sin(e);
      s = valid.x.empty() ? v : 0.7 * s + 0.3 * v;
      valid.x.push_back(e);
      valid.y.push_back(v);
      smooth.x.push_back(e);
      smooth.y.push_back(s);
    }
  }
  plot.series = {train, valid, smooth};
  return plot;
}

TEST(Plot, WritesAPngWithTheSeriesColours) {
  const std::string path = ::testing::TempDir() + "wick_plot_test.png";
  write_line_plot_png(path, learning_curve());
  Png png;
  ASSERT_TRUE(decode(read_file(path), png));
  EXPECT_EQ(png.width, 800u);
  EXPECT_EQ(png.height, 500u);
  EXPECT_EQ(png.chunk_types.front(), "IHDR");
  EXPECT_EQ(png.chunk_types.back(), "IEND");
  // Three distinct colours, each drawn (the legend's samples alone are 28x3 pixels).
  EXPECT_NE(series_colour(0), series_colour(1));
  EXPECT_NE(series_colour(1), series_colour(2));
  EXPECT_NE(series_colour(0), series_colour(2));
  for (size_t i = 0; i < 3; ++i) EXPECT_GT(count_colour(png, series_colour(i)), 200u) << "series " << i;
  EXPECT_EQ(count_colour(png, series_colour(3)), 0u);  // no fourth series
  // Mostly white background, some dark text.
  EXPECT_GT(count_colour(png, 0xffffff), 800u * 500 / 2);
  EXPECT_GT(count_colour(png, 0x222222), 500u);
  std::remove(path.c_str());
}

TEST(Plot, HandlesGapsSinglePointsAndFlatOrEmptyData) {
  const std::string path = ::testing::TempDir() + "wick_plot_gaps.png";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  LinePlot plot{.title = "gaps", .x_label = "step", .y_label = "accuracy %", .width = 640, .height = 400};
  plot.series.push_back({"with gaps", {0, 1, 2, 3, 4, 5, 6}, {50, 60, nan, 70, nan, 80, 85}});
  plot.series.push_back({"flat", {0, 6}, {75, 75}});
  plot.series.push_back({"", {3}, {-1e-3}});  // unnamed: no legend entry, still drawn
  write_line_plot_png(path, plot);
  Png png;
  ASSERT_TRUE(decode(read_file(path), png));
  EXPECT_EQ(png.width, 640u);
  EXPECT_EQ(png.height, 400u);
  for (size_t i = 0; i < 3; ++i) EXPECT_GT(count_colour(png, series_colour(i)), 10u) << "series " << i;

  // Nothing finite at all, a single point, a constant: still a valid image.
  for (const LineSeries& s :
       {LineSeries{"none", {nan}, {1}}, LineSeries{"one", {2}, {0.5}}, LineSeries{"const", {1, 2, 3}, {0, 0, 0}}}) {
    write_line_plot_png(path, LinePlot{.title = s.name, .series = {s}});
    Png p;
    EXPECT_TRUE(decode(read_file(path), p)) << s.name;
  }
  write_line_plot_png(path, LinePlot{});
  Png empty;
  EXPECT_TRUE(decode(read_file(path), empty));
  std::remove(path.c_str());
}

TEST(Plot, LogAxisDropsNonPositivePoints) {
  const std::string path = ::testing::TempDir() + "wick_plot_log.png";
  LinePlot plot{.title = "log", .y_label = "loss", .log_y = true};
  plot.series.push_back({"", {1, 2, 3}, {0, -1, 0}});  // unnamed: no legend sample either
  plot.series.push_back({"", {1, 2, 3}, {1, 1e-2, 1e-5}});
  write_line_plot_png(path, plot);
  Png png;
  ASSERT_TRUE(decode(read_file(path), png));
  EXPECT_EQ(count_colour(png, series_colour(0)), 0u);
  EXPECT_GT(count_colour(png, series_colour(1)), 100u);
  // The same points on a linear axis do show.
  plot.log_y = false;
  write_line_plot_png(path, plot);
  Png linear;
  ASSERT_TRUE(decode(read_file(path), linear));
  EXPECT_GT(count_colour(linear, series_colour(0)), 100u);
  std::remove(path.c_str());
}

TEST(Plot, Errors) {
  expect_error([] { write_line_plot_png("/nonexistent-wick-dir/plot.png", learning_curve()); },
               {"write_line_plot_png", "/nonexistent-wick-dir/plot.png"});
  LinePlot bad;
  bad.series.push_back({"loss", {1, 2, 3}, {1, 2}});
  expect_error([&] { write_line_plot_png(::testing::TempDir() + "x.png", bad); },
               {"write_line_plot_png", "series 'loss' has 3 x values but 2 y values"});
  expect_error([] { write_line_plot_png(::testing::TempDir() + "x.png", LinePlot{.width = 100}); },
               {"write_line_plot_png", "100x500", "minimum"});
  expect_error([] { encode_png_rgb(2, 2, std::vector<uint8_t>(11)); }, {"encode_png_rgb", "11 bytes", "expected 12"});
}

// A tiny image through the encoder alone, pixel for pixel.
TEST(Plot, PngEncoderRoundTrip) {
  std::vector<uint8_t> rgb;
  for (int i = 0; i < 3 * 5 * 4; ++i) rgb.push_back(static_cast<uint8_t>(i * 7));
  Png png;
  ASSERT_TRUE(decode(encode_png_rgb(5, 4, rgb), png));
  EXPECT_EQ(png.width, 5u);
  EXPECT_EQ(png.height, 4u);
  EXPECT_EQ(png.rgb, rgb);
  EXPECT_EQ(png.chunk_types, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
}

}  // namespace
}  // namespace wick::test
