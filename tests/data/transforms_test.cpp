#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <wick/data/transforms.h>
#include <wick/wick.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

// [n, c, h, w] with element (i, ch, y, x) = 1000 i + 100 ch + 10 y + x + 1 (never 0).
Tensor numbered(int64_t n, int64_t c, int64_t h, int64_t w, DType dtype = DType::Int32) {
  std::vector<int32_t> v;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) v.push_back(static_cast<int32_t>(1000 * i + 100 * ch + 10 * y + x + 1));
  return tensor<int32_t>(v, {n, c, h, w}).to(dtype);
}

TEST(Normalize, MatchesADoubleReference) {
  Tensor img = test::random({2, 3, 4, 5}, DType::UInt8, 7, 0, 255);
  const std::vector<double> mean = {0.4914, 0.4822, 0.4465}, std = {0.2470, 0.2435, 0.2616};
  Tensor out = to_float_normalized(img, mean, std);
  std::vector<double> x = test::values(img), expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = i / 20 % 3;
    expected[i] = (x[i] / 255.0 - mean[ch]) / std[ch];
  }
  EXPECT_TRUE(test::matches(out, {2, 3, 4, 5}, DType::Float32, expected, 1e-6, 1e-6));
}

TEST(Normalize, OneMeanForAllChannelsAndNonContiguousInput) {
  Tensor img = test::random({4, 4, 1, 2}, DType::UInt8, 3, 0, 255).permute({2, 1, 0, 3});  // [1, 4, 4, 2]
  Tensor out = to_float_normalized(img, {0.5}, {0.25});
  std::vector<double> expected = test::ref_unary(test::values(img), [](double v) { return (v / 255 - 0.5) / 0.25; });
  EXPECT_TRUE(test::matches(out, {1, 4, 4, 2}, DType::Float32, expected, 1e-6, 1e-6));
}

TEST(Normalize, Errors) {
  expect_error([] { to_float_normalized(zeros({1, 3, 2, 2}, DType::Float32), {0}, {1}); }, {"to_float_normalized", "uint8"});
  expect_error([] { to_float_normalized(zeros({1, 3, 2, 2}, DType::UInt8), {0, 0}, {1, 1}); },
               {"to_float_normalized", "3 channels", "2"});
  expect_error([] { to_float_normalized(zeros({1, 1, 2, 2}, DType::UInt8), {0}, {0}); }, {"std[0] is 0"});
}

TEST(HFlip, ReversesRowsOfChosenImages) {
  Tensor img = numbered(2, 2, 2, 3);
  Tensor always = random_hflip(img, 1.0, 5);
  std::vector<double> expected;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t ch = 0; ch < 2; ++ch)
      for (int64_t y = 0; y < 2; ++y)
        for (int64_t x = 2; x >= 0; --x) expected.push_back(1000.0 * i + 100 * ch + 10 * y + x + 1);
  EXPECT_TRUE(test::matches(always, {2, 2, 2, 3}, DType::Int32, expected));
  EXPECT_EQ(random_hflip(img, 0.0, 5).to_vector<int>(), img.to_vector<int>());
}

TEST(HFlip, DeterministicPerSeedAndAboutHalfFlipped) {
  Tensor img = numbered(200, 1, 1, 2, DType::Float64);
  Tensor a = random_hflip(img, 0.5, 11), b = random_hflip(img, 0.5, 11), c = random_hflip(img, 0.5, 12);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  EXPECT_NE(a.to_vector<double>(), c.to_vector<double>());
  std::vector<double> v = a.to_vector<double>();
  int flipped = 0;
  for (int i = 0; i < 200; ++i) flipped += v[2 * i] > v[2 * i + 1];
  EXPECT_GT(flipped, 70);
  EXPECT_LT(flipped, 130);
}

TEST(Crop, WithoutPaddingAtFullSizeIsTheImage) {
  Tensor img = numbered(3, 2, 4, 4, DType::UInt8);
  EXPECT_EQ(random_crop(img, 4, 0, 1).to_vector<uint8_t>(), img.to_vector<uint8_t>());
}

