// JPEG decoding and encoding (wick/data/image_jpeg.cpp, libjpeg): pixels within the codec's loss,
// the size limit checked from the header, and every corrupt file an error naming it (never a
// crash: the sanitizer build runs the byte-flipping test under ASan).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include <wick/data/data_loader.h>
#include <wick/data/image_folder.h>
#include <wick/wick.h>

#include "tests/data/allocation_limit.h"
#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

// A smooth image (JPEG's loss is small on gradients): channel c of pixel (y, x) is
// 20 + 50 c + 3 y + 2 x (at most 196 for the sizes below: no wrap-around edge).
Tensor gradient(int64_t c, int64_t h, int64_t w) {
  Tensor t = empty({c, h, w}, DType::UInt8);
  uint8_t* p = t.data<uint8_t>();
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) *p++ = static_cast<uint8_t>(20 + 50 * k + 3 * y + 2 * x);
  return t;
}

int64_t max_abs_difference(const Tensor& a, const Tensor& b) {
  std::vector<int64_t> x = a.to_vector<int64_t>(), y = b.to_vector<int64_t>();
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(Jpeg, RoundTripsGrayAndColourWithinTheCodecsLoss) {
  test::TempDir dir;
  for (int64_t c : {1, 3}) {
    SCOPED_TRACE(c);
    // Odd sizes: partial 8x8 blocks and (for colour) 2x2 chroma subsampling at the edges.
    const Tensor t = gradient(c, 13, 21);
    const std::string p = dir.file("g" + std::to_string(c) + ".jpg");
    write_jpeg(p, t, 95);
    Tensor back = read_jpeg(p);
    EXPECT_EQ(back.shape(), Shape({c, 13, 21}));
    EXPECT_EQ(back.dtype(), DType::UInt8);
    EXPECT_LE(max_abs_difference(back, t), c == 1 ? 3 : 6);
    // Lower quality loses more, and still decodes to the same shape.
    write_jpeg(p, t, 10);
    EXPECT_GT(max_abs_difference(read_jpeg(p), t), 0);
  }
  // A flat image has only DC coefficients: exact.
  const Tensor flat = full({3, 16, 16}, 128.0).to(DType::UInt8);
  write_jpeg(dir.file("flat.jpg"), flat, 90);
  EXPECT_EQ(read_jpeg(dir.file("flat.jpg")).to_vector<int64_t>(), flat.to_vector<int64_t>());
  // No temporary file is left beside a finished one.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().extension(), ".jpg") << entry.path();
}

TEST(Jpeg, LimitsAndBadArgumentsAreRefusedByName) {
  test::TempDir dir;
  write_jpeg(dir.file("a.jpg"), gradient(3, 5, 7));
  expect_error([&] { read_jpeg(dir.file("a.jpg"), 34); }, {"read_jpeg", "7 x 5 pixels", "limit of 34"});
  expect_error([&] { read_jpeg(dir.file("missing.jpg")); }, {"read_jpeg", "missing.jpg", "cannot open"});
  write_bytes(dir.file("text.jpg"), "not a jpeg at all");
  expect_error([&] { read_jpeg(dir.file("text.jpg")); }, {"read_jpeg", "text.jpg"});
  expect_error([&] { write_jpeg(dir.file("x.jpg"), gradient(2, 4, 4)); }, {"write_jpeg", "[2, 4, 4]"});
  expect_error([&] { write_jpeg(dir.file("x.jpg"), zeros({3, 4, 4})); }, {"write_jpeg", "float32"});
  expect_error([&] { write_jpeg(dir.file("x.jpg"), gradient(3, 0, 4)); }, {"write_jpeg", "[3, 0, 4]"});
  expect_error([&] { write_jpeg(dir.file("x.jpg"), gradient(3, 4, 4), 0); }, {"write_jpeg", "quality", "0"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.jpg")));
}

// A file cut short is an error (libjpeg alone would warn and fill the rest with grey), and so
// is every file with bytes flipped that libjpeg notices; none may crash or read out of bounds.
TEST(Jpeg, TruncatedAndCorruptedFilesAreErrorsNotCrashes) {
  test::TempDir dir;
  write_jpeg(dir.file("a.jpg"), gradient(3, 24, 40), 80);
  const std::string good = test::read_file(dir.file("a.jpg"));
  ASSERT_GT(good.size(), 200u);
  for (size_t cut : {size_t{2}, size_t{20}, good.size() / 2, good.size() - 2}) {
    write_bytes(dir.file("cut.jpg"), good.substr(0, cut));
    expect_error([&] { read_jpeg(dir.file("cut.jpg")); }, {"read_jpeg", "cut.jpg"});
  }
  std::mt19937 rng(5);
  int refused = 0, decoded = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string bad = good;
    for (int flips = 0; flips < 3; ++flips) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    write_bytes(dir.file("bad.jpg"), bad);
    try {
      Tensor t = read_jpeg(dir.file("bad.jpg"), 1 << 20);
      EXPECT_EQ(t.dim(), 3);
      ++decoded;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.jpg"), std::string::npos) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_EQ(refused + decoded, 200);
}

TEST(Jpeg, ImageFolderMixesFormatsAndDecodesByContent) {
  test::TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir.file("a"));
  fs::create_directories(dir.file("b"));
  const Tensor flat = full({3, 8, 8}, 200.0).to(DType::UInt8);
  write_jpeg(dir.file("a/1.jpg"), flat);
  write_jpeg(dir.file("a/2.JPEG"), flat);
  write_png(dir.file("b/3.jpg"), flat);  // a PNG by content, whatever its name says
  ImageFolder folder(dir.path());
  ASSERT_EQ(folder.size(), 3);
  DataLoaderOptions o;
  o.batch_size = 3;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<ImageFolder>(dir.path()), o);
  Example b = *loader.next();
  EXPECT_EQ(b.at("image").shape(), Shape({3, 3, 8, 8}));
  EXPECT_EQ(b.at("image").to_vector<int64_t>(), std::vector<int64_t>(3 * 3 * 64, 200));
  EXPECT_EQ(b.at("label").to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
  write_bytes(dir.file("b/4.png"), "GIF89a...");
  expect_error([&] { ImageFolder(dir.path()).get(3); }, {"read_image", "4.png", "neither a PNG nor a JPEG"});
}

// A decode whose allocation fails is a wick::Error naming the file and the size, not
// std::bad_alloc (issue 48, item 6): under set_reader_allocation_limit, in any build.
TEST(Jpeg, AllocationFailureIsAnErrorNamingTheFileAndTheSize) {
  test::TempDir dir;
  const std::string p = dir.file("a.jpg");
  write_jpeg(p, gradient(3, 16, 16));
  {
    test::ReaderAllocationLimit limit(100);
    expect_error([&] { read_jpeg(p); }, {"read_jpeg: '" + p + "': out of memory: cannot allocate 768 bytes for the pixels ([16, 16, 3] uint8)"});
  }
  EXPECT_EQ(read_jpeg(p).shape(), Shape({3, 16, 16}));
}

}  // namespace
}  // namespace wick
