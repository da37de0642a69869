#include <gtest/gtest.h>

#include <cstdio>

#include <fstream>
#include <vector>

#include <wick/data/cifar.h>
#include <wick/wick.h>

#include "tests/data/allocation_limit.h"
#include "tests/data/gzip_bomb.h"
#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;
using test::TempDir;

// n images whose bytes are (7 i + j) mod 256, labels (3 i) mod classes.
Dataset cifar_like(int64_t n, int64_t classes, int64_t first = 0) {
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 3072));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < 3072; ++j) pixels[i * 3072 + j] = static_cast<uint8_t>((7 * (first + i) + j) % 256);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[i] = 3 * (first + i) % classes;
  return Dataset(tensor<uint8_t>(pixels, {n, 3, 32, 32}), tensor<int64_t>(labels));
}

void expect_same(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.inputs.shape(), b.inputs.shape());
  EXPECT_EQ(a.inputs.to_vector<uint8_t>(), b.inputs.to_vector<uint8_t>());
  EXPECT_EQ(a.targets.to_vector<int64_t>(), b.targets.to_vector<int64_t>());
}

TEST(Cifar, Cifar10RoundTripOverSeveralFiles) {
  TempDir dir;
  const std::string base = dir.file("cifar-10-batches-bin");
  std::filesystem::create_directories(base);
  for (int f = 1; f <= 5; ++f) write_cifar(base + "/data_batch_" + std::to_string(f) + ".bin", cifar_like(3, 10, 3 * (f - 1)), CifarKind::Cifar10);
  write_cifar(base + "/test_batch.bin", cifar_like(4, 10), CifarKind::Cifar10);
  EXPECT_EQ(test::read_file_bytes(base + "/test_batch.bin").size(), 4u * 3073);
  expect_same(load_cifar10(dir.path(), true), cifar_like(15, 10));
  expect_same(load_cifar10(dir.path(), false), cifar_like(4, 10));
  expect_same(load_cifar10(base, false), cifar_like(4, 10));  // the batches folder itself works too
}

TEST(Cifar, Cifar100FineAndCoarse) {
  TempDir dir;
  const std::string base = dir.file("cifar-100-binary");
  std::filesystem::create_directories(base);
  Dataset fine = cifar_like(6, 100);
  Dataset coarse = cifar_like(6, 20);
  // Both labels at once: targets [N, 2] = (coarse, fine).
  Tensor both = stack({coarse.targets, fine.targets}, 1);
  write_cifar(base + "/train.bin", Dataset(fine.inputs, both), CifarKind::Cifar100Fine);
  std::vector<uint8_t> bytes = test::read_file_bytes(base + "/train.bin");
  ASSERT_EQ(bytes.size(), 6u * 3074);
  EXPECT_EQ(bytes[3074], 3);   // coarse label of record 1
  EXPECT_EQ(bytes[3075], 3);   // fine label of record 1
  EXPECT_EQ(bytes[2 * 3074 + 1], 6);
  expect_same(load_cifar100(dir.path(), true), fine);
  expect_same(load_cifar100(dir.path(), true, /*coarse=*/true), coarse);
  // One label only: the other byte is 0.
  write_cifar(base + "/test.bin", fine, CifarKind::Cifar100Fine);
  expect_same(load_cifar100(dir.path(), false), fine);
  EXPECT_EQ(load_cifar100(dir.path(), false, true).targets.to_vector<int64_t>(), std::vector<int64_t>(6, 0));
}