TEST(Crop, PaddingShiftsContentAndFillsZeros) {
  // Every crop of a padded image is the image shifted by (dy, dx) in [-p, p] with zeros
  // where it moved out: find the shift from one element and check the rest.
  const int64_t n = 40, c = 2, h = 5, w = 6, p = 2;
  Tensor img = numbered(n, c, h, w);
  Tensor out = random_crop(img, 5, p, 99);
  ASSERT_EQ(out.shape(), (Shape{n, c, 5, 5}));
  std::vector<int> v = out.to_vector<int>();
  std::set<std::pair<int64_t, int64_t>> shifts;
  for (int64_t i = 0; i < n; ++i) {
    bool found = false;
    int64_t top = 0, left = 0;  // the window's corner in image coordinates
    for (int64_t t = -p; t <= h + p - 5 && !found; ++t)
      for (int64_t l = -p; l <= w + p - 5 && !found; ++l) {
        bool ok = true;
        for (int64_t ch = 0; ch < c && ok; ++ch)
          for (int64_t y = 0; y < 5 && ok; ++y)
            for (int64_t x = 0; x < 5 && ok; ++x) {
              int64_t sy = t + y, sx = l + x;
              int expected = (sy < 0 || sy >= h || sx < 0 || sx >= w) ? 0 : static_cast<int>(1000 * i + 100 * ch + 10 * sy + sx + 1);
              ok = v[((i * c + ch) * 5 + y) * 5 + x] == expected;
            }
        if (ok) found = true, top = t, left = l;
      }
    ASSERT_TRUE(found) << "image " << i << " is not a shifted window of the padded image";
    shifts.insert({top, left});
  }
  EXPECT_GT(shifts.size(), 8u);  // offsets vary per image
  EXPECT_EQ(random_crop(img, 5, p, 99).to_vector<int>(), v);
  EXPECT_NE(random_crop(img, 5, p, 100).to_vector<int>(), v);
}

TEST(Crop, KnownShift) {
  // 1 x 1 x 2 x 2 image, padding 1, crop 3: every window holds the whole image somewhere.
  Tensor img = tensor<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> v = random_crop(img, 3, 1, seed).to_vector<float>();
    float sum = 0;
    for (float x : v) sum += x;
    EXPECT_EQ(sum, 10.0f);
  }
}

TEST(Crop, Errors) {
  expect_error([] { random_crop(zeros({1, 1, 4, 4}), 9, 2, 0); }, {"random_crop", "9 x 9", "[1, 1, 4, 4]"});
  expect_error([] { random_crop(zeros({4, 4}), 2, 0, 0); }, {"random_crop", "[N, C, H, W]"});
}

// torch's bilinear (align_corners false): source coordinate (o + 0.5) in / out - 0.5,
// clamped at 0, the upper neighbour clamped to the last row/column, in float64.
std::vector<double> bilinear_reference(const Tensor& image, int64_t oh, int64_t ow) {
  const int64_t c = image.size(0), h = image.size(1), w = image.size(2);
  const std::vector<double> v = image.to(DType::Float64).contiguous().to_vector<double>();
  auto source = [](int64_t o, int64_t in, int64_t out, int64_t& lo, int64_t& hi, double& t) {
    double s = (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
    s = std::max(s, 0.0);
    lo = static_cast<int64_t>(s);
    hi = std::min(lo + 1, in - 1);
    t = s - static_cast<double>(lo);
  };
  std::vector<double> out;
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        int64_t y0, y1, x0, x1;
        double ty, tx;
        source(y, h, oh, y0, y1, ty);
        source(x, w, ow, x0, x1, tx);
        auto at = [&](int64_t yy, int64_t xx) { return v[(ch * h + yy) * w + xx]; };
        out.push_back((1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x1)) + ty * ((1 - tx) * at(y1, x0) + tx * at(y1, x1)));
      }
  return out;
}

TEST(Resize, BilinearMatchesADoubleReference) {
  Generator g(5);
  const Tensor image = rand({2, 5, 7}, Options(DType::Float64), &g);
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{3, 4}, {9, 11}, {5, 2}, {1, 1}}) {
    const Tensor out = resize(image, oh, ow);
    ASSERT_EQ(out.shape(), Shape({2, oh, ow}));
    const std::vector<double> want = bilinear_reference(image, oh, ow), got = out.to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << oh << "x" << ow << " at " << i;
  }
  // A batch resizes each image; the same size is a copy.
  const Tensor batch = stack(std::vector<Tensor>{image, mul(image, 2.0)}, 0);
  EXPECT_TRUE(test::tensors_equal(resize(batch, 3, 4).select(0, 0), resize(image, 3, 4)));
  EXPECT_TRUE(test::tensors_equal(resize(batch, 3, 4).select(0, 1), resize(mul(image, 2.0), 3, 4)));
  EXPECT_TRUE(test::tensors_equal(resize(image, 5, 7), image));
}

