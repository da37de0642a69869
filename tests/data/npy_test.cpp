#include <gtest/gtest.h>
#include <zlib.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include <wick/data/data_loader.h>
#include <wick/data/npy.h>
#include <wick/data/token_dataset.h>
#include <wick/wick.h>

#include "tests/data/allocation_limit.h"
#include "tests/data/data_limit.h"
#include "tests/data/temp_dir.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;
using Bytes = std::string;

void put_le(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// An .npy file written by hand the way np.save lays it out: magic, version, header length,
// the dict padded with spaces to a multiple of 64 and ended by '\n', then `data`.
Bytes npy_bytes(const std::string& descr, const std::string& shape, const Bytes& data, int major = 1,
                const std::string& fortran = "False") {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  const size_t pre = major == 1 ? 10 : 12;
  while ((pre + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  Bytes b("\x93NUMPY", 6);
  b.push_back(static_cast<char>(major));
  b.push_back(0);
  put_le(b, dict.size(), major == 1 ? 2 : 4);
  return b + dict + data;
}

template <class T>
Bytes raw(const std::vector<T>& v) {
  return Bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Written to a new file renamed over `path`: a file that is still mapped (by arrays or a
// loader's workers from an earlier step of a test) must not be truncated under its
// mapping, where a read past the new end would be a SIGBUS.
void write(const std::string& path, const Bytes& b) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
  std::filesystem::rename(tmp, path);
}

// A zip archive of `members` (name, bytes, method); sizes as given (a DEFLATED member's
// bytes are not really deflated: the reader must refuse it before looking at them).
// `raw` deflated as a zip member's data is (no zlib header, np.savez_compressed's form).
Bytes deflate_raw(const Bytes& raw) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&z, raw.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A zip of (name, data, method) members: method 0 stores, 8 deflates (with the data's
// CRC-32, which the reader checks for deflated members).
Bytes zip_bytes(const std::vector<std::tuple<std::string, Bytes, int>>& members) {
  Bytes out, cd;
  for (const auto& [name, raw, method] : members) {
    const Bytes data = method == 8 ? deflate_raw(raw) : raw;
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(raw.data()), static_cast<uInt>(raw.size()));
    const uint64_t offset = out.size();
    put_le(out, 0x04034b50, 4);
    put_le(out, 20, 2);  // version needed
    put_le(out, 0, 2);   // flags
    put_le(out, method, 2);
    put_le(out, 0, 4);   // time, date
    put_le(out, crc, 4);
    put_le(out, data.size(), 4);
    put_le(out, raw.size(), 4);
    put_le(out, name.size(), 2);
    // A 5-byte local extra field (the reader must skip it): it shifts the data so that the
    // second member of the archive in the test below is not 8-byte aligned.
    put_le(out, 5, 2);
    out += name;
    out += Bytes(5, '\0') + data;
    put_le(cd, 0x02014b50, 4);
    put_le(cd, 20, 2);
    put_le(cd, 20, 2);
    put_le(cd, 0, 2);
    put_le(cd, method, 2);
    put_le(cd, 0, 4);
    put_le(cd, crc, 4);
    put_le(cd, data.size(), 4);
    put_le(cd, raw.size(), 4);
    put_le(cd, name.size(), 2);
    put_le(cd, 0, 2);  // extra
    put_le(cd, 0, 2);  // comment
    put_le(cd, 0, 2);  // disk
    put_le(cd, 0, 2);  // internal attributes
    put_le(cd, 0, 4);  // external attributes
    put_le(cd, offset, 4);
    cd += name;
  }
  const uint64_t cd_offset = out.size();
  out += cd;
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 4);
  put_le(out, members.size(), 2);
  put_le(out, members.size(), 2);
  put_le(out, cd.size(), 4);
  put_le(out, cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

TEST(Npy, EverySupportedDtype) {
  test::TempDir dir;
  struct Case {
    std::string descr;
    DType dtype;
    Bytes data;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {"<f4", DType::Float32, raw<float>({1.5f, -2, 3, 4, 5, 6}), {1.5, -2, 3, 4, 5, 6}},
      {"<f8", DType::Float64, raw<double>({0.25, 1, 2, 3, 4, -5}), {0.25, 1, 2, 3, 4, -5}},
      {"<i8", DType::Int64, raw<int64_t>({1LL << 40, -1, 2, 3, 4, 5}), {double(1LL << 40), -1, 2, 3, 4, 5}},
      {"<i4", DType::Int32, raw<int32_t>({-7, 1, 2, 3, 4, 5}), {-7, 1, 2, 3, 4, 5}},
      {"|u1", DType::UInt8, raw<uint8_t>({255, 1, 2, 3, 4, 5}), {255, 1, 2, 3, 4, 5}},
      {"|b1", DType::Bool, raw<uint8_t>({1, 0, 0, 1, 1, 0}), {1, 0, 0, 1, 1, 0}},
      // float16: 1.0 = 0x3C00, -2.0 = 0xC000, 0.5 = 0x3800
      {"<f2", DType::Float16, raw<uint16_t>({0x3C00, 0xC000, 0x3800, 0, 0x3C00, 0x3C00}), {1, -2, 0.5, 0, 1, 1}},
  };
  for (int major : {1, 2, 3}) {
    for (const Case& c : cases) {
      const std::string path = dir.file("a.npy");
      write(path, npy_bytes(c.descr, "(3, 2)", c.data, major));
      NpyArray a = open_npy(path);
      EXPECT_EQ(a.dtype(), c.dtype) << c.descr;
      EXPECT_EQ(a.shape(), (std::vector<int64_t>{3, 2}));
      EXPECT_TRUE(test::matches(a.load(), {3, 2}, c.dtype, c.values)) << c.descr << " v" << major;
      EXPECT_TRUE(test::matches(a.view(), {3, 2}, c.dtype, c.values)) << c.descr;
      EXPECT_TRUE(test::matches(a.row(2), {2}, c.dtype, {c.values[4], c.values[5]})) << c.descr;
      auto data = npy_dataset(path, "x");
      EXPECT_EQ(data->size(), 3);
      EXPECT_TRUE(test::matches(data->get(1).at("x"), {2}, c.dtype, {c.values[2], c.values[3]}));
    }
  }
  // 0-d and empty arrays.
  write(dir.file("s.npy"), npy_bytes("<f8", "()", raw<double>({2.5})));
  EXPECT_TRUE(test::matches(open_npy(dir.file("s.npy")).load(), {}, DType::Float64, {2.5}));
  write(dir.file("e.npy"), npy_bytes("<f4", "(0, 5)", ""));
  EXPECT_EQ(open_npy(dir.file("e.npy")).load().shape(), Shape({0, 5}));
}

TEST(Npy, ViewKeepsTheMappingAlive) {
  test::TempDir dir;
  write(dir.file("a.npy"), npy_bytes("<i8", "(4,)", raw<int64_t>({1, 2, 3, 4})));
  Tensor v = open_npy(dir.file("a.npy")).view();  // the NpyArray and its file object are gone
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(v.sum().item<int64_t>(), 10);
}

// A tokenised corpus as a memory-mapped .npy: the windows own their memory, so a
// transform may write to them although the mapping is read-only.
TEST(Npy, TokenWindowsOverAMappedCorpus) {
  test::TempDir dir;
  std::vector<int64_t> ids(300);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i) * 7;
  write(dir.file("tokens.npy"), npy_bytes("<i8", "(300,)", raw(ids)));
  auto windows = std::make_shared<TokenWindows>(open_npy(dir.file("tokens.npy")).view(), 10);
  auto doubled = transformed(windows, [](Example e, uint64_t) {
    e.at("input").mul_(2);
    return e;
  });
  DataLoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  DataLoader loader(doubled, o);
  int64_t n = 0;
  while (std::optional<Example> b = loader.next()) {
    std::vector<int64_t> in = b->at("input").to_vector<int64_t>(), tg = b->at("target").to_vector<int64_t>();
    for (size_t j = 0; j < in.size(); ++j) EXPECT_EQ(in[j], 2 * (tg[j] - 7));
    n += b->at("input").size(0);
  }
  EXPECT_EQ(n, 299 / 10);
}

TEST(Npy, RefusesWhatItCannotMap) {
  test::TempDir dir;
  const std::string p = dir.file("bad.npy");
  auto refuse = [&](const Bytes& b, const std::vector<std::string>& parts) {
    write(p, b);
    expect_error([&] { open_npy(p); }, parts);
  };
  const Bytes six = raw<float>({1, 2, 3, 4, 5, 6});
  refuse(npy_bytes(">f4", "(6,)", six), {"big-endian", ">f4"});
  refuse(npy_bytes("|O", "(6,)", six), {"Python objects"});
  refuse(npy_bytes("<i2", "(12,)", six), {"unsupported dtype '<i2'"});
  refuse(npy_bytes("<f4", "(6,)", six, 1, "True"), {"Fortran"});
  refuse(npy_bytes("<f4", "(7,)", six), {"needs 28 bytes but 24", "truncated"});
  refuse(npy_bytes("<f4", "(5,)", six), {"needs 20 bytes but 24", "trailing"});
  refuse(npy_bytes("<f4", "(6,)", six, 4), {"version 4.0"});
  refuse("\x93NUMPZ\x01\x00" + Bytes(100, ' '), {"bad magic"});
  refuse(Bytes("\x93NUM", 4), {"too short"});
  refuse(Bytes("\x93NUMPY\x01\x00\x50", 9) + Bytes(3, ' '), {"header length 8272", "runs past"});
  // Malformed dicts.
  for (const char* dict : {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}",
                           "{'descr': '<f4', 'fortran_order': False}", "{'descr': '<f4' 'shape': (6,)}",
                           "['descr']", "{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }",
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } trailing",
                           "{'descr: '<f4', 'fortran_order': False, 'shape': (6,), }",
                           "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }"}) {
    Bytes b("\x93NUMPY\x01\x00", 8);
    put_le(b, std::strlen(dict), 2);
    write(p, b + dict + six);
    EXPECT_THROW(open_npy(p), Error) << dict;
  }
  // Truncated files: every prefix of a good file is refused (none crashes or allocates).
  const Bytes good = npy_bytes("<f4", "(6,)", six);
  for (size_t n = 0; n < good.size(); ++n) {
    write(p, good.substr(0, n));
    EXPECT_THROW(open_npy(p), Error) << n << " bytes";
  }
  expect_error([&] { open_npy(dir.file("missing.npy")); }, {"cannot open", "missing.npy"});
}

TEST(Npy, HugeShapesAreRefusedBeforeAnythingIsAllocated) {
  test::TempDir dir;
  const std::string p = dir.file("huge.npy");
  const Bytes six = raw<float>({1, 2, 3, 4, 5, 6});
  // The product of the dims overflows 64 bits; the byte count overflows; a plausible
  // shape needs far more than the file holds.
  write(p, npy_bytes("<f4", "(4294967296, 4294967296, 16)", six));
  expect_error([&] { open_npy(p); }, {"more elements than 64 bits"});
  write(p, npy_bytes("<f8", "(2305843009213693952, 2)", six));  // 2^62 elements
  expect_error([&] { open_npy(p); }, {"larger than 64 bits"});
  write(p, npy_bytes("<f8", "(1000000000000,)", six));
  expect_error([&] { open_npy(p); }, {"needs 8000000000000 bytes but 24"});
  write(p, npy_bytes("<f8", "(99999999999999999999,)", six));
  expect_error([&] { open_npy(p); }, {"63 bits"});
  // A header length of 4 GiB - 1 in a tiny file (version 2 has 32-bit lengths).
  Bytes b("\x93NUMPY\x02\x00", 8);
  put_le(b, 0xFFFFFFFFu, 4);
  write(p, b + "{}");
  expect_error([&] { open_npy(p); }, {"header length 4294967295", "runs past"});
}

TEST(Npz, StoredMembersMapAndDeflatedOnesInflate) {
  test::TempDir dir;
  const std::string p = dir.file("a.npz");
  write(p, zip_bytes({{"image.npy", npy_bytes("|u1", "(3, 2, 2)", raw<uint8_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})), 0},
                      {"label.npy", npy_bytes("<i8", "(3,)", raw<int64_t>({7, 8, 9})), 0},
                      {"notes.txt", "hello", 0}}));
  auto arrays = open_npz(p);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].first, "image");
  EXPECT_EQ(arrays[1].first, "label");
  EXPECT_EQ(arrays[1].second.name(), p + ":label");
  EXPECT_EQ(arrays[1].second.load().to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  // The label data is not 8-byte aligned in this archive: view() refuses, row() copies.
  expect_error([&] { arrays[1].second.view(); }, {"not aligned"});
  auto data = npz_dataset(p);
  ASSERT_EQ(data->size(), 3);
  Example e = data->get(2);
  EXPECT_EQ(e.names(), (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(e.at("image").to_vector<int64_t>(), (std::vector<int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(e.int_at("label"), 9);
  // Through the loader: a batch of rows of both arrays.
  DataLoaderOptions o;
  o.batch_size = 2;
  o.num_workers = 2;
  DataLoader loader(data, o);
  Example b = *loader.next();
  EXPECT_EQ(b.at("label").to_vector<int64_t>(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(b.at("image").shape(), Shape({2, 2, 2}));

  // np.savez_compressed's form: the same arrays, deflated, read into memory.
  write(p, zip_bytes({{"image.npy", npy_bytes("|u1", "(3, 2, 2)", raw<uint8_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})), 8},
                      {"label.npy", npy_bytes("<i8", "(3,)", raw<int64_t>({7, 8, 9})), 8}}));
  auto deflated = open_npz(p);
  ASSERT_EQ(deflated.size(), 2u);
  EXPECT_EQ(deflated[1].second.load().to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(deflated[0].second.row(2).to_vector<int64_t>(), (std::vector<int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(deflated[1].second.view().to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));  // aligned in memory
  EXPECT_EQ(npz_dataset(p)->get(1).int_at("label"), 8);
  write(p, zip_bytes({{"x.npy", npy_bytes("<f4", "(1,)", raw<float>({1})), 12}}));
  expect_error([&] { open_npz(p); }, {"member 'x.npy'", "compression method 12"});
  // Unequal lengths in a dictionary dataset.
  write(p, zip_bytes({{"a.npy", npy_bytes("<f4", "(2,)", raw<float>({1, 2})), 0},
                      {"b.npy", npy_bytes("<f4", "(1,)", raw<float>({1})), 0}}));
  expect_error([&] { npz_dataset(p); }, {"field 'b'", "1 rows", "field 'a' has 2"});
  // A member whose npy header is broken is named.
  write(p, zip_bytes({{"a.npy", npy_bytes(">f4", "(2,)", raw<float>({1, 2})), 0}}));
  expect_error([&] { open_npz(p); }, {"member 'a.npy'", "big-endian"});
}

TEST(Npz, DamagedDeflatedMembersAreRefusedNamingTheMember) {
  test::TempDir dir;
  const std::string p = dir.file("a.npz");
  const Bytes array = npy_bytes("<f8", "(64,)", raw<double>(std::vector<double>(64, 0.5)));
  const Bytes good = zip_bytes({{"a.npy", array, 8}});
  write(p, good);
  EXPECT_EQ(open_npz(p)[0].second.load().to_vector<double>(), std::vector<double>(64, 0.5));
  const size_t data_at = 30 + 5 + 5;  // local header, "a.npy", the 5-byte extra field
  const size_t packed = deflate_raw(array).size();
  // A flipped bit anywhere in the deflate data: damaged stream, wrong size or wrong CRC.
  for (size_t i = data_at; i < data_at + packed; ++i) {
    Bytes bad = good;
    bad[i] ^= 0x04;
    write(p, bad);
    try {
      open_npz(p);
      ADD_FAILURE() << "a flipped bit at " << i << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("member 'a.npy'"), std::string::npos) << e.what();
    }
  }
  // The declared size lies (central directory's uncompressed size at 46 + 24 into it).
  const size_t cd = good.size() - 22 - (46 + 5);
  for (uint32_t lie : {static_cast<uint32_t>(array.size() - 1), static_cast<uint32_t>(array.size() + 1)}) {
    Bytes bad = good;
    for (int k = 0; k < 4; ++k) bad[cd + 24 + k] = static_cast<char>((lie >> (8 * k)) & 0xff);
    write(p, bad);
    expect_error([&] { open_npz(p); }, {"member 'a.npy'", lie < array.size() ? "longer" : "shorter"});
  }
  // A declared size no allocation may take is refused before inflating (4 GiB - 1 here,
  // over a 1 MiB reader limit).
  Bytes huge = good;
  for (int k = 0; k < 4; ++k) huge[cd + 24 + k] = '\xff';
  write(p, huge);
  test::ReaderAllocationLimit limit(1 << 20);
  expect_error([&] { open_npz(p); }, {"out of memory", "4294967295 bytes", "member 'a.npy' inflated"});
}

TEST(Npz, CorruptArchivesAreRefused) {
  test::TempDir dir;
  const std::string p = dir.file("a.npz");
  const Bytes good = zip_bytes({{"a.npy", npy_bytes("<f4", "(2,)", raw<float>({1, 2})), 0}});
  // Every truncation, and a central directory / member offset pointing past the end.
  for (size_t n = 0; n < good.size(); ++n) {
    write(p, good.substr(0, n));
    EXPECT_THROW(open_npz(p), Error) << n;
  }
  Bytes bad = good;
  const size_t end = bad.size() - 22;
  bad[end + 16] = '\xF0';  // central directory offset far away
  write(p, bad);
  expect_error([&] { open_npz(p); }, {"central directory", "runs past the end"});
  bad = good;
  const size_t cd = good.size() - 22 - (46 + 5);
  bad[cd + 42 + 2] = '\x10';  // local header offset 1 MiB in
  write(p, bad);
  expect_error([&] { open_npz(p); }, {"zip local header", "runs past the end"});
  bad = good;
  bad[cd + 20] = '\x7F';  // member size larger than the file
  bad[cd + 24] = '\x7F';
  write(p, bad);
  EXPECT_THROW(open_npz(p), Error);
  write(p, Bytes(100, 'z'));
  expect_error([&] { open_npz(p); }, {"not a zip file"});
}

// A 256 MiB file read through the loader under a data limit of 64 MiB more than the process
// uses (tests/data/data_limit.h).
TEST(Npy, MappedFileIsReadUnderADataLimitSmallerThanIt) {
#ifdef WICK_SANITIZER_ALLOCATOR
  GTEST_SKIP() << "built with a sanitizer, whose allocator RLIMIT_DATA does not bind (tests/data/data_limit.h)";
#endif
  test::TempDir dir;
  const std::string p = dir.file("big.npy");
  const int64_t rows = 65536, cols = 4096;  // 256 MiB of uint8
  const Bytes header = npy_bytes("|u1", "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")", "");
  ASSERT_TRUE(test::write_marked_rows(p, header, rows, cols));
  const std::string huge_header = dir.file("huge_header.npy");
  {
    Bytes b("\x93NUMPY\x02\x00", 8);
    put_le(b, 0xFFFFFFF0u, 4);
    write(huge_header, b + "{}");
  }
  const int status = test::run_under_data_limit(64u << 20, static_cast<size_t>(rows * cols), [&] {
    // A header length of 4 GiB is refused without trying to allocate it.
    try {
      open_npy(huge_header);
      return 13;
    } catch (const Error&) {
    }
    DataLoaderOptions o;
    o.batch_size = 256;
    DataLoader loader(npy_dataset(p, "row"), o);
    return test::check_marked_rows(loader, "row", rows, cols);
  });
  EXPECT_EQ(status, 0) << test::kDataLimitCodes << ", 13: huge header accepted, 14/15: rows wrong, >= 1000: signal";
}

// A read whose allocation fails is a wick::Error naming the file and the size, not
// std::bad_alloc (issue 48, item 6): under set_reader_allocation_limit, in any build.
TEST(Npy, AllocationFailureIsAnErrorNamingTheFileAndTheSize) {
  test::TempDir dir;
  const std::string p = dir.file("a.npy");
  write(p, npy_bytes("<f4", "(100, 50)", raw<float>(std::vector<float>(5000, 1.5f))));
  const NpyArray a = open_npy(p);
  {
    test::ReaderAllocationLimit limit(10000);
    expect_error([&] { a.load(); },
                 {"NpyArray::load: '" + p + "': out of memory: cannot allocate 20000 bytes for the array ([100, 50] float32)"});
    EXPECT_EQ(a.row(3).to_vector<float>(), std::vector<float>(50, 1.5f));
  }
  {
    test::ReaderAllocationLimit limit(100);
    expect_error([&] { a.row(3); },
                 {"NpyArray::row: '" + p + "': out of memory: cannot allocate 200 bytes for row 3 ([50] float32)"});
    // Opening reads the preamble and the header (128 bytes) into memory.
    expect_error([&] { open_npy(p); }, {"MappedFile::read: '" + p + "': out of memory: cannot allocate 118 bytes for "
                                        "the npy header"});
  }
  EXPECT_EQ(a.load().sum().item<double>(), 7500.0);
}

TEST(Npz, AllocationFailureIsAnErrorNamingTheFileAndTheSize) {
  test::TempDir dir;
  const std::string p = dir.file("a.npz");
  write(p, zip_bytes({{"x.npy", npy_bytes("<f4", "(100, 50)", raw<float>(std::vector<float>(5000, 1.5f))), 0}}));
  auto arrays = open_npz(p);
  {
    test::ReaderAllocationLimit limit(10000);
    expect_error([&] { arrays[0].second.load(); }, {"NpyArray::load: '" + p +
                                                    ":x': out of memory: cannot allocate 20000 bytes for the array "
                                                    "([100, 50] float32)"});
    // The end record is looked for in the file's last 64 KiB, here all of it.
    expect_error([&] { open_npz(p); }, {"MappedFile::read: '" + p + "': out of memory: cannot allocate " +
                                        std::to_string(std::filesystem::file_size(p)) + " bytes for the zip end record"});
  }
  EXPECT_EQ(arrays[0].second.load().sum().item<double>(), 7500.0);
}

// The same under a real address-space limit, 1 GiB above what the process uses: a 768 MiB
// .npy (sparse on disk), mapped, then loaded into memory.
TEST(Npy, AllocationFailureUnderAnAddressSpaceLimitIsAnError) {
  if (!test::kAddressLimitWorks) GTEST_SKIP() << "address-space limits do not work under a sanitizer's allocator";
  test::TempDir dir;
  const std::string p = dir.file("big.npy");
  ASSERT_TRUE(test::write_marked_rows(p, npy_bytes("|u1", "(768, 1048576)", ""), 768, 1 << 20));
  const std::string e = test::read_under_address_limit([&] { open_npy(p).load(); });
  std::printf("[          ] %s\n", e.c_str());
  EXPECT_NE(e.find("NpyArray::load: '" + p +
                   "': out of memory: cannot allocate 805306368 bytes for the array ([768, 1048576] uint8)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace wick
