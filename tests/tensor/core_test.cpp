// Tensor metadata, construction, conversion, factories and printing.
#include <cmath>
#include <limits>

#include <wick/tensor/cpu_memory_stats.h>
#include <wick/tensor/storage_residency.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(DType, PromotionFollowsPyTorch) {
  EXPECT_EQ(promote_types(DType::Bool, DType::UInt8), DType::UInt8);
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int32), DType::Int32);
  EXPECT_EQ(promote_types(DType::Int32, DType::Int64), DType::Int64);
  EXPECT_EQ(promote_types(DType::Int64, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Float64), DType::Float64);
  EXPECT_EQ(promote_types(DType::Float32, DType::Int64), DType::Float32);
  EXPECT_EQ(promote_types(DType::Bool, DType::Bool), DType::Bool);
}

TEST(DType, HalfAndBFloat16RoundToNearestEven) {
  // Exactly representable values survive; ties go to even; overflow goes to inf.
  EXPECT_EQ(static_cast<float>(Half(1.5f)), 1.5f);
  EXPECT_EQ(static_cast<float>(Half(65504.f)), 65504.f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.f))));
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 2048)), 1.0f);                          // tie -> even (down)
  EXPECT_EQ(static_cast<float>(Half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);            // tie -> even (up)
  EXPECT_EQ(static_cast<float>(Half(5.9604644775390625e-08f)), 5.9604644775390625e-08f);  // smallest subnormal
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + 1.0f / 256)), 1.0f);  // tie -> even
  EXPECT_EQ(static_cast<float>(BFloat16(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  // Every half bit pattern converts to float and back unchanged (NaNs stay NaN).
  for (uint32_t b = 0; b < 65536; ++b) {
    Half h = Half::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) continue;
    ASSERT_EQ(Half(f).bits, b) << "bits " << b;
  }
}

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device("cpu"), Device::cpu());
  EXPECT_EQ(Device("cuda:2"), Device::cuda(2));
  EXPECT_EQ(Device::cuda(1).str(), "cuda:1");
  expect_error([] { Device("gpu"); }, {"Device", "gpu"});
  expect_error([] { Device("cuda:x"); }, {"cuda:x"});
}

TEST(Tensor, FromVectorAndBack) {
  Tensor t = tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Shape{3, 1}));
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(tensor<bool>({true, false}).to_vector<bool>(), (std::vector<bool>{true, false}));
  expect_error([] { tensor<float>({1, 2, 3}, {2, 2}); }, {"tensor", "3 values", "[2, 2]"});
}

TEST(Tensor, ItemNeedsOneElement) {
  EXPECT_EQ(scalar_tensor(7, DType::Int32).item<int32_t>(), 7);
  EXPECT_EQ(tensor<double>({2.5}, {1, 1}).item<double>(), 2.5);
  expect_error([] { zeros({2}).item<float>(); }, {"item", "2 elements", "[2]"});
}

TEST(Tensor, ToDTypeConvertsEveryPair) {
  std::vector<double> v = {0, 1, 2, 3, 100, 7};
  for (DType from : {DType::Bool, DType::UInt8, DType::Int32, DType::Int64, DType::Float16, DType::BFloat16,
                     DType::Float32, DType::Float64}) {
    for (DType to : {DType::Bool, DType::UInt8, DType::Int32, DType::Int64, DType::Float16, DType::BFloat16,
                     DType::Float32, DType::Float64}) {
      Tensor src = tensor<double>(v, {2, 3}).to(from);
      std::vector<double> expected;
      for (double x : values(src)) expected.push_back(to == DType::Bool ? (x != 0) : x);
      for (Layout l : kAllLayouts)
        EXPECT_TRUE(matches(with_layout(src, l).to(to), {2, 3}, to, expected))
            << dtype_name(from) << " -> " << dtype_name(to) << " " << layout_name(l);
    }
  }
}

