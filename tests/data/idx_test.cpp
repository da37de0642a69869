#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include <wick/data/file_io.h>
#include <wick/data/cifar.h>
#include <wick/data/idx.h>
#include <wick/wick.h>

#include "tests/data/allocation_limit.h"
#include "tests/data/gzip_bomb.h"
#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;
using test::TempDir;
using test::values;

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct TypeCase {
  DType dtype;           // the tensor written
  IdxType type;          // as this IDX type
  DType read_back;       // the dtype read_idx gives
  std::vector<double> v;
};

class IdxRoundTrip : public ::testing::TestWithParam<bool> {};

TEST_P(IdxRoundTrip, EveryElementType) {
  const bool gzip = GetParam();
  TempDir dir;
  const std::vector<TypeCase> cases = {
      {DType::UInt8, IdxType::UInt8, DType::UInt8, {0, 1, 127, 128, 254, 255}},
      {DType::Int32, IdxType::Int8, DType::Int32, {-128, -1, 0, 1, 100, 127}},
      {DType::Int32, IdxType::Int16, DType::Int32, {-32768, -300, -1, 0, 300, 32767}},
      {DType::Int32, IdxType::Int32, DType::Int32, {-2147483648.0, -70000, -1, 0, 70000, 2147483647.0}},
      {DType::Float32, IdxType::Float32, DType::Float32, {-1.5, 0, 0.1f, 3.25, 1e30f, -1e-30f}},
      {DType::Float64, IdxType::Float64, DType::Float64, {-1.5, 0, 0.1, 3.25, 1e300, -1e-300}},
  };
  for (const TypeCase& c : cases) {
    SCOPED_TRACE(dtype_name(c.dtype) + std::string(" as IDX type ") + std::to_string(int(c.type)));
    Tensor t = tensor<double>(c.v, {2, 3}).to(c.dtype);
    const std::string path = dir.file("t.idx");
    write_idx(path, t, gzip, c.type);
    std::vector<uint8_t> raw = test::read_file_bytes(path);
    ASSERT_GE(raw.size(), 2u);
    EXPECT_EQ(gzip, raw[0] == 0x1f && raw[1] == 0x8b);
    Tensor back = read_idx(path);
    EXPECT_TRUE(test::matches(back, {2, 3}, c.read_back, c.v, 0, 0));
  }
}

INSTANTIATE_TEST_SUITE_P(GzipAndRaw, IdxRoundTrip, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "gzip" : "raw"; });

TEST(Idx, DefaultTypesFollowTheDtype) {
  TempDir dir;
  write_idx(dir.file("a"), tensor<int64_t>({5, -7, 9}), false);
  EXPECT_TRUE(test::matches(read_idx(dir.file("a")), {3}, DType::Int32, {5, -7, 9}));
  write_idx(dir.file("b"), tensor<float>({1.5f, 2.5f}, {2, 1}), true);
  EXPECT_TRUE(test::matches(read_idx(dir.file("b")), {2, 1}, DType::Float32, {1.5, 2.5}));
  write_idx(dir.file("c"), tensor<uint8_t>({3, 4}), false);
  EXPECT_EQ(test::read_file_bytes(dir.file("c")), (std::vector<uint8_t>{0, 0, 0x08, 1, 0, 0, 0, 2, 3, 4}));
}

TEST(Idx, BigEndianLayoutOnDisk) {
  TempDir dir;
  // i16 [2]: -2 and 258, written by hand.
  write_bytes(dir.file("h"), {0, 0, 0x0B, 1, 0, 0, 0, 2, 0xFF, 0xFE, 0x01, 0x02});
  EXPECT_TRUE(test::matches(read_idx(dir.file("h")), {2}, DType::Int32, {-2, 258}));
  write_idx(dir.file("f"), tensor<float>({1.0f}), false);
  EXPECT_EQ(test::read_file_bytes(dir.file("f")), (std::vector<uint8_t>{0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, 0x80, 0, 0}));
}

TEST(Idx, WriteRejectsValuesThatDoNotFit) {
  TempDir dir;
  expect_error([&] { write_idx(dir.file("x"), tensor<int32_t>({1, 300}), false, IdxType::UInt8); },
               {"write_idx", "300", "u8"});
  expect_error([&] { write_idx(dir.file("x"), tensor<float>({1.5f}), false, IdxType::Int16); },
               {"write_idx", "float32", "i16"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("x")));
}

