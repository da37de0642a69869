#include <gtest/gtest.h>

#include <wick/data/safetensors_dataset.h>
#include <wick/wick.h>

#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

TEST(SafetensorsDataset, RowsOfEachTensorAreExamples) {
  test::TempDir dir;
  const std::string p = dir.file("d.safetensors");
  save_safetensors(p, {{"label", tensor<int64_t>({4, 5, 6})}, {"image", arange(0, 12).to(DType::UInt8).view({3, 4})}});
  auto all = safetensors_dataset(p);
  EXPECT_EQ(all->size(), 3);
  Example e = all->get(1);
  EXPECT_EQ(e.names(), (std::vector<std::string>{"image", "label"}));  // name order
  EXPECT_EQ(e.at("image").to_vector<int64_t>(), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(e.int_at("label"), 5);
  EXPECT_EQ(safetensors_dataset(p, {"label"})->get(2).names(), std::vector<std::string>{"label"});
  test::expect_error([&] { safetensors_dataset(p, {"labels"}); }, {"no tensor 'labels'", "image, label"});
  save_safetensors(p, {{"a", zeros({3})}, {"b", zeros({2})}});
  test::expect_error([&] { safetensors_dataset(p); }, {"d.safetensors", "field 'b'", "2 examples"});
}

}  // namespace
}  // namespace wick