// Floating values that no integer dtype holds (NaN, infinities, beyond the range) convert as
// x86's truncating conversion does, which is PyTorch's result on x86 CPUs: the dtype's lowest
// value for int32 and int64, uint8 through int64 (so wrapping). Converting them with a plain
// cast was undefined behaviour (UBSan's float-cast-overflow, issue 25 item 4).
double x86_truncation(double x, DType to) {
  const auto in_range = [&](double lowest) { return x > lowest - 1.0 && x < -lowest; };
  switch (to) {
    case DType::Bool: return x != 0;
    case DType::Int32: return in_range(-0x1p31) ? std::trunc(x) : -0x1p31;
    case DType::Int64: return in_range(-0x1p63) ? std::trunc(x) : -0x1p63;
    default: {  // uint8: the int64 result's low byte
      const int64_t i = in_range(-0x1p63) ? static_cast<int64_t>(x) : std::numeric_limits<int64_t>::min();
      return static_cast<double>(static_cast<uint8_t>(i));
    }
  }
}

TEST(Tensor, FloatToIntegerConversionsOfAnyValueAreDefined) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {nan,  inf,   -inf,         1e19,   -1e19,         9.3e18,      -0x1p63, 0x1p63,
                                 3e9,  -3e9,  2147483647.5, 0x1p31, -2147483648.9, -0x1p31 - 1, 300.7,   -1.5,
                                 -0.7, 255.9, 256,          65504,  1e300,         -1e300,      0.0};
  for (DType from : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    Tensor src = tensor<double>(v).to(from);  // the values as `from` holds them
    for (DType to : {DType::Bool, DType::UInt8, DType::Int32, DType::Int64}) {
      std::vector<double> expected;
      for (double x : values(src)) expected.push_back(x86_truncation(x, to));
      for (Layout l : kAllLayouts)
        EXPECT_TRUE(matches(with_layout(src, l).to(to), {static_cast<int64_t>(v.size())}, to, expected))
            << dtype_name(from) << " -> " << dtype_name(to) << " " << layout_name(l);
    }
  }
  // item() and to_vector() convert the same way.
  const int64_t lowest64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(scalar_tensor(nan, DType::Float32).item<int64_t>(), lowest64);
  EXPECT_EQ(scalar_tensor(inf, DType::Float64).item<int32_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(scalar_tensor(-1.0, DType::Float64).item<uint8_t>(), 255);
  EXPECT_EQ(scalar_tensor(1e19, DType::Float64).item<uint8_t>(), 0);
  EXPECT_EQ(tensor<double>({-inf, 2.9, 1e300}).to_vector<int64_t>(), (std::vector<int64_t>{lowest64, 2, lowest64}));
  // linspace computes in double and converts each value likewise; one step too.
  EXPECT_TRUE(matches(linspace(-1e19, 1e19, 3, DType::Int64), {3}, DType::Int64, {-0x1p63, 0, -0x1p63}));
  EXPECT_TRUE(matches(linspace(0, inf, 3, DType::Int32), {3}, DType::Int32, {-0x1p31, -0x1p31, -0x1p31}));
  EXPECT_TRUE(matches(linspace(1e30, 0, 1, DType::Int32), {1}, DType::Int32, {-0x1p31}));
  EXPECT_TRUE(matches(linspace(nan, 1, 1, DType::Float32), {1}, DType::Float32, {nan}));
}

TEST(Tensor, CloneIsDeepAndContiguous) {
  Tensor a = tensor<float>({1, 2, 3, 4}, {2, 2});
  Tensor t = a.t();
  EXPECT_FALSE(t.is_contiguous());
  Tensor c = t.clone();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_TRUE(matches(c, {2, 2}, DType::Float32, {1, 3, 2, 4}));
  a.fill_(0);
  EXPECT_TRUE(matches(c, {2, 2}, DType::Float32, {1, 3, 2, 4}));
  EXPECT_TRUE(t.contiguous().is_contiguous());
  EXPECT_EQ(a.contiguous().data_ptr(), a.data_ptr());  // already contiguous: no copy
}