TEST(Cifar, SizeNotAMultipleOfTheRecord) {
  TempDir dir;
  write_cifar(dir.file("a.bin"), cifar_like(2, 10), CifarKind::Cifar10);
  std::vector<uint8_t> bytes = test::read_file_bytes(dir.file("a.bin"));
  bytes.pop_back();
  std::ofstream(dir.file("cut.bin"), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  expect_error([&] { read_cifar({dir.file("a.bin"), dir.file("cut.bin")}, CifarKind::Cifar10); },
               {"read_cifar", dir.file("cut.bin"), "6145", "not a multiple", "3073"});
  // A CIFAR-10 file read as CIFAR-100 is caught by the size too.
  expect_error([&] { read_cifar({dir.file("a.bin")}, CifarKind::Cifar100Fine); }, {"not a multiple", "3074"});
}

// A gzip bomb named like CIFAR-10's test batch (issue 25, item 3): 128 MiB of zeros from a
// file of about 130 KB. A CIFAR file has no header; its record count is what bounds it:
// load_cifar10's files hold 10,000 records (30.7 MB), and inflation stops there instead of
// running to the global 4 GiB limit.
TEST(Cifar, GzipBombStopsAtTheRecordLimit) {
  TempDir dir;
  const std::vector<uint8_t> bomb = test::gzip_bomb(dir, {}, 128);
  ASSERT_LT(bomb.size(), 256u << 10);
  {
    std::ofstream f(dir.file("test_batch.bin"), std::ios::binary);
    f.write(reinterpret_cast<const char*>(bomb.data()), static_cast<std::streamsize>(bomb.size()));
  }
  const test::ChildRun r = test::run_in_child([&] { load_cifar10(dir.path(), false); });
  ASSERT_GE(r.peak_growth_kib, 0) << "the child did not report";
  EXPECT_NE(r.error.find("the gzip data inflates to more than the 30730000 bytes that 10000 CIFAR-10 records take"),
            std::string::npos)
      << r.error;
  EXPECT_LT(r.peak_growth_kib, 96 << 10) << "KiB";  // about 30 MB and the buffer's growth, not 128 MiB
  std::printf("[          ] 128 MiB gzip bomb as a CIFAR-10 batch: refused in %.3f s, peak memory +%ld KiB\n", r.seconds,
              r.peak_growth_kib);
  // read_cifar's own limit, and the same limit on a raw file.
  expect_error([&] { read_cifar({dir.file("test_batch.bin")}, CifarKind::Cifar100Fine, 3); },
               {"read_cifar", "inflates to more than the 9222 bytes that 3 CIFAR-100 (fine labels) records take"});
  write_cifar(dir.file("four.bin"), cifar_like(4, 10), CifarKind::Cifar10);
  expect_error([&] { read_cifar({dir.file("four.bin")}, CifarKind::Cifar10, 3); },
               {"read_cifar", dir.file("four.bin"), "4 CIFAR-10 records, more than max_records_per_file (3)"});
  EXPECT_EQ(read_cifar({dir.file("four.bin")}, CifarKind::Cifar10, 4).size(), 4);
}

TEST(Cifar, MissingFile) {
  TempDir dir;
  expect_error([&] { load_cifar10(dir.path(), false); }, {"read_cifar", "missing file", "test_batch.bin"});
  expect_error([&] { load_cifar100(dir.path(), true); }, {"read_cifar", "missing file", "train.bin"});
}

TEST(Cifar, LabelOutOfRange) {
  TempDir dir;
  Dataset d = cifar_like(3, 100);  // labels 0, 3, 6: fine for CIFAR-100...
  write_cifar(dir.file("c.bin"), d, CifarKind::Cifar100Fine);
  EXPECT_NO_THROW(read_cifar({dir.file("c.bin")}, CifarKind::Cifar100Fine));
  // ... but a CIFAR-10 file with label 12 is not.
  std::vector<uint8_t> bytes(2 * 3073, 0);
  bytes[3073] = 12;
  std::ofstream(dir.file("bad.bin"), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  expect_error([&] { read_cifar({dir.file("bad.bin")}, CifarKind::Cifar10); },
               {"read_cifar", dir.file("bad.bin"), "record 1", "label 12", "out of range"});
  expect_error([&] { write_cifar(dir.file("w.bin"), cifar_like(2, 100, 4), CifarKind::Cifar10); },
               {"write_cifar", "example 0", "label 12", "10 classes"});
}

TEST(Cifar, WriteChecksShapes) {
  TempDir dir;
  Dataset small(zeros({2, 3, 16, 16}, DType::UInt8), zeros({2}, DType::Int64));
  expect_error([&] { write_cifar(dir.file("s.bin"), small, CifarKind::Cifar10); },
               {"write_cifar", "uint8 [N, 3, 32, 32]", "[2, 3, 16, 16]"});
}

// A read whose allocation fails is a wick::Error naming the files and the size, not
// std::bad_alloc (issue 48, item 6): under set_reader_allocation_limit, in any build.
TEST(Cifar, AllocationFailureIsAnErrorNamingTheFileAndTheSize) {
  TempDir dir;
  const std::string a = dir.file("a.bin"), b = dir.file("b.bin");
  write_cifar(a, cifar_like(10, 10), CifarKind::Cifar10);  // 10 records of 3073 bytes
  write_cifar(b, cifar_like(10, 10, 10), CifarKind::Cifar10);
  {
    test::ReaderAllocationLimit limit(20000);
    expect_error([&] { read_cifar({a, b}, CifarKind::Cifar10); },
                 {"read_cifar: " + a + ": out of memory: cannot allocate 30730 bytes for the file's contents"});
  }
  {
    test::ReaderAllocationLimit limit(40000);
    expect_error([&] { read_cifar({a, b}, CifarKind::Cifar10); },
                 {"read_cifar: " + a + ", " + b +
                  ": out of memory: cannot allocate 61440 bytes for the images of 20 records ([20, 3, 32, 32] uint8)"});
  }
  EXPECT_EQ(read_cifar({a, b}, CifarKind::Cifar10).size(), 20);
}

// The same under a real address-space limit, 1 GiB above what the process uses: a CIFAR-10
// file of 1.5 GiB (sparse on disk).
TEST(Cifar, AllocationFailureUnderAnAddressSpaceLimitIsAnError) {
  if (!test::kAddressLimitWorks) GTEST_SKIP() << "address-space limits do not work under a sanitizer's allocator";
  TempDir dir;
  const std::string p = dir.file("big.bin");
  ASSERT_TRUE(test::write_marked_rows(p, "", 524288, 3073));
  const std::string e = test::read_under_address_limit([&] { read_cifar({p}, CifarKind::Cifar10, 600000); });
  std::printf("[          ] %s\n", e.c_str());
  EXPECT_NE(e.find("read_cifar: " + p + ": out of memory: cannot allocate 1611137024 bytes for the file's contents"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace wick
