// safetensors: round trips for every dtype, byte-exact output, atomic saves, and a table of
// corrupt files each rejected with its own message.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("wick_safetensors_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string read_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
  }
  static void write_bytes(const std::string& p, const std::string& bytes) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // A file made of an 8-byte length, `header` and `data`.
  static std::string file_bytes(const std::string& header, const std::string& data, int64_t length = -1) {
    uint64_t n = length < 0 ? header.size() : static_cast<uint64_t>(length);
    std::string out;
    for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + header + data;
  }

  fs::path dir_;
};

TEST_F(Safetensors, RoundTripsEveryDTypeAndShape) {
  TensorMap in;
  const DType dtypes[] = {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16,
                          DType::Int64,   DType::Int32,   DType::UInt8,   DType::Bool};
  uint64_t seed = 1;
  for (DType d : dtypes) {
    std::string n = dtype_name(d);
    in[n + ".matrix"] = random({3, 4}, d, seed++, 0, 100);
    in[n + ".scalar"] = random({}, d, seed++, 0, 100);
    in[n + ".empty"] = random({2, 0, 3}, d, seed++);
  }
  // Non-contiguous and sliced inputs are stored by value.
  Tensor base = random({4, 6}, DType::Float32, 99);
  in["layer.transposed"] = base.t();
  in["layer.sliced"] = base.slice(1, 1, 6, 2);
  save_safetensors(path("m.safetensors"), in, {{"format", "pt"}, {"note", "quote \" and \\ and \n"}});

  StringMap meta;
  TensorMap out = load_safetensors(path("m.safetensors"), &meta);
  EXPECT_EQ(meta, (StringMap{{"format", "pt"}, {"note", "quote \" and \\ and \n"}}));
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) {
    ASSERT_TRUE(out.count(name)) << name;
    EXPECT_TRUE(matches(out.at(name), t.shape(), t.dtype(), values(t), 0, 0)) << name;
    EXPECT_TRUE(out.at(name).is_contiguous());
  }
  // The data section starts 8-byte aligned.
  std::string bytes = read_bytes(path("m.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
}

TEST_F(Safetensors, BytesMatchAHandBuiltFile) {
  save_safetensors(path("w.safetensors"), {{"w", tensor<float>({1.0f, -2.0f})}});
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header += std::string(2, ' ');  // 8 + 54 bytes padded to 64
  // 1.0f = 0x3f800000, -2.0f = 0xc0000000, little-endian.
  std::string data("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);
  EXPECT_EQ(read_bytes(path("w.safetensors")), file_bytes(header, data));
  // And an empty map is a valid file too.
  save_safetensors(path("e.safetensors"), {});
  EXPECT_EQ(read_bytes(path("e.safetensors")), file_bytes("{}      ", ""));
  EXPECT_TRUE(load_safetensors(path("e.safetensors")).empty());
}

TEST_F(Safetensors, ReadsEscapesAndAnyOrderOfFields) {
  std::string header =
      R"( { "__metadata__" : {"k\u00e9": "v\/"}, "a\"b" : {"shape": [1], "data_offsets": [0, 1], "dtype": "U8"} } )";
  write_bytes(path("x"), file_bytes(header, "\x07"));
  StringMap meta;
  TensorMap m = load_safetensors(path("x"), &meta);
  EXPECT_EQ(meta.at("k\xc3\xa9"), "v/");
  EXPECT_TRUE(matches(m.at("a\"b"), {1}, DType::UInt8, {7}));
}