TEST(Tensor, CopyIntoViewWritesOnlyTheView) {
  Tensor a = zeros({3, 4});
  a.slice(1, 1, 4, 2).copy_(tensor<float>({1, 2, 3}, {3, 1}));  // broadcast over 2 columns
  EXPECT_TRUE(matches(a, {3, 4}, DType::Float32, {0, 1, 0, 1, 0, 2, 0, 2, 0, 3, 0, 3}));
  // An overlapping source is read before it is overwritten.
  Tensor b = tensor<float>({1, 2, 3, 4}, {2, 2});
  b.copy_(b.t());
  EXPECT_TRUE(matches(b, {2, 2}, DType::Float32, {1, 3, 2, 4}));
  expect_error([&] { a.copy_(zeros({2, 4})); }, {"expand", "[2, 4]", "[3, 4]"});
}

TEST(Factories, FillValuesAndShapes) {
  EXPECT_TRUE(matches(zeros({2, 2}), {2, 2}, DType::Float32, {0, 0, 0, 0}));
  EXPECT_TRUE(matches(ones({3}, DType::Int64), {3}, DType::Int64, {1, 1, 1}));
  EXPECT_TRUE(matches(full({2}, 2.5, DType::Float64), {2}, DType::Float64, {2.5, 2.5}));
  EXPECT_TRUE(matches(arange(5), {5}, DType::Int64, {0, 1, 2, 3, 4}));
  EXPECT_TRUE(matches(arange(1, 2, 0.25), {4}, DType::Float32, {1, 1.25, 1.5, 1.75}));
  EXPECT_TRUE(matches(arange(5, 0, -2), {3}, DType::Int64, {5, 3, 1}));
  EXPECT_TRUE(matches(linspace(0, 1, 5, DType::Float64), {5}, DType::Float64, {0, 0.25, 0.5, 0.75, 1}));
  EXPECT_TRUE(matches(eye(2, 3), {2, 3}, DType::Float32, {1, 0, 0, 0, 1, 0}));
  EXPECT_TRUE(matches(zeros({0, 3}), {0, 3}, DType::Float32, {}));
  expect_error([] { arange(0, 5, -1); }, {"arange", "wrong way"});
  // A count beyond int64 is refused, as PyTorch does (converting it was undefined), also when
  // end - start overflows to inf.
  expect_error([] { arange(0, 1e19); }, {"arange", "end=1e+19", "1e+19 elements", "more than int64"});
  expect_error([] { arange(-1e308, 1e308, 1.0); }, {"arange", "inf elements", "more than int64"});
  // A shape whose bytes do not fit size_t: numel 2^61 of 8 bytes wrapped around to 0 bytes.
  expect_error([] { empty({int64_t{1} << 61}, DType::Float64); },
               {"empty", "[2305843009213693952]", "float64", "more bytes"});
  expect_error([] { arange(0, 0x1p61, 1, DType::Float64); }, {"empty", "more bytes"});
  expect_error([] { zeros({2, -1}); }, {"negative size", "[2, -1]"});
}

TEST(Random, SameSeedSameNumbers) {
  Generator g1(42), g2(42), g3(43);
  auto a = values(rand({1000}, {}, &g1));
  auto b = values(rand({1000}, {}, &g2));
  auto c = values(rand({1000}, {}, &g3));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Consecutive draws continue the stream instead of repeating it.
  EXPECT_NE(values(rand({1000}, {}, &g1)), a);
  manual_seed(7);
  auto d = values(randn({10}));
  manual_seed(7);
  EXPECT_EQ(values(randn({10})), d);
}