TEST(Resize, Uint8RoundsTheFloatResultAndAnIntSizeIsTheShorterSide) {
  Generator g(6);
  const Tensor image = randint(0, 256, {3, 7, 10}, DType::UInt8, &g);
  const Tensor out = resize(image, 5);
  ASSERT_EQ(out.shape(), Shape({3, 5, 7}));  // 5 * 10 / 7 = 7, rounded down as int() does
  EXPECT_EQ(out.dtype(), DType::UInt8);
  const std::vector<double> want = bilinear_reference(image, 5, 7);
  const std::vector<int64_t> got = out.to(DType::Int64).to_vector<int64_t>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(static_cast<double>(got[i]), want[i], 0.5 + 1e-4) << i;
  EXPECT_EQ(resize(zeros({1, 20, 10}), 5).shape(), Shape({1, 10, 5}));
  EXPECT_EQ(resize(zeros({1, 10, 20}), 5).shape(), Shape({1, 5, 10}));
}

TEST(CenterCrop, OffsetsRoundHalfToEvenAsTorchvision) {
  const Tensor image = numbered(1, 1, 7, 6).select(0, 0);
  // (7 - 2) / 2 = 2.5 -> 2 and (6 - 3) / 2 = 1.5 -> 2: rows 2..3, columns 2..4.
  const Tensor out = center_crop(image, 2, 3);
  EXPECT_EQ(out.to(DType::Int64).to_vector<int64_t>(), (std::vector<int64_t>{23, 24, 25, 33, 34, 35}));
  // (7 - 4) / 2 = 1.5 -> 2; (6 - 1) / 2 = 2.5 -> 2.
  EXPECT_EQ(center_crop(image, 4, 1).to(DType::Int64).to_vector<int64_t>(), (std::vector<int64_t>{23, 33, 43, 53}));
  EXPECT_TRUE(test::tensors_equal(center_crop(image, 7, 6), image));
  expect_error([&] { center_crop(image, 8, 1); }, {"center_crop", "8 x 1", "[1, 7, 6]"});
}

TEST(RandomResizedCrop, DeterministicPerSeedInsideTheImageAndFallsBackToTheCentre) {
  Generator g(7);
  const Tensor image = randint(0, 256, {3, 40, 30}, DType::UInt8, &g);
  const Tensor a = random_resized_crop(image, 16, 11), b = random_resized_crop(image, 16, 11);
  EXPECT_EQ(a.shape(), Shape({3, 16, 16}));
  EXPECT_TRUE(test::tensors_equal(a, b));
  std::set<std::vector<int64_t>> distinct;
  for (uint64_t seed = 0; seed < 8; ++seed) distinct.insert(random_resized_crop(image, 16, seed).to(DType::Int64).to_vector<int64_t>());
  EXPECT_GT(distinct.size(), 6u);
  // The whole area at the image's own ratio is the image resized.
  const Tensor square = rand({2, 12, 12}, Options(DType::Float64), &g);
  EXPECT_TRUE(test::tensors_equal(random_resized_crop(square, 6, 3, {1.0, 1.0}, {1.0, 1.0}), resize(square, 6, 6)));
  // Half of a 100 x 10 image as a square cannot fit: ten failed draws, then the central
  // 10 x 10 (the ratio clamped to 1).
  const Tensor tall = rand({1, 100, 10}, Options(DType::Float64), &g);
  EXPECT_TRUE(test::tensors_equal(random_resized_crop(tall, 5, 1, {0.5, 0.5}, {1.0, 1.0}),
                                  resize(center_crop(tall, 10, 10), 5, 5)));
  expect_error([&] { random_resized_crop(image, 16, 0, {0.5, 0.2}); }, {"random_resized_crop", "scale"});
  expect_error([&] { random_resized_crop(zeros({4, 4}), 2, 0); }, {"random_resized_crop", "[C, H, W]"});
  expect_error([&] { resize(zeros({1, 4, 4}, Options(DType::Int32)), 2); }, {"resize", "uint8 or floating", "int32"});
}

}  // namespace
}  // namespace wick