TEST_F(Safetensors, SaveIsAtomic) {
  std::string p = path("model.safetensors");
  save_safetensors(p, {{"a", tensor<double>({1, 2, 3})}});
  std::string before = read_bytes(p);
  // Rejected input: nothing written, the old file kept.
  expect_error([&] { save_safetensors(p, {{"a", Tensor()}}); }, {"save_safetensors", p, "'a'", "undefined"});
  expect_error([&] { save_safetensors(p, {{"__metadata__", ones({1})}}); }, {"save_safetensors", "reserved"});
  // A failure after the temporary file was written (the rename onto a directory fails):
  // the temporary file is removed.
  std::string d = path("adir");
  fs::create_directories(d + "/inner");
  expect_error([&] { save_safetensors(d, {{"a", ones({2})}}); }, {"save_safetensors", "rename", d});
  expect_error([&] { save_safetensors(path("missing/x.safetensors"), {{"a", ones({2})}}); },
               {"save_safetensors", "temporary file", "missing/x.safetensors"});
  EXPECT_EQ(read_bytes(p), before);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporary file left behind
  // Overwriting replaces the content.
  save_safetensors(p, {{"b", ones({1}, DType::Int32)}});
  TensorMap m = load_safetensors(p);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_TRUE(m.count("b"));
}

TEST_F(Safetensors, TruncatedFilesAreRejected) {
  std::string p = path("t.safetensors");
  save_safetensors(p, {{"a", tensor<float>({1, 2, 3})}, {"b", tensor<int64_t>({4, 5})}});
  std::string good = read_bytes(p);
  load_safetensors(p);  // the intact file loads
  const size_t data_start = good.size() - 28;  // 3 floats and 2 int64s
  for (size_t cut = 0; cut < good.size(); ++cut) {
    write_bytes(p, good.substr(0, cut));
    std::vector<std::string> expected = {"load_safetensors", p};
    if (cut < 8)
      expected.push_back("shorter than the 8-byte header length");
    else if (cut < data_start)
      expected.push_back("header length");
    else
      expected.push_back("not a range inside the data section");
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_error([&] { load_safetensors(p); }, expected);
  }
}