TEST(Random, DistributionsHaveTheRightMoments) {
  Generator g(1);
  const int n = 200000;
  auto u = values(rand({n}, DType::Float64, &g));
  auto z = values(randn({n}, {}, &g));
  auto r = values(randint(3, 9, {n}, DType::Int64, &g));
  auto b = values(bernoulli({n}, 0.3, {}, &g));
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  auto var = [&](const std::vector<double>& v) {
    double m = mean(v), s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return s / static_cast<double>(v.size());
  };
  EXPECT_NEAR(mean(u), 0.5, 0.005);
  EXPECT_NEAR(var(u), 1.0 / 12, 0.002);
  EXPECT_NEAR(mean(z), 0.0, 0.01);
  EXPECT_NEAR(var(z), 1.0, 0.01);
  EXPECT_NEAR(mean(r), 5.5, 0.02);
  EXPECT_NEAR(mean(b), 0.3, 0.005);
  for (double x : u) ASSERT_TRUE(x >= 0 && x < 1);
  for (double x : r) ASSERT_TRUE(x >= 3 && x < 9 && x == std::floor(x));
}

TEST(Print, LooksLikePyTorch) {
  EXPECT_EQ(tensor<float>({1, 2, 3}).str(), "tensor([1., 2., 3.], shape=[3], dtype=float32)");
  EXPECT_EQ(tensor<float>({1.5f, -2, 3}).str(), "tensor([ 1.5000, -2.0000,  3.0000], shape=[3], dtype=float32)");
  EXPECT_EQ(tensor<int64_t>({1, 20, 3, 4}, {2, 2}).str(),
            "tensor([[ 1, 20],\n        [ 3,  4]], shape=[2, 2], dtype=int64)");
  EXPECT_EQ(tensor<bool>({true, false}).str(), "tensor([ True, False], shape=[2], dtype=bool)");
  EXPECT_EQ(scalar_tensor(2.5).str(), "tensor(2.5000, shape=[], dtype=float32)");
  EXPECT_EQ(zeros({0}).str(), "tensor([], shape=[0], dtype=float32)");
  std::string big = arange(2000).str();
  EXPECT_NE(big.find("[   0,    1,    2, ..., 1997, 1998, 1999]"), std::string::npos) << big;
}

}  // namespace
}  // namespace wick::test