TEST(Idx, WriteIsAtomicAndLeavesNoTemporaries) {
  TempDir dir;
  write_idx(dir.file("t"), tensor<uint8_t>({1, 2, 3}), true);
  write_idx(dir.file("t"), tensor<uint8_t>({4, 5}), true);  // replaces the old file
  EXPECT_TRUE(test::matches(read_idx(dir.file("t")), {2}, DType::UInt8, {4, 5}));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(Idx, MissingFile) {
  TempDir dir;
  expect_error([&] { read_idx(dir.file("nope")); }, {"read_idx", dir.file("nope"), "No such file"});
}

TEST(Idx, BadMagic) {
  TempDir dir;
  write_bytes(dir.file("m"), {0x12, 0x34, 0x08, 1, 0, 0, 0, 1, 7});
  expect_error([&] { read_idx(dir.file("m")); }, {"read_idx", dir.file("m"), "bad magic", "0x12"});
  write_bytes(dir.file("t"), {0, 0, 0x07, 1, 0, 0, 0, 1, 7});
  expect_error([&] { read_idx(dir.file("t")); }, {"read_idx", dir.file("t"), "unknown element type code 0x07"});
}

TEST(Idx, Truncated) {
  TempDir dir;
  write_bytes(dir.file("short"), {0, 0});
  expect_error([&] { read_idx(dir.file("short")); }, {dir.file("short"), "truncated"});
  write_bytes(dir.file("header"), {0, 0, 0x08, 3, 0, 0, 0, 2, 0, 0});
  expect_error([&] { read_idx(dir.file("header")); }, {dir.file("header"), "truncated", "header"});
  write_bytes(dir.file("data"), {0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0});
  expect_error([&] { read_idx(dir.file("data")); },
               {dir.file("data"), "truncated", "[2]", "needs 8 bytes", "only 6"});
}

TEST(Idx, ExtraDataDisagreesWithTheHeader) {
  TempDir dir;
  write_bytes(dir.file("long"), {0, 0, 0x08, 1, 0, 0, 0, 2, 1, 2, 3});
  expect_error([&] { read_idx(dir.file("long")); }, {dir.file("long"), "disagrees with the header", "needs 2", "3 follow"});
}

TEST(Idx, TruncatedAndCorruptGzip) {
  TempDir dir;
  write_idx(dir.file("g"), arange(0, 2000, 1, DType::Int32), true);
  std::vector<uint8_t> gz = test::read_file_bytes(dir.file("g"));
  write_bytes(dir.file("cut"), std::vector<uint8_t>(gz.begin(), gz.begin() + gz.size() / 2));
  expect_error([&] { read_idx(dir.file("cut")); }, {"read_idx", dir.file("cut"), "truncated gzip"});
  std::vector<uint8_t> bad = gz;
  for (size_t i = 12; i < 40 && i < bad.size(); ++i) bad[i] ^= 0x5A;
  write_bytes(dir.file("bad"), bad);
  expect_error([&] { read_idx(dir.file("bad")); }, {"read_idx", dir.file("bad"), "gzip"});
}

TEST(FileIo, ConcatenatedGzipMembersAreJoined) {
  TempDir dir;
  std::vector<uint8_t> first(5000), second(3000);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < second.size(); ++i) second[i] = static_cast<uint8_t>(i * 13 + 1);
  write_file_atomic(dir.file("a.gz"), first, true, "test");
  write_file_atomic(dir.file("b.gz"), second, true, "test");
  std::vector<uint8_t> both = test::read_file_bytes(dir.file("a.gz")), b = test::read_file_bytes(dir.file("b.gz"));
  both.insert(both.end(), b.begin(), b.end());
  write_bytes(dir.file("ab.gz"), both);
  std::vector<uint8_t> expected = first;
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(read_file_bytes(dir.file("ab.gz"), "test"), expected);
  EXPECT_EQ(read_file_bytes(dir.file("a.gz"), "test"), first);
}

