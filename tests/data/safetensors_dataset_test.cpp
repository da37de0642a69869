#include <gtest/gtest.h>

#include <cstdio>

#include <fstream>
#include <string>

#include <wick/data/data_loader.h>
#include <wick/data/safetensors_dataset.h>
#include <wick/wick.h>

#include "tests/data/allocation_limit.h"
#include "tests/data/data_limit.h"
#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

// A safetensors file's first 8 bytes: the length of `header`, little-endian.
std::string header_length(const std::string& header) {
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return len;
}

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
  test::expect_error([&] { safetensors_dataset(p); }, {"d.safetensors", "field 'b'", "2 rows"});
  // Every dtype the format holds, rows copied out of the mapping bit for bit.
  const Tensor f16 = (arange(0.0, 6.0) / 3.0).to(DType::Float16).view({3, 2});
  const Tensor bf16 = (arange(0.0, 6.0) / 7.0).to(DType::BFloat16).view({3, 2});
  save_safetensors(p, {{"f64", arange(0.0, 3.0)}, {"f16", f16}, {"bf16", bf16}, {"i32", tensor<int32_t>({-1, 0, 1})},
                       {"b", tensor<bool>({true, false, true})}});
  Example row = safetensors_dataset(p)->get(2);
  EXPECT_EQ(row.at("f16").to(DType::Float64).to_vector<double>(), f16[2].to(DType::Float64).to_vector<double>());
  EXPECT_EQ(row.at("bf16").to(DType::Float64).to_vector<double>(), bf16[2].to(DType::Float64).to_vector<double>());
  EXPECT_EQ(row.at("bf16").dtype(), DType::BFloat16);
  EXPECT_EQ(row.int_at("i32"), 1);
  EXPECT_EQ(row.at("b").dtype(), DType::Bool);
  EXPECT_EQ(row.float_at("f64"), 2.0);
}

// The header is checked before anything is mapped: a corrupt file is refused naming it.
TEST(SafetensorsDataset, CorruptHeadersAreRefusedBeforeMapping) {
  test::TempDir dir;
  const std::string p = dir.file("bad.safetensors");
  std::string header = R"({"x":{"dtype":"U8","shape":[16,4],"data_offsets":[0,64]}})";
  while (header.size() % 8 != 0) header += ' ';
  auto write_file = [&](const std::string& h, size_t data_bytes) {
    const std::string len = header_length(h);
    std::ofstream(p, std::ios::binary) << len << h << std::string(data_bytes, 'a');
  };
  write_file(header, 16);  // declares 64 bytes, holds 16
  test::expect_error([&] { safetensors_dataset(p); }, {"safetensors_dataset", "bad.safetensors", "data_offsets"});
  write_file(header, 64);
  EXPECT_EQ(safetensors_dataset(p)->size(), 16);
  std::ofstream(p, std::ios::binary) << std::string(8, '\xff');
  test::expect_error([&] { safetensors_dataset(p); }, {"safetensors_dataset", "header length"});
}

// A 256 MiB tensor read through the loader under a data limit of 64 MiB more than the
// process uses: the file is mapped, not loaded (tests/data/data_limit.h).
TEST(SafetensorsDataset, MappedFileIsReadUnderADataLimitSmallerThanIt) {
#ifdef WICK_SANITIZER_ALLOCATOR
  GTEST_SKIP() << "built with a sanitizer, whose allocator RLIMIT_DATA does not bind (tests/data/data_limit.h)";
#endif
  test::TempDir dir;
  const std::string p = dir.file("big.safetensors");
  const int64_t rows = 65536, cols = 4096;  // 256 MiB of uint8
  std::string header = R"({"row":{"dtype":"U8","shape":[65536,4096],"data_offsets":[0,268435456]}})";
  while ((8 + header.size()) % 8 != 0) header += ' ';
  ASSERT_TRUE(test::write_marked_rows(p, header_length(header) + header, rows, cols));
  const int status = test::run_under_data_limit(64u << 20, static_cast<size_t>(rows * cols), [&] {
    DataLoaderOptions o;
    o.batch_size = 256;
    o.num_workers = 2;
    DataLoader loader(safetensors_dataset(p), o);
    return test::check_marked_rows(loader, "row", rows, cols);
  });
  EXPECT_EQ(status, 0) << test::kDataLimitCodes << ", 14/15: rows wrong, >= 1000: signal";
}

// load_safetensors: a read whose allocation fails is a wick::Error naming the file and the
// size, not std::bad_alloc (issue 48, item 6): under set_reader_allocation_limit, in any build.
TEST(Safetensors, AllocationFailureIsAnErrorNamingTheFileAndTheSize) {
  test::TempDir dir;
  const std::string p = dir.file("a.safetensors");
  save_safetensors(p, {{"a", full({100, 50}, 1.5, DType::Float32)}});
  {
    test::ReaderAllocationLimit limit(10000);
    test::expect_error([&] { load_safetensors(p); }, {"load_safetensors: " + p +
                                                      ": out of memory: cannot allocate 20000 bytes for tensor 'a' "
                                                      "([100, 50] float32)"});
  }
  {
    test::ReaderAllocationLimit limit(10);
    test::expect_error([&] { load_safetensors(p); }, {"load_safetensors: " + p + ": out of memory: cannot allocate ",
                                                      " bytes for the header"});
  }
  EXPECT_EQ(load_safetensors(p).at("a").sum().item<double>(), 7500.0);
}

// The same under a real address-space limit, 1 GiB above what the process uses: a file of
// 1.5 GiB (sparse on disk) whose header declares one uint8 tensor of that size.
TEST(Safetensors, AllocationFailureUnderAnAddressSpaceLimitIsAnError) {
  if (!test::kAddressLimitWorks) GTEST_SKIP() << "address-space limits do not work under a sanitizer's allocator";
  test::TempDir dir;
  const std::string p = dir.file("big.safetensors");
  std::string header = R"({"big":{"dtype":"U8","shape":[1536,1048576],"data_offsets":[0,1610612736]}})";
  while (header.size() % 8 != 0) header += ' ';
  ASSERT_TRUE(test::write_marked_rows(p, header_length(header) + header, 1536, 1 << 20));
  const std::string e = test::read_under_address_limit([&] { load_safetensors(p); });
  std::printf("[          ] %s\n", e.c_str());
  EXPECT_NE(e.find("load_safetensors: " + p +
                   ": out of memory: cannot allocate 1610612736 bytes for tensor 'big' ([1536, 1048576] uint8)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace wick