namespace wick::test {
namespace {

TEST(CpuAllocator, ReusesBlocksOfItsSizeClassAndEmptiesItsCache) {
  cpu_empty_cache();
  EXPECT_EQ(cpu_cached_bytes(), 0u);
  void* first = nullptr;
  {
    Tensor t = empty({1 << 20});  // 4 MB
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_EQ(cpu_cached_bytes(), size_t{4} << 20);
  Tensor again = empty({(1 << 20) - 5});  // rounds to the same 4 MB block
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(cpu_cached_bytes(), 0u);
  { Tensor tiny = empty({10}); }
  EXPECT_EQ(cpu_cached_bytes(), 0u);  // under 4 KB, malloc keeps them
  void* medium = nullptr;
  {
    Tensor t = empty({1250});  // 5000 bytes: the class of 4 KB + 1 KB steps, 5 KB
    medium = t.data_ptr();
  }
  EXPECT_EQ(cpu_cached_bytes(), size_t{5} << 10);
  {
    Tensor same_class = empty({1100}, DType::Float32);  // 4400 bytes, also 5 KB
    EXPECT_EQ(same_class.data_ptr(), medium);
    EXPECT_EQ(cpu_cached_bytes(), 0u);
    Tensor next_class = empty({1281}, DType::Float32);  // 5124 bytes: 6 KB
    EXPECT_NE(next_class.data_ptr(), medium);
  }
  EXPECT_EQ(cpu_cached_bytes(), size_t{11} << 10);
  cpu_empty_cache();
  { Tensor other = empty({3 << 20}); }
  EXPECT_EQ(cpu_cached_bytes(), size_t{12} << 20);
  cpu_empty_cache();
  EXPECT_EQ(cpu_cached_bytes(), 0u);
}

// The count is of blocks handed out (by size class), whether fresh or from the cache, and
// the peak stays until reset. (Other tests' threads allocate too: only this test's own
// large blocks are asserted, as lower bounds and differences far above the noise.)
TEST(CpuAllocator, CountsTheBytesTensorsHoldAndTheirPeak) {
  constexpr size_t kMB = size_t{1} << 20;
  const size_t before = cpu_memory_stats().allocated;
  cpu_reset_peak_memory_stats();
  {
    Tensor a = empty({4 << 20});  // 16 MB
    EXPECT_GE(cpu_memory_stats().allocated, before + 16 * kMB);
    { Tensor b = empty({2 << 20}); }  // 8 MB, given back to the cache
    EXPECT_LT(cpu_memory_stats().allocated, before + 20 * kMB);
  }
  EXPECT_LT(cpu_memory_stats().allocated, before + 4 * kMB);  // in the cache, not held
  EXPECT_GE(cpu_memory_stats().peak_allocated, before + 24 * kMB);
  cpu_reset_peak_memory_stats();
  const size_t reset = cpu_memory_stats().allocated;
  EXPECT_LT(cpu_memory_stats().peak_allocated - reset, 4 * kMB);  // differences: no overflow
  { Tensor again = empty({2 << 20}); }                            // from the cache: counted as held all the same
  EXPECT_GE(cpu_memory_stats().peak_allocated - reset, 8 * kMB);
}

// StorageResidency (fully sharded data parallelism's): the Storage and its views stay, its
// bytes go and come back in place.
TEST(StorageResidency, ReleasesAndMaterialisesAStorageItsViewsKeep) {
  Tensor flat = zeros({1 << 20});
  Tensor view = flat.narrow(0, 10, 5);
  const size_t held = cpu_memory_stats().allocated;
  StorageResidency::release(*flat.storage());
  EXPECT_FALSE(StorageResidency::resident(*view.storage()));
  EXPECT_LE(cpu_memory_stats().allocated + (size_t{4} << 20), held);
  expect_error([&] { view.sum(); }, {"data_ptr", "[5] tensor is released"});
  StorageResidency::materialize(*flat.storage());
  EXPECT_TRUE(StorageResidency::resident(*flat.storage()));
  flat.fill_(3.0);
  EXPECT_EQ(view.sum().item<double>(), 15.0);  // the view sees the new bytes
  Storage owned(flat.data_ptr(), 4, Device::cpu(), [](void*) {});
  expect_error([&] { StorageResidency::release(owned); }, {"StorageResidency::release", "its caller owns"});
}

TEST(CpuAllocator, BlocksOf4MBAndMoreAreWholeHugePages) {
  cpu_empty_cache();
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  void* first = nullptr;
  {
    Tensor t = empty({(9 << 19) / 8}, DType::Float64);  // 4.5 MB: the class of 6 MB
    first = t.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kHuge, 0u);
    t.fill_(1.5);  // the whole block is writable
  }
  EXPECT_EQ(cpu_cached_bytes(), size_t{6} << 20);
  {
    Tensor same = empty({(3 << 20) / 2});  // 6 MB exactly
    EXPECT_EQ(same.data_ptr(), first);
    Tensor under = empty({(1 << 20) - 1});  // 4 MB - 4 bytes rounds up to a whole-page 4 MB block
    EXPECT_EQ(reinterpret_cast<uintptr_t>(under.data_ptr()) % kHuge, 0u);
    Tensor small = empty({(3 << 20) / 4});  // 3 MB: a 1 MB-step block with its header
    EXPECT_NE(reinterpret_cast<uintptr_t>(small.data_ptr()) % kHuge, 0u);
  }
  EXPECT_EQ(cpu_cached_bytes(), size_t{13} << 20);
  cpu_empty_cache();
  EXPECT_EQ(cpu_cached_bytes(), 0u);
  // Freed to the system, a huge block's address may come back as another kind of block;
  // nothing of the old one may be left to confuse them.
  for (int i = 0; i < 4; ++i) {
    Tensor a = empty({1 << 20}), b = empty({1000}), c = empty({(3 << 20) / 4});
    a.fill_(1.0);
    c.fill_(2.0);
  }
  cpu_empty_cache();
}

}  // namespace
}  // namespace wick::test