// A zero size first made the element count 0, so the 2^48 bound never saw the huge sizes
// after it, and the reader built a tensor whose strides overflowed int64.
TEST(Idx, ZeroThenHugeSizesAreRejected) {
  TempDir dir;
  write_bytes(dir.file("z"), {0, 0, 0x08, 3, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  expect_error([&] { read_idx(dir.file("z")); },
               {"read_idx", dir.file("z"), "[0, 4294967295, 4294967295]", "implausibly large"});
  // Zero sizes among small ones are fine.
  write_bytes(dir.file("ok"), {0, 0, 0x08, 2, 0, 0, 0, 0, 0, 0, 0, 7});
  EXPECT_EQ(read_idx(dir.file("ok")).shape(), (Shape{0, 7}));
}

// Inflated data beyond max_bytes stops the read, wherever the stream says it ends.
TEST(FileIo, GzipBombStopsAtTheLimit) {
  TempDir dir;
  write_file_atomic(dir.file("bomb.gz"), std::vector<uint8_t>(8 << 20, 0), /*gzip=*/true, "test");
  ASSERT_LT(test::read_file_bytes(dir.file("bomb.gz")).size(), 64u << 10);
  expect_error([&] { read_file_bytes(dir.file("bomb.gz"), "test", 1 << 20); },
               {"test", dir.file("bomb.gz"), "inflates to more than the limit of 1048576 bytes"});
  EXPECT_EQ(read_file_bytes(dir.file("bomb.gz"), "test", 8 << 20).size(), size_t{8} << 20);
  write_bytes(dir.file("raw"), std::vector<uint8_t>(1000, 1));
  expect_error([&] { read_file_bytes(dir.file("raw"), "test", 999); },
               {"test", dir.file("raw"), "more than the limit of 999 bytes"});
  EXPECT_EQ(read_file_bytes(dir.file("raw"), "test", 1000).size(), 1000u);
}

// A gzip bomb behind a small IDX header (issue 25, item 3): the header declares 1,000 bytes
// of u8, and the stream goes on with 256 MiB of zeros, from a file of about 260 KB. The reader
// inflated all of it (its only bound was 4 GiB) before parse_idx saw that the size disagreed
// with the header; now inflation stops as soon as it passes what the header declares.
TEST(Idx, GzipBombStopsAtWhatTheHeaderDeclares) {
  TempDir dir;
  write_idx(dir.file("head"), zeros({1000}, DType::UInt8));
  const std::vector<uint8_t> bomb = gzip_bomb(dir, test::read_file_bytes(dir.file("head")), 256);
  ASSERT_LT(bomb.size(), 512u << 10);
  write_bytes(dir.file("bomb.gz"), bomb);
  const test::ChildRun r = test::run_in_child([&] { read_idx(dir.file("bomb.gz")); });
  ASSERT_GE(r.peak_growth_kib, 0) << "the child did not report";
  EXPECT_NE(r.error.find("read_idx: " + dir.file("bomb.gz") +
                         ": the gzip data inflates to more than the 1008 bytes the header (shape [1000] of u8) declares"),
            std::string::npos)
      << r.error;
  EXPECT_LT(r.peak_growth_kib, 32 << 10) << "KiB";  // the compressed file and one 64 KiB piece, not 256 MiB
  EXPECT_LT(r.seconds, 2.0);
  std::printf("[          ] 256 MiB gzip bomb behind a 1,008-byte IDX header: refused in %.3f s, peak memory +%ld KiB\n",
              r.seconds, r.peak_growth_kib);
  // One byte more than declared is refused the same way; exactly the declared size reads.
  std::vector<uint8_t> one_more = test::read_file_bytes(dir.file("head"));
  one_more.push_back(0);
  write_file_atomic(dir.file("one-more.gz"), one_more, true, "test");
  expect_error([&] { read_idx(dir.file("one-more.gz")); }, {"read_idx", "inflates to more than the 1008 bytes"});
  write_file_atomic(dir.file("exact.gz"), test::read_file_bytes(dir.file("head")), true, "test");
  EXPECT_EQ(read_idx(dir.file("exact.gz")).shape(), (Shape{1000}));
  // A header split over gzip members is still found, and still bounds what follows.
  std::vector<uint8_t> split;
  for (size_t i = 0; i < 8; i += 2) {
    write_file_atomic(dir.file("part.gz"), std::vector<uint8_t>(one_more.begin() + i, one_more.begin() + i + 2), true, "test");
    const std::vector<uint8_t> part = test::read_file_bytes(dir.file("part.gz"));
    split.insert(split.end(), part.begin(), part.end());
  }
  write_file_atomic(dir.file("rest.gz"), std::vector<uint8_t>(one_more.begin() + 8, one_more.end()), true, "test");
  const std::vector<uint8_t> rest = test::read_file_bytes(dir.file("rest.gz"));
  split.insert(split.end(), rest.begin(), rest.end());
  write_bytes(dir.file("split.gz"), split);
  expect_error([&] { read_idx(dir.file("split.gz")); }, {"read_idx", "inflates to more than the 1008 bytes"});
}

// The gzip trailer's size field (here 4 GiB - 1 in an 18-byte file) was reserved up front.
// Run in a child whose address space is capped 1 GiB above what it uses: a 4 GiB
// allocation fails there with std::bad_alloc. Not under AddressSanitizer, which reserves
// terabytes of address space for its shadow memory.
TEST(FileIo, GzipTrailerSizeIsNotTrusted) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "address-space limits do not work under AddressSanitizer";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "address-space limits do not work under AddressSanitizer";
#endif
#endif
  TempDir dir;
  const std::vector<uint8_t> liar = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  write_bytes(dir.file("liar.gz"), liar);
  for (int reader = 0; reader < 2; ++reader) {
    SCOPED_TRACE(reader == 0 ? "read_idx" : "read_cifar");
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      long pages = 0;
      if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
        std::fclose(f);
      }
      const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (rlim_t{1} << 30);
      struct rlimit limit {cap, cap};
      if (pages == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
      try {
        if (reader == 0)
          read_idx(dir.file("liar.gz"));
        else
          read_cifar({dir.file("liar.gz")}, CifarKind::Cifar10);
      } catch (const Error& e) {
        ::_exit(std::string(e.what()).find("gzip") != std::string::npos ? 0 : 4);
      } catch (const std::bad_alloc&) {
        ::_exit(1);
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(5);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: std::bad_alloc (the trailer's size was allocated), 2: another exception, "
                                         "3: setrlimit failed, 4: a wick::Error not about gzip, 5: no error";
  }
}

// MNIST-like files in a folder: image i has every pixel (i % 256), label i % 10.
Tensor mnist_images(int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n * 28 * 28));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i / (28 * 28) % 256);
  return tensor<uint8_t>(v, {n, 28, 28});
}
Tensor mnist_labels(int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i % 10);
  return tensor<uint8_t>(v);
}

