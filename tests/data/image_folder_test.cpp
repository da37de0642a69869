#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <wick/data/data_loader.h>
#include <wick/data/image_folder.h>
#include <wick/wick.h>

#include "tests/data/allocation_limit.h"
#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

// An image whose pixels name it: channel c of pixel (y, x) is seed + 10 c + 3 y + x.
Tensor image(int64_t c, int64_t h, int64_t w, int64_t seed) {
  Tensor t = empty({c, h, w}, DType::UInt8);
  uint8_t* p = t.data<uint8_t>();
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) *p++ = static_cast<uint8_t>(seed + 10 * k + 3 * y + x);
  return t;
}

TEST(Png, RoundTripsEveryChannelCount) {
  test::TempDir dir;
  for (int64_t c = 1; c <= 4; ++c) {
    const std::string p = dir.file("i" + std::to_string(c) + ".png");
    Tensor t = image(c, 5, 7, c);
    write_png(p, t);
    Tensor back = read_png(p);
    EXPECT_EQ(back.shape(), Shape({c, 5, 7}));
    EXPECT_EQ(back.to_vector<int64_t>(), t.to_vector<int64_t>()) << c;
  }
  expect_error([&] { read_png(dir.file("i3.png"), 34); }, {"7 x 5 pixels", "limit of 34"});
  std::ofstream(dir.file("bad.png")) << "not a png at all";
  expect_error([&] { read_png(dir.file("bad.png")); }, {"read_png", "bad.png"});
  expect_error([&] { write_png(dir.file("x.png"), zeros({5, 2, 2})); }, {"write_png", "[5, 2, 2]"});
}

TEST(ImageFolder, ClassesAreSortedSubfoldersAndLabelsFollow) {
  test::TempDir dir;
  namespace fs = std::filesystem;
  for (const char* cls : {"dog", "cat", "emu"}) fs::create_directories(dir.file(cls));
  write_png(dir.file("dog/b.png"), image(3, 4, 4, 1));
  write_png(dir.file("dog/a.PNG"), image(3, 4, 4, 2));
  write_png(dir.file("cat/z.png"), image(3, 4, 4, 3));
  write_png(dir.file("emu/k.png"), image(3, 4, 4, 4));
  std::ofstream(dir.file("dog/readme.txt")) << "ignored";
  ImageFolder folder(dir.path());
  EXPECT_EQ(folder.classes(), (std::vector<std::string>{"cat", "dog", "emu"}));
  ASSERT_EQ(folder.size(), 4);
  const std::vector<int64_t> seeds = {3, 2, 1, 4}, labels = {0, 1, 1, 2};
  for (int64_t i = 0; i < 4; ++i) {
    Example e = folder.get(i);
    EXPECT_EQ(e.int_at("label"), labels[i]);
    EXPECT_EQ(e.at("image").to_vector<int64_t>(), image(3, 4, 4, seeds[i]).to_vector<int64_t>()) << i;
  }
  DataLoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  DataLoader loader(std::make_shared<ImageFolder>(dir.path()), o);
  Example b = *loader.next();
  EXPECT_EQ(b.at("image").shape(), Shape({4, 3, 4, 4}));
  EXPECT_EQ(b.at("label").to_vector<int64_t>(), labels);

  fs::create_directories(dir.file("empty"));
  expect_error([&] { ImageFolder bad(dir.path()); }, {"class folder", "empty", "no image files"});
  expect_error([&] { ImageFolder bad(dir.file("nope")); }, {"is not a folder"});
}

// A decode whose allocation fails is a wick::Error naming the file and the size, not
// std::bad_alloc (issue 48, item 6): under set_reader_allocation_limit, in any build.
TEST(Png, AllocationFailureIsAnErrorNamingTheFileAndTheSize) {
  test::TempDir dir;
  const std::string p = dir.file("a.png");
  write_png(p, image(3, 16, 16, 1));
  {
    test::ReaderAllocationLimit limit(100);
    expect_error([&] { read_png(p); }, {"read_png: '" + p + "': out of memory: cannot allocate 768 bytes for the pixels ([16, 16, 3] uint8)"});
  }
  EXPECT_EQ(read_png(p).shape(), Shape({3, 16, 16}));
}

}  // namespace
}  // namespace wick
