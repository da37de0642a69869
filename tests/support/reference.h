#pragma once
// Test helpers shared by every test binary: reference values read straight from memory
// (independent of the kernels under test), random inputs from std::mt19937 (independent of
// wick's generator), non-contiguous variants of an input, and closeness checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <wick/wick.h>

namespace wick::test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A file's bytes (empty when it cannot be read: the caller's expectations then fail).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
inline std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Same shape and every element equal (NaN never equals).
inline bool tensors_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && all(eq(a, b)).item<bool>();
}

// A float64 leaf Variable that requires its gradient (1-d, or of shape s).
inline Variable leaf(std::vector<double> v) { return Variable(tensor<double>(v), true); }
inline Variable leaf(std::vector<double> v, Shape s) { return Variable(tensor<double>(v, s), true); }

// Every element of `t` as double, in row-major order, read by walking the strides over the
// raw storage on the host (a CUDA tensor's storage is copied to the host byte for byte).
std::vector<double> values(const Tensor& t);

// A contiguous CPU tensor of `shape` with random values: floats uniform in [lo, hi),
// integers uniform in [lo, hi], bools 50/50. Deterministic for a given seed.
Tensor random(const Shape& shape, DType dtype, uint64_t seed, double lo = -2.0, double hi = 2.0);

// How a test input is laid out in memory; every layout holds the same logical values.
enum class Layout { Contiguous, Transposed, Sliced, Offset };
const char* layout_name(Layout l);
inline const std::vector<Layout> kAllLayouts = {Layout::Contiguous, Layout::Transposed, Layout::Sliced,
                                               Layout::Offset};
// A tensor with t's values (and dtype/device) laid out as `layout`: Transposed reverses the
// dims of a contiguous buffer, Sliced takes every other element of a buffer twice as long in
// the last dim, Offset starts 3 elements into its storage.
Tensor with_layout(const Tensor& t, Layout layout);

// An uninitialised tensor of `shape` laid out as `layout` (see with_layout), for outputs
// that must not be contiguous: elements a kernel fails to write keep whatever was there.
Tensor empty_with_layout(const Shape& shape, const Options& o, Layout layout);

// Reference elementwise helpers over row-major double vectors with numpy broadcasting.
std::vector<double> ref_unary(const std::vector<double>& x, const std::function<double(double)>& f);
std::vector<double> ref_binary(const std::vector<double>& a, const Shape& sa, const std::vector<double>& b,
                               const Shape& sb, const std::function<double(double, double)>& f);
// Broadcasts row-major values of shape `from` to shape `to`.
std::vector<double> ref_broadcast(const std::vector<double>& v, const Shape& from, const Shape& to);

// Largest tolerated |actual - expected| is atol + rtol * |expected|; NaN matches NaN,
// infinities must match exactly. Reports the first mismatch with its index and `what`.
::testing::AssertionResult all_close(const std::vector<double>& actual, const std::vector<double>& expected,
                                     double rtol, double atol);
// The default tolerances for results of a dtype (float32: 1e-5 relative, float16: 1e-3,
// bfloat16: 1e-2, float64: 1e-12, integers and bool: exact).
double default_rtol(DType t);
double default_atol(DType t);

// Checks shape, dtype and values of `actual` against `expected` values with the dtype's
// default tolerances (or the given ones).
::testing::AssertionResult matches(const Tensor& actual, const Shape& shape, DType dtype,
                                   const std::vector<double>& expected, double rtol = -1, double atol = -1);

// Expects `f` to throw wick::Error whose message contains every one of `parts`.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts);

// The CPU, and cuda:0 when a CUDA device (a GPU or the simulator) is present.
inline std::vector<Device> cpu_and_cuda() {
  std::vector<Device> d = {Device::cpu()};
  if (cuda::device_count() > 0) d.push_back(Device::cuda());
  return d;
}

// GTEST_SKIP()s the current test when no CUDA device is present.
#define WICK_REQUIRE_CUDA()                                                          \
  do {                                                                               \
    if (::wick::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";        \
  } while (0)

}  // namespace wick::test