TEST_F(Safetensors, CorruptHeadersAreRejected) {
  const std::string f32x2 = R"("dtype":"F32","shape":[2],"data_offsets":)";
  const std::string data8(8, '\0');
  struct Case {
    const char* what;
    std::string bytes;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"huge length", file_bytes("{}", "", 200'000'000), {"not a safetensors file", "header length 200000000", "limit"}},
      {"length past end", file_bytes("{}", "", 3), {"not a safetensors file", "header length 3", "exceeds the 2 bytes"}},
      {"not JSON", file_bytes("nope", ""), {"header JSON", "unexpected 'n'", "at byte 0"}},
      {"unterminated", file_bytes(R"({"a":{)", ""), {"header JSON", "unexpected end"}},
      {"trailing comma", file_bytes(R"({"a":1,})", ""), {"header JSON", "expected a string key"}},
      {"trailing garbage", file_bytes("{} x", ""), {"header JSON", "after the top-level value"}},
      {"float", file_bytes(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", data8),
       {"header JSON", "non-integer number"}},
      {"true", file_bytes(R"({"a":true})", ""), {"header JSON", "unexpected 't'"}},
      {"bad escape", file_bytes(R"({"a\q":1})", ""), {"header JSON", "bad escape"}},
      {"lone surrogate", file_bytes(R"({"\ud800":1})", ""), {"header JSON", "unpaired surrogate"}},
      {"control char", file_bytes("{\"a\nb\":1}", ""), {"header JSON", "control character"}},
      {"leading zero", file_bytes(R"({"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}})", data8),
       {"header JSON", "leading zero"}},
      {"huge integer", file_bytes(R"({"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}})", data8),
       {"header JSON", "integer out of range"}},
      {"too deep", file_bytes(R"({"a":[[[[[[[[[[1]]]]]]]]]]})", ""), {"header JSON", "nesting deeper"}},
      {"duplicate name", file_bytes("{\"a\":{" + f32x2 + "[0,8]},\"a\":{" + f32x2 + "[8,16]}}", data8 + data8),
       {"header JSON", "duplicate key 'a'"}},
      {"top-level array", file_bytes("[]", ""), {"header is not a JSON object"}},
      {"metadata not strings", file_bytes(R"({"__metadata__":{"k":1}})", ""), {"__metadata__", "'k'", "not a string"}},
      {"entry not object", file_bytes(R"({"a":[1]})", ""), {"tensor 'a' is not an object"}},
      {"missing field", file_bytes(R"({"a":{"dtype":"F32","shape":[2]}})", data8), {"'a'", "lacks"}},
      {"unknown field", file_bytes("{\"a\":{" + f32x2 + R"([0,8],"x":1}})", data8), {"'a'", "unknown field 'x'"}},
      {"unknown dtype", file_bytes(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", "\0\0"),
       {"tensor 'a'", "unknown dtype 'F8'"}},
      {"dtype not string", file_bytes(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", data8),
       {"'a'", "dtype is not a string"}},
      {"negative dim", file_bytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8),
       {"'a'", "negative dimension -2"}},
      {"shape not array", file_bytes(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", data8),
       {"'a'", "shape is not an array"}},
      {"size mismatch", file_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8),
       {"'a'", "[3]", "F32", "needs 12 bytes", "[0, 8] span 8"}},
      {"overflowing shape",
       file_bytes(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", data8),
       {"'a'", "more than 2^64 bytes"}},
      // A zero size made the byte count 0 and let the strides of the sizes after it overflow.
      {"zero then huge dims",
       file_bytes(R"({"a":{"dtype":"F32","shape":[0,4294967296,4294967296,4294967296],"data_offsets":[0,0]}})", ""),
       {"'a'", "[0, 4294967296, 4294967296, 4294967296]", "too large", "strides overflow int64"}},
      {"offsets not pair", file_bytes("{\"a\":{" + f32x2 + "[0]}}", data8), {"'a'", "not a pair of integers"}},
      {"offsets reversed", file_bytes("{\"a\":{" + f32x2 + "[8,0]}}", data8), {"'a'", "[8, 0]", "not a range"}},
      {"offsets past end", file_bytes("{\"a\":{" + f32x2 + "[4,12]}}", data8),
       {"'a'", "[4, 12]", "data section of 8 bytes"}},
      {"overlap", file_bytes("{\"a\":{" + f32x2 + "[0,8]},\"b\":{" + f32x2 + "[4,12]}}", data8 + data8),
       {"tensors 'a' and 'b' overlap"}},
      {"gap", file_bytes("{\"a\":{" + f32x2 + "[0,8]},\"b\":{" + f32x2 + "[12,20]}}", data8 + data8 + "1234"),
       {"bytes [8, 12)", "belong to no tensor"}},
      {"trailing data", file_bytes("{\"a\":{" + f32x2 + "[0,8]}}", data8 + "xx"),
       {"cover 8 bytes", "data section has 10"}},
  };
  std::string p = path("c.safetensors");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    write_bytes(p, c.bytes);
    std::vector<std::string> parts = {"load_safetensors", p};
    parts.insert(parts.end(), c.message.begin(), c.message.end());
    expect_error([&] { load_safetensors(p); }, parts);
  }
  expect_error([&] { load_safetensors(path("absent")); }, {"load_safetensors", "cannot open", "absent"});
}

// The duplicate-key check compared each key with every earlier one: a 1 MB header of
// 100,000 keys took 20 s, so these 300,000 took minutes. With a hash set, a fraction of a
// second. The values are plain integers: the duplicate is found while parsing, before the
// entries are looked at.
TEST_F(Safetensors, ManyKeysAreCheckedForDuplicatesInLinearTime) {
  const int n = 300'000;
  std::string header = "{";
  char key[32];
  for (int i = 0; i < n; ++i) {
    std::snprintf(key, sizeof key, "\"t%07d\":0,", i);
    header += key;
  }
  header += "\"t0000000\":0}";  // the only duplicate comes last
  const std::string p = path("many.safetensors");
  write_bytes(p, file_bytes(header, ""));
  expect_error([&] { load_safetensors(p); }, {"load_safetensors", "duplicate key 't0000000'"});
}

}  // namespace
}  // namespace wick::test