TEST(Mnist, LoadsGzipAndRawFiles) {
  TempDir dir;
  write_idx(dir.file("train-images-idx3-ubyte.gz"), mnist_images(12), true);
  write_idx(dir.file("train-labels-idx1-ubyte.gz"), mnist_labels(12), true);
  write_idx(dir.file("t10k-images-idx3-ubyte"), mnist_images(5), false);
  write_idx(dir.file("t10k-labels-idx1-ubyte"), mnist_labels(5), false);
  Dataset train = load_mnist(dir.path(), true);
  EXPECT_EQ(train.size(), 12);
  EXPECT_EQ(train.inputs.shape(), (Shape{12, 1, 28, 28}));
  EXPECT_EQ(train.inputs.dtype(), DType::UInt8);
  EXPECT_EQ(train.targets.dtype(), DType::Int64);
  EXPECT_EQ(train.targets.to_vector<int64_t>()[11], 1);
  EXPECT_EQ(train.inputs[11].to_vector<int>()[100], 11);
  Dataset test = load_mnist(dir.path(), false);
  EXPECT_EQ(test.size(), 5);
  EXPECT_EQ(test.targets.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(Mnist, CountMismatch) {
  TempDir dir;
  write_idx(dir.file("train-images-idx3-ubyte"), mnist_images(4), false);
  write_idx(dir.file("train-labels-idx1-ubyte"), mnist_labels(3), false);
  expect_error([&] { load_mnist(dir.path(), true); },
               {"load_mnist", "count mismatch", "train-images-idx3-ubyte", "4 images", "3 labels"});
}

TEST(Mnist, MissingFile) {
  TempDir dir;
  write_idx(dir.file("train-images-idx3-ubyte"), mnist_images(4), false);
  expect_error([&] { load_mnist(dir.path(), true); }, {"load_mnist", "missing", dir.file("train-labels-idx1-ubyte")});
}

TEST(Mnist, WrongShapeOrType) {
  TempDir dir;
  write_idx(dir.file("train-images-idx3-ubyte"), mnist_images(4).reshape({4, 784}), false);
  write_idx(dir.file("train-labels-idx1-ubyte"), mnist_labels(4), false);
  expect_error([&] { load_mnist(dir.path(), true); }, {"load_mnist", "train-images-idx3-ubyte", "[N, H, W]", "[4, 784]"});
}

// The real Fashion-MNIST files where the machine has them.
TEST(Mnist, RealFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!file_exists(dir + "/train-labels-idx1-ubyte.gz") && !file_exists(dir + "/train-labels-idx1-ubyte"))
    GTEST_SKIP() << "no Fashion-MNIST files in " << dir;
  Dataset train = load_mnist(dir, true);
  Dataset test = load_mnist(dir, false);
  EXPECT_EQ(train.inputs.shape(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(test.inputs.shape(), (Shape{10000, 1, 28, 28}));
  // The first training image is an ankle boot (class 9), the first test one too.
  EXPECT_EQ(train.targets.to_vector<int64_t>()[0], 9);
  EXPECT_EQ(test.targets.to_vector<int64_t>()[0], 9);
  // Ten balanced classes.
  std::vector<int64_t> counts(10, 0);
  for (int64_t label : train.targets.to_vector<int64_t>()) {
    ASSERT_TRUE(label >= 0 && label < 10);
    ++counts[label];
  }
  for (int64_t c : counts) EXPECT_EQ(c, 6000);
}

// A read whose allocation fails is a wick::Error naming the file and the size, not
// std::bad_alloc (issue 48, item 6): each of the reader's allocations (the raw file, the
// inflated contents, the tensor) under set_reader_allocation_limit, in any build.
TEST(Idx, AllocationFailureIsAnErrorNamingTheFileAndTheSize) {
  TempDir dir;
  // i16 elements decode to int32: the file holds 2 bytes an element, the tensor 4.
  std::vector<int32_t> values(100000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i % 200) - 100;
  const Tensor t = tensor<int32_t>(values);
  const std::string raw = dir.file("a.idx"), gz = dir.file("a.idx.gz");
  write_idx(raw, t, false, IdxType::Int16);  // 4 + 4 + 200000 bytes
  write_idx(gz, t, true, IdxType::Int16);
  {
    test::ReaderAllocationLimit limit(100000);
    expect_error([&] { read_idx(raw); },
                 {"read_idx: " + raw + ": out of memory: cannot allocate 200008 bytes for the file's contents"});
    // Inflation grows its room as data comes out (64 KiB at a time from zlib), doubling up to
    // what the header declares.
    expect_error([&] { read_idx(gz); },
                 {"read_idx: " + gz + ": out of memory: cannot allocate 131072 bytes for the inflated contents (65536 "
                  "bytes so far of the 200008 bytes the header (shape [100000] of i16) declares)"});
  }
  {
    test::ReaderAllocationLimit limit(300000);
    for (const std::string& p : {raw, gz})
      expect_error([&] { read_idx(p); },
                   {"read_idx: " + p + ": out of memory: cannot allocate 400000 bytes for the tensor of shape [100000] (int32)"});
  }
  for (const std::string& p : {raw, gz}) EXPECT_EQ(read_idx(p).to_vector<int32_t>(), t.to_vector<int32_t>());
}

// The same under a real address-space limit, 1 GiB above what the process uses: a gzip'ed
// IDX whose header declares 4 GiB of u8 (and whose data inflates to that: a 4 MiB file), and
// a raw one of 1.5 GiB (sparse on disk), threw std::bad_alloc out of read_idx before.
TEST(Idx, AllocationFailureUnderAnAddressSpaceLimitIsAnError) {
  if (!test::kAddressLimitWorks) GTEST_SKIP() << "address-space limits do not work under a sanitizer's allocator";
  TempDir dir;
  const std::vector<uint8_t> head = {0, 0, 0x08, 4, 0, 0, 0, 4, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0};
  const std::string gz = dir.file("big.idx.gz");
  write_bytes(gz, test::gzip_bomb(dir, head, 4096));
  std::string e = test::read_under_address_limit([&] { read_idx(gz); });
  std::printf("[          ] %s\n", e.c_str());
  EXPECT_NE(e.find("read_idx: " + gz + ": out of memory: cannot allocate "), std::string::npos) << e;
  EXPECT_NE(e.find(" bytes for the inflated contents ("), std::string::npos) << e;
  EXPECT_NE(e.find("of the 4294967316 bytes the header (shape [4, 1024, 1024, 1024] of u8) declares)"), std::string::npos)
      << e;
  const std::string raw = dir.file("big.idx");
  ASSERT_TRUE(test::write_marked_rows(raw, std::string("\0\0\x08\x03\0\0\x06\0\0\0\x04\0\0\0\x04\0", 16), 1536, 1 << 20));
  e = test::read_under_address_limit([&] { read_idx(raw); });
  std::printf("[          ] %s\n", e.c_str());
  EXPECT_NE(e.find("read_idx: " + raw + ": out of memory: cannot allocate 1610612752 bytes for the file's contents"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace wick
