// The composites added for issue 13, section 3: var/std correction, var_mean/std_mean,
// amax/amin, norm p = 0, clamp with tensor bounds, where with a number, pad, diagonal,
// repeat_interleave, take, index_fill, index_copy, tensordot, einsum. Float64 references
// by explicit loops (not by the composites' own primitives), edge shapes, refusals, and the
// finite-difference cases in the gradcheck table.
#include "tests/autograd/cases.h"

#include <cmath>
#include <limits>

#include <wick/autograd/composites.h>
#include "tests/support/reference.h"

namespace wick::test {
namespace {


// Row-major flat offset of `idx` in `shape`.
int64_t flat(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + idx[d];
  return o;
}

TEST(CompositeReductions, VarianceWithAnyCorrection) {
  Tensor x = random({3, 5}, DType::Float64, 1);
  const std::vector<double> v = values(x);
  for (double c : {0.0, 1.0, 2.0, 0.5, 5.0, 7.0}) {
    std::vector<double> expect;
    for (int64_t r = 0; r < 3; ++r) {
      double m = 0, s = 0;
      for (int64_t k = 0; k < 5; ++k) m += v[r * 5 + k] / 5;
      for (int64_t k = 0; k < 5; ++k) s += (v[r * 5 + k] - m) * (v[r * 5 + k] - m);
      expect.push_back(s / std::max(0.0, 5 - c));  // PyTorch: a divisor of 0 past n
    }
    EXPECT_TRUE(matches(var(x, {1}, c), {3}, DType::Float64, expect, 1e-12, 1e-12)) << c;
    auto [vv, mm] = var_mean(x, {1}, c, true);
    EXPECT_TRUE(matches(vv, {3, 1}, DType::Float64, expect, 1e-12, 1e-12)) << c;
    EXPECT_TRUE(all_close(values(mm), values(mean(x, {1})), 0, 0));
    for (double& e : expect) e = std::sqrt(e);
    auto [ss, sm] = std_mean(Variable(x), {1}, c);
    EXPECT_TRUE(matches(ss.data(), {3}, DType::Float64, expect, 1e-12, 1e-12)) << c;
    EXPECT_EQ(sm.shape(), Shape{3});
  }
  // bool still reads as before: true = 1, false = 0.
  EXPECT_TRUE(all_close(values(var(x, {}, true)), values(var(x, {}, 1.0)), 0, 0));
  EXPECT_TRUE(all_close(values(var(x, {}, false)), values(var(x, {}, 0.0)), 0, 0));
}

TEST(CompositeReductions, StdMeanOfAConstantSliceIsExactlyZero) {
  // An expanded input makes every reduced slice constant. PyTorch's std_mean (its Welford
  // kernel) gives exactly 0 there, so the std part of the gradient is 0 and only the mean's
  // 1/n is left; past the correction the var is 0/0 = NaN, not inf. A mean that rounds
  // (48 copies of 0.1 do not sum to 4.8) once left deviations of 1e-17, a std of 1e-17 and
  // a std gradient of +-1/sqrt(n (n - c)).
  for (DType dt : {DType::Float64, DType::Float32})
    for (double v : {0.1, -1.234567, 0.3, 3.0}) {
      Tensor x = full({}, v, dt).expand({4, 3, 4});
      for (Dims dims : std::vector<Dims>{{}, {0, 2}, {1}}) {
        const int64_t n = dims.empty() ? 48 : dims.size() == 2 ? 16 : 3;
        for (double c : {0.5, 1.0, 2.7}) {
          auto [s, m] = std_mean(x, dims, c);
          auto [var_, m2] = var_mean(x, dims, c);
          for (double e : values(s)) EXPECT_EQ(e, 0.0) << v << " c " << c;
          for (double e : values(var_)) EXPECT_EQ(e, 0.0) << v << " c " << c;
          for (double e : values(m)) EXPECT_NEAR(e, v, 1e-6 * std::fabs(v));
          Variable xv(x, true);
          auto [sv, mv] = std_mean(xv, dims, c);
          autograd::backward({sv, mv}, {Variable(ones_like(sv.data())), Variable(ones_like(mv.data()))});
          for (double e : values(xv.grad().data())) EXPECT_NEAR(e, 1.0 / static_cast<double>(n), 1e-7) << v;
        }
        for (double e : values(var(x, dims, static_cast<double>(n) + 0.5))) EXPECT_TRUE(std::isnan(e)) << v;
        for (double e : values(wick::std(x.contiguous(), dims, static_cast<double>(n)))) EXPECT_TRUE(std::isnan(e));
      }
    }
  // Not constant: the first-element centring leaves the values as before.
  Tensor y = random({5, 7}, DType::Float64, 31, 1e6, 1e6 + 1);
  const std::vector<double> yv = values(y);
  for (int64_t r = 0; r < 5; ++r) {
    double m = 0, q = 0;
    for (int64_t k = 0; k < 7; ++k) m += yv[r * 7 + k] / 7;
    for (int64_t k = 0; k < 7; ++k) q += (yv[r * 7 + k] - m) * (yv[r * 7 + k] - m);
    EXPECT_NEAR(values(var(y, {1}, 0.5))[r], q / 6.5, 1e-9 * q);
  }
}

TEST(CompositeReductions, AmaxAminOverSeveralDimsShareTheGradient) {
  Tensor x = tensor<double>({1, 5, 5, 2, 0, 5, -1, -1, 3, 2, 2, -1}, {2, 2, 3});
  EXPECT_TRUE(matches(amax(x, {0, 2}), {2}, DType::Float64, {5, 5}));
  EXPECT_TRUE(matches(amin(x, {0, 2}, true), {1, 2, 1}, DType::Float64, {-1, -1}));
  EXPECT_TRUE(matches(amax(x), {}, DType::Float64, {5}));
  EXPECT_TRUE(matches(amax(x.to(DType::Int32), {-1}), {2, 2}, DType::Int32, {5, 5, 3, 2}));
  Variable xv(x, true);
  sum(amax(xv, {0, 2})).backward();
  // Index 0 of dim 1 has two 5s (1/2 each), index 1 one.
  EXPECT_TRUE(matches(xv.grad().data(), {2, 2, 3}, DType::Float64, {0, 0.5, 0.5, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 1e-15, 0));
  Variable yv(x, true);
  Variable m = amin(yv, {1, 2});
  EXPECT_TRUE(matches(m.data(), {2}, DType::Float64, {0, -1}));
  sum(m).backward();
  EXPECT_TRUE(matches(yv.grad().data(), {2, 2, 3}, DType::Float64, {0, 0, 0, 0, 1, 0, 1. / 3, 1. / 3, 0, 0, 0, 1. / 3}, 1e-15, 0));
  // NaN wins; empty reduced dims are refused, empty kept dims are fine.
  EXPECT_TRUE(std::isnan(values(amax(tensor<double>({1, kNaN, 3})))[0]));
  expect_error([] { amax(zeros({0, 3}), {0}); }, {"amax", "size 0", "[0, 3]"});
  EXPECT_EQ(amax(zeros({0, 3}), {1}).shape(), Shape{0});
  expect_error([] { amin(zeros({2}), {0, 0}); }, {"amin", "more than once"});
}

TEST(CompositeReductions, NormWithPZeroCountsNonzeros) {
  Tensor x = tensor<double>({0, 2, -3, 0, kNaN, 1e-300}, {2, 3});
  EXPECT_TRUE(matches(norm(x, 0.0, {1}), {2}, DType::Float64, {2, 2}));
  Variable xv(x.slice(1, 0, 2), true);
  sum(norm(xv, 0.0)).backward();
  EXPECT_TRUE(matches(xv.grad().data(), {2, 2}, DType::Float64, {0, 0, 0, 0}));
  expect_error([&] { norm(x, -1.0); }, {"norm", "non-negative"});
}

TEST(CompositeElementwise, ClampWithTensorBounds) {
  Tensor x = tensor<double>({-3, -1, 0, 1, 3, kNaN}), lo = tensor<double>({-2, -2, 1, 0, 0, 0}),
         hi = tensor<double>({2});
  EXPECT_TRUE(matches(clamp(x, lo, hi), {6}, DType::Float64, {-2, -1, 1, 1, 2, kNaN}));
  EXPECT_TRUE(matches(clamp(x, std::nullopt, hi), {6}, DType::Float64, {-3, -1, 0, 1, 2, kNaN}));
  // lo > hi gives hi, as min(max(x, lo), hi).
  EXPECT_TRUE(matches(clamp(x, tensor<double>({5}), hi), {6}, DType::Float64, {2, 2, 2, 2, 2, kNaN}));
  expect_error([&] { clamp(x, std::optional<Tensor>(), std::optional<Tensor>()); }, {"clamp", "at least one"});
  // Gradients: x inside [lo, hi] (bounds included), else the bound that was taken.
  Variable xv(x.slice(0, 0, 5), true), lv(lo.slice(0, 0, 5), true), hv(hi, true);
  sum(clamp(xv, lv, hv)).backward();
  EXPECT_TRUE(matches(xv.grad().data(), {5}, DType::Float64, {0, 1, 0, 1, 0}));
  EXPECT_TRUE(matches(lv.grad().data(), {5}, DType::Float64, {1, 0, 1, 0, 0}));
  EXPECT_TRUE(matches(hv.grad().data(), {1}, DType::Float64, {1}));
}

TEST(CompositeElementwise, WhereWithANumber) {
  Tensor c = tensor<bool>({true, false, true});
  Variable a(tensor<double>({1, 2, 3}), true);
  Variable y = where(c, a, 7.5);
  EXPECT_TRUE(matches(y.data(), {3}, DType::Float64, {1, 7.5, 3}));
  sum(y).backward();
  EXPECT_TRUE(matches(a.grad().data(), {3}, DType::Float64, {1, 0, 1}));
  // An integer tensor with a float number promotes to the default float type.
  Variable yi = where(c, 0.5, Variable(tensor<int64_t>({1, 2, 3})));
  EXPECT_TRUE(matches(yi.data(), {3}, DType::Float32, {0.5, 2, 0.5}));
}

// pad against an explicit source map per mode.
TEST(CompositeShape, PadModes) {
  Tensor x = arange(0, 12, 1, DType::Float64).reshape({1, 3, 4});
  const std::vector<double> v = values(x);
  struct Case {
    PadMode mode;
    std::vector<int64_t> pads;  // last dim (left, right), then dim 1 (top, bottom)
  };
  for (const Case& c : {Case{PadMode::Reflect, {3, 2, 2, 1}}, Case{PadMode::Replicate, {4, 0, 0, 5}},
                        Case{PadMode::Circular, {4, 1, 3, 2}}, Case{PadMode::Constant, {2, -1, 1, 0}},
                        Case{PadMode::Constant, {0, 0, -1, -2}}}) {
    const int64_t l = c.pads[0], r = c.pads[1], t = c.pads[2], b = c.pads[3];
    const int64_t H = 3 + t + b, W = 4 + l + r;
    std::vector<double> expect;
    auto source = [&](int64_t j, int64_t n) -> int64_t {
      switch (c.mode) {
        case PadMode::Reflect: return j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
        case PadMode::Replicate: return std::min(std::max<int64_t>(j, 0), n - 1);
        case PadMode::Circular: return ((j % n) + n) % n;
        case PadMode::Constant: return j >= 0 && j < n ? j : -1;
      }
      return -1;
    };
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) {
        const int64_t si = source(i - t, 3), sj = source(j - l, 4);
        expect.push_back(si < 0 || sj < 0 ? (c.mode == PadMode::Constant ? 9.5 : 0.0) : v[si * 4 + sj]);
      }
    for (Layout lay : kAllLayouts)
      EXPECT_TRUE(matches(pad(with_layout(x, lay), c.pads, c.mode, c.mode == PadMode::Constant ? 9.5 : 0.0), {1, H, W},
                          DType::Float64, expect, 0, 0))
          << static_cast<int>(c.mode) << " " << layout_name(lay);
  }
  EXPECT_EQ(pad(zeros({2, 0}), {1, 1}).shape(), (Shape{2, 2}));
  EXPECT_TRUE(matches(pad(tensor<int64_t>({1, 2}), {1, 0}, PadMode::Constant, 7), {3}, DType::Int64, {7, 1, 2}));
  expect_error([&] { pad(x, {4, 0}, PadMode::Reflect); }, {"pad", "reflect", "(4, 0)", "size 4"});
  expect_error([&] { pad(x, {5, 0}, PadMode::Circular); }, {"pad", "circular", "at most"});
  expect_error([&] { pad(x, {1, 1, 1}); }, {"pad", "pairs"});
  expect_error([&] { pad(x, {-3, -2}); }, {"pad", "remove more"});
  expect_error([&] { pad(x, {-1, 0}, PadMode::Replicate); }, {"pad", "replicate", "non-negative"});
  // Reflect, replicate and circular pad k = 1..3 trailing dims of a (k+1)-d or (k+2)-d input
  // and take no value (PyTorch: "Only 2D, 3D, 4D, 5D padding with non-constant padding").
  for (PadMode m : {PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    expect_error([&] { pad(x, {1, 1, 1, 1, 1, 1}, m); }, {"pad", "3 dims", "4-d or 5-d", "[1, 3, 4]"});
    expect_error([&] { pad(x.select(0, 0).select(0, 0), {1, 1}, m); }, {"pad", "1 dims", "2-d or 3-d", "[4]"});
    expect_error([&] { pad(x.reshape({1, 1, 1, 3, 4}), {1, 1}, m); }, {"pad", "2-d or 3-d", "[1, 1, 1, 3, 4]"});
    expect_error([&] { pad(Variable(x), {}, m); }, {"pad", "0 dims"});
    expect_error([&] { pad(x, {1, 1}, m, 2.0); }, {"pad", "takes no value", "2"});
    EXPECT_EQ(pad(x.select(0, 0), {1, 1}, m).shape(), (Shape{3, 6}));
    EXPECT_EQ(pad(x.reshape({1, 1, 3, 4}), {1, 1, 1, 1}, m).shape(), (Shape{1, 1, 5, 6}));
  }
  EXPECT_EQ(pad(x.select(0, 0).select(0, 0), {1, 2}).shape(), (Shape{7}));  // constant: any rank
  EXPECT_EQ(pad(x, {1, 1, 1, 1, 1, 1}).shape(), (Shape{3, 5, 6}));
}

TEST(CompositeShape, Diagonal) {
  Tensor x = random({3, 4, 2}, DType::Float64, 5);
  const std::vector<double> v = values(x);
  for (int64_t offset : {-3, -1, 0, 2, 5}) {
    // dims 0 and 1: result [2, L]
    std::vector<double> expect;
    const int64_t r0 = std::max<int64_t>(0, -offset), c0 = std::max<int64_t>(0, offset);
    const int64_t L = std::max<int64_t>(0, std::min(3 - r0, 4 - c0));
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t i = 0; i < L; ++i) expect.push_back(v[flat({3, 4, 2}, {r0 + i, c0 + i, k})]);
    for (Layout lay : kAllLayouts)
      EXPECT_TRUE(matches(diagonal(with_layout(x, lay), offset), {2, L}, DType::Float64, expect, 0, 0)) << offset;
  }
  // dims (2, 0): planes [k=dim2 rows, i=dim0 cols]
  EXPECT_TRUE(matches(diagonal(x, 0, 2, 0), {4, 2}, DType::Float64,
                      {v[flat({3, 4, 2}, {0, 0, 0})], v[flat({3, 4, 2}, {1, 0, 1})], v[flat({3, 4, 2}, {0, 1, 0})],
                       v[flat({3, 4, 2}, {1, 1, 1})], v[flat({3, 4, 2}, {0, 2, 0})], v[flat({3, 4, 2}, {1, 2, 1})],
                       v[flat({3, 4, 2}, {0, 3, 0})], v[flat({3, 4, 2}, {1, 3, 1})]}));
  expect_error([&] { diagonal(x, 0, 1, -2); }, {"diagonal", "same dim"});
  expect_error([&] { diagonal(tensor<double>({1, 2})); }, {"diagonal", "2 dims"});
}

TEST(CompositeShape, RepeatInterleaveAndTake) {
  Tensor x = tensor<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(matches(repeat_interleave(x, 2), {12}, DType::Float64, {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
  EXPECT_TRUE(matches(repeat_interleave(x, 2, 0), {4, 3}, DType::Float64, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_TRUE(matches(repeat_interleave(x.t(), tensor<int64_t>({0, 3, 1}), 0), {4, 2}, DType::Float64,
                      {2, 5, 2, 5, 2, 5, 3, 6}));
  EXPECT_TRUE(matches(repeat_interleave(scalar_tensor(4.0, DType::Float64), 3), {3}, DType::Float64, {4, 4, 4}));
  expect_error([&] { repeat_interleave(x, tensor<int64_t>({1, 2}), 1); }, {"repeat_interleave", "2 repeats", "3"});
  expect_error([&] { repeat_interleave(x, -1); }, {"repeat_interleave", "non-negative"});
  // Empty repeats for an empty dim give an empty result (PyTorch's size rule: one repeat
  // per slice); a 0-d input has no dim to name.
  const Tensor none = zeros({0}, DType::Int64);
  EXPECT_EQ(repeat_interleave(zeros({2, 0}, DType::Float64), none, 1).shape(), (Shape{2, 0}));
  EXPECT_EQ(repeat_interleave(zeros({0, 3}, DType::Float64), none, 0).shape(), (Shape{0, 3}));
  EXPECT_EQ(repeat_interleave(zeros({0}, DType::Float64), none).shape(), (Shape{0}));
  EXPECT_EQ(repeat_interleave(Variable(zeros({2, 0}, DType::Float64)), none, -1).shape(), (Shape{2, 0}));
  expect_error([&] { repeat_interleave(x, none, 1); }, {"repeat_interleave", "0 repeats", "size 3"});
  expect_error([&] { repeat_interleave(scalar_tensor(4.0, DType::Float64), 3, 0); },
               {"repeat_interleave", "0-d", "no dim 0"});
  expect_error([&] { repeat_interleave(Variable(scalar_tensor(4.0, DType::Float64)), tensor<int64_t>({2}), -1); },
               {"repeat_interleave", "0-d", "no dim -1"});
  EXPECT_TRUE(matches(take(x.t(), tensor<int64_t>({0, 5, -1, 1}, {2, 2})), {2, 2}, DType::Float64, {1, 6, 6, 4}));
  EXPECT_EQ(take(x, zeros({0}, DType::Int64)).shape(), Shape{0});
  expect_error([&] { take(x, tensor<int64_t>({6})); }, {"take", "index 6", "size 6"});
  expect_error([&] { take(x, tensor<double>({1})); }, {"take", "integer"});
}

// var_mean / std_mean's mean is mean()'s, also with infinities in the slice (decided in
// issue 48, README): PyTorch's Welford pass gives NaN there (inf - inf in its update) where
// its own mean() gives +-inf. The variance is NaN in both.
TEST(CompositeReductions, VarMeanBesideAnInfinityKeepsTheMean) {
  const double inf = std::numeric_limits<double>::infinity();
  for (Device device : cpu_and_cuda())
    for (DType t : {DType::Float64, DType::Float32}) {
      SCOPED_TRACE(device.str() + " " + dtype_name(t));
      const Tensor x = tensor<double>({1, inf, 2, -inf, 1, 1, inf, -inf, 0}, {3, 3}).to(t).to(device);
      const std::vector<double> mean_row = {inf, -inf, kNaN};
      auto [v, m] = var_mean(x, {1});
      auto [s, m2] = std_mean(x, {1});
      EXPECT_TRUE(matches(m.to(Device::cpu()), {3}, t, mean_row, 0, 0));
      EXPECT_TRUE(matches(m2.to(Device::cpu()), {3}, t, mean_row, 0, 0));
      EXPECT_TRUE(matches(mean(x, {1}).to(Device::cpu()), {3}, t, mean_row, 0, 0));
      EXPECT_TRUE(matches(v.to(Device::cpu()), {3}, t, {kNaN, kNaN, kNaN}));
      EXPECT_TRUE(matches(s.to(Device::cpu()), {3}, t, {kNaN, kNaN, kNaN}));
      auto [all_v, all_m] = var_mean(x.narrow(0, 0, 1));
      EXPECT_TRUE(matches(all_m.to(Device::cpu()), {}, t, {inf}, 0, 0));
      // The mean's gradient is mean()'s: 1/n to every element.
      Variable xv(x, true);
      sum(var_mean(xv, {1}).second).backward();
      EXPECT_TRUE(matches(xv.grad().data().to(Device::cpu()), {3, 3}, t, std::vector<double>(9, 1.0 / 3)));
    }
}

TEST(CompositeShape, IndexFillAndIndexCopy) {
  Tensor x = tensor<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(matches(index_fill(x, 1, tensor<int64_t>({0, -1}), -7.0), {2, 3}, DType::Float64,
                      {-7, 2, -7, -7, 5, -7}));
  EXPECT_TRUE(matches(index_fill(x.t(), 0, tensor<int64_t>({1}), kNaN), {3, 2}, DType::Float64,
                      {1, 4, kNaN, kNaN, 3, 6}));
  // A negative integer into uint8 wraps around, as PyTorch's does.
  EXPECT_TRUE(matches(index_fill(x.to(DType::UInt8), 1, tensor<int64_t>({1}), -1), {2, 3}, DType::UInt8,
                      {1, 255, 3, 4, 255, 6}));
  expect_error([&] { index_fill(x.to(DType::UInt8), 1, tensor<int64_t>({1}), -256); }, {"uint8", "overflow"});
  // A repeated index: the last source row wins.
  Tensor src = tensor<double>({10, 20, 30, 40, 50, 60}, {3, 2});
  EXPECT_TRUE(matches(index_copy(x, 1, tensor<int64_t>({2, 0, 2}), src.t()), {2, 3}, DType::Float64,
                      {30, 2, 50, 40, 5, 60}));
  expect_error([&] { index_copy(x, 1, tensor<int64_t>({0}), src); }, {"index_copy", "[3, 2]", "[2, 1]"});
  expect_error([&] { index_fill(x, 0, tensor<int64_t>({2}), 1.0); }, {"index_fill", "index 2", "size 2"});
  // index_copy refuses a negative index, as PyTorch's (decided in issue 48, README), where
  // index_fill counts it from the end as PyTorch's does.
  expect_error([&] { index_copy(x, 1, tensor<int64_t>({-1}), src.t().narrow(1, 0, 1)); },
               {"index_copy", "index -1", "negative", "[0, 3)"});
  expect_error([&] { index_copy(Variable(x), 0, tensor<int64_t>({1, -2}), Variable(x)); },
               {"index_copy", "index -2", "negative"});
  // Gradients: the filled / overwritten entries get none; src gets its surviving rows'.
  Variable xv(x, true), sv(src.t().contiguous(), true);
  sum(mul(index_copy(xv, 1, tensor<int64_t>({2, 0, 2}), sv), 3.0)).backward();
  EXPECT_TRUE(matches(xv.grad().data(), {2, 3}, DType::Float64, {0, 3, 0, 0, 3, 0}));
  EXPECT_TRUE(matches(sv.grad().data(), {2, 3}, DType::Float64, {0, 3, 3, 0, 3, 3}));
}

// PyTorch fills nothing and checks no index where x has no element beside `dim` (its kernel
// checks each index as it fills); where the other dims are not empty, a bad index is still
// refused, even with an empty `dim`.
TEST(CompositeShape, IndexFillOfAnEmptyTensorChecksNoIndex) {
  for (Device device : cpu_and_cuda()) {
    SCOPED_TRACE(device.str());
    const Tensor x = zeros({0, 3}, Options(DType::Float32, device));
    EXPECT_TRUE(matches(index_fill(x, 1, tensor<int64_t>({5}).to(device), 2.0).to(Device::cpu()), {0, 3},
                        DType::Float32, {}));
    EXPECT_TRUE(matches(index_fill(zeros({2, 0, 4}, Options(DType::Int64, device)), 2,
                                   tensor<int64_t>({-9, 7}).to(device), 1).to(Device::cpu()),
                        {2, 0, 4}, DType::Int64, {}));
    Variable xv(x, true);
    Variable y = index_fill(xv, 1, tensor<int64_t>({3}).to(device), 1.0);
    sum(y).backward();
    EXPECT_TRUE(matches(xv.grad().data().to(Device::cpu()), {0, 3}, DType::Float32, {}));
    expect_error([&] { index_fill(zeros({3, 0}, Options(DType::Float32, device)), 1, tensor<int64_t>({0}), 1.0); },
                 {"index_fill", "index 0", "size 0"});
  }
}

TEST(CompositeIndexing, AdvancedIndexAndIndexPut) {
  Tensor x = arange(0, 24, 1, DType::Float64).reshape({2, 3, 4});
  // x[[1, 0, -1], [2, 0, 1]] -> rows of the last dim.
  Tensor r = index(with_layout(x, Layout::Transposed), {tensor<int64_t>({1, 0, -1}), tensor<int64_t>({2, 0, 1})});
  EXPECT_TRUE(matches(r, {3, 4}, DType::Float64, {20, 21, 22, 23, 0, 1, 2, 3, 16, 17, 18, 19}));
  // Broadcast index tensors: [2, 1] with [3] -> [2, 3].
  Tensor b = index(x, {tensor<int64_t>({0, 1}, {2, 1}), tensor<int64_t>({0, 1, 2}), tensor<int64_t>({3})});
  EXPECT_TRUE(matches(b, {2, 3}, DType::Float64, {3, 7, 11, 15, 19, 23}));
  // A bool mask over the leading dims.
  Tensor m = tensor<bool>({true, false, false, false, true, true}, {2, 3});
  EXPECT_TRUE(matches(index(x, {m}), {3, 4}, DType::Float64, {0, 1, 2, 3, 16, 17, 18, 19, 20, 21, 22, 23}));
  expect_error([&] { index(x, {tensor<int64_t>({2})}); }, {"index", "index 2", "dim 0", "size 2"});
  expect_error([&] { index(x, {tensor<bool>({true, false, true})}); }, {"index", "mask", "[3]"});
  // index_put: last write wins; accumulate adds repeats.
  Tensor v = tensor<double>({-1, -2, -3});
  EXPECT_TRUE(matches(index_put(x.select(2, 0), {tensor<int64_t>({0, 0, 1}), tensor<int64_t>({1, 1, 2})}, v),
                      {2, 3}, DType::Float64, {0, -2, 8, 12, 16, -3}));
  EXPECT_TRUE(matches(index_put(x.select(2, 0), {tensor<int64_t>({0, 0, 1}), tensor<int64_t>({1, 1, 2})}, v, true),
                      {2, 3}, DType::Float64, {0, 1, 8, 12, 16, 17}));
  EXPECT_TRUE(matches(index_put(x.select(2, 0), {m}, scalar_tensor(9.0, DType::Float64)), {2, 3}, DType::Float64,
                      {9, 4, 8, 12, 9, 9}));
  expect_error([&] { index_put(x, {tensor<int64_t>({0})}, zeros({5})); }, {"index_put", "[5]", "[1, 3, 4]"});
  // Values of another dtype are refused, as PyTorch's index_put does, but for one bool mask
  // and one value without accumulate (PyTorch's masked_fill route, which converts it).
  expect_error([&] { index_put(x, {tensor<int64_t>({0})}, zeros({4})); }, {"index_put", "float32", "float64"});
  expect_error([&] { index_put(Variable(x), {tensor<int64_t>({0})}, Variable(zeros({1}, DType::Float32))); },
               {"index_put", "float32", "float64"});
  expect_error([&] { index_put(x.select(2, 0), {m}, scalar_tensor(9, DType::Int64), true); }, {"index_put", "int64"});
  EXPECT_TRUE(matches(index_put(x.select(2, 0), {m}, scalar_tensor(9, DType::Int64)), {2, 3}, DType::Float64,
                      values(index_put(x.select(2, 0), {m}, scalar_tensor(9.0, DType::Float64)))));
  // Gradients: index scatters back (repeats add up); index_put's values get the written rows.
  Variable xv(x.select(2, 0).contiguous(), true);
  sum(index(xv, {tensor<int64_t>({1, 1, 0})})).backward();
  EXPECT_TRUE(matches(xv.grad().data(), {2, 3}, DType::Float64, {1, 1, 1, 2, 2, 2}));
}

TEST(CompositeIndexing, MaskedScatterAndUnfold) {
  Tensor x = zeros({2, 3}, DType::Float64);
  Tensor m = tensor<bool>({true, false, true});
  Tensor src = tensor<double>({1, 2, 3, 4, 5});
  EXPECT_TRUE(matches(masked_scatter(x, m, src), {2, 3}, DType::Float64, {1, 0, 2, 3, 0, 4}));
  expect_error([&] { masked_scatter(x, m, tensor<double>({1, 2, 3})); }, {"masked_scatter", "selects 4", "has 3"});
  expect_error([&] { masked_scatter(x, m, tensor<float>({1, 2, 3, 4})); }, {"masked_scatter", "float32", "float64"});
  Tensor s = arange(0, 7, 1, DType::Float64);
  EXPECT_TRUE(matches(unfold(s, 0, 3, 2), {3, 3}, DType::Float64, {0, 1, 2, 2, 3, 4, 4, 5, 6}));
  Tensor y = unfold(arange(0, 12, 1, DType::Float64).reshape({3, 4}), 0, 2, 1);  // [2, 4, 2]
  EXPECT_TRUE(matches(y, {2, 4, 2}, DType::Float64, {0, 4, 1, 5, 2, 6, 3, 7, 4, 8, 5, 9, 6, 10, 7, 11}));
  EXPECT_EQ(unfold(s, 0, 0, 3).shape(), (Shape{3, 0}));
  expect_error([&] { unfold(s, 0, 8, 1); }, {"unfold", "size 8", "size 7"});
}

TEST(CompositeIndexing, ScatterReduceEveryReduction) {
  Tensor x = tensor<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor idx = tensor<int64_t>({0, 0, 2, 1, 1, 1}, {2, 3});
  Tensor src = tensor<double>({10, 20, 30, -1, 4, 2}, {2, 3});
  auto check = [&](ScatterReduce r, bool self, std::vector<double> expect) {
    EXPECT_TRUE(matches(scatter_reduce(x, 1, idx, src, r, self), {2, 3}, DType::Float64, expect))
        << static_cast<int>(r) << " " << self;
    EXPECT_TRUE(matches(scatter_reduce(Variable(x), 1, idx, Variable(src), r, self).data(), {2, 3}, DType::Float64,
                        expect));
  };
  check(ScatterReduce::Sum, true, {31, 2, 33, 4, 10, 6});
  check(ScatterReduce::Sum, false, {30, 2, 30, 4, 5, 6});
  check(ScatterReduce::Mean, true, {31. / 3, 2, 33. / 2, 4, 10. / 4, 6});
  check(ScatterReduce::Mean, false, {15, 2, 30, 4, 5. / 3, 6});
  check(ScatterReduce::Prod, true, {200, 2, 90, 4, -40, 6});
  check(ScatterReduce::Prod, false, {200, 2, 30, 4, -8, 6});
  check(ScatterReduce::Amax, true, {20, 2, 30, 4, 5, 6});
  check(ScatterReduce::Amin, false, {10, 2, 30, 4, -1, 6});
  EXPECT_TRUE(matches(scatter_reduce(x.to(DType::Int64), 1, idx, src.to(DType::Int64), ScatterReduce::Mean),
                      {2, 3}, DType::Int64, {10, 2, 16, 4, 2, 6}));
  expect_error([&] { scatter_reduce(x, 1, idx, src.narrow(1, 0, 2), ScatterReduce::Sum); },
               {"scatter_reduce", "larger than src"});
  expect_error([&] { scatter_reduce(x, 1, idx.reshape({6, 1}), src, ScatterReduce::Prod); },
               {"scatter_reduce", "larger than src", "dim 0"});
  expect_error([&] { scatter_reduce(x, 1, idx.reshape({-1}), src, ScatterReduce::Amin); },
               {"scatter_reduce", "same number of dims"});
  expect_error([&] { scatter_reduce(x, 1, tensor<int64_t>({0, 3}, {1, 2}), src, ScatterReduce::Amax); },
               {"scatter_reduce", "index 3", "out of bounds", "size 3"});
  expect_error([&] { scatter_reduce(x, 1, tensor<int64_t>({0, -1}, {1, 2}), src, ScatterReduce::Amax); },
               {"scatter_reduce", "index -1", "out of bounds"});
}

// torch.scatter_reduce by loops: self[i][index[i][j][k]][k] (dim 1) op= src[i][j][k] over
// the positions of index, which may be smaller than src in every dim and than self outside
// dim; integer means divide with floor, as PyTorch's.
std::vector<double> scatter_reduce_loops(const std::vector<double>& x, const Shape& xs, int64_t d,
                                         const std::vector<double>& idx, const Shape& is, const std::vector<double>& src,
                                         const Shape& ss, ScatterReduce r, bool include_self, bool integer) {
  std::vector<double> acc = x, count(x.size(), include_self ? 1 : 0);
  std::vector<bool> touched(x.size(), false);
  const int64_t n = numel_of(is);
  for (int64_t p = 0; p < n; ++p) {
    std::vector<int64_t> c(is.size());
    for (int64_t k = static_cast<int64_t>(is.size()) - 1, q = p; k >= 0; --k) c[k] = q % is[k], q /= is[k];
    std::vector<int64_t> t = c;
    t[d] = static_cast<int64_t>(idx[p]);
    const size_t xt = static_cast<size_t>(flat(xs, t));
    const double v = src[static_cast<size_t>(flat(ss, c))];
    if (!include_self && !touched[xt]) {
      acc[xt] = v;
      count[xt] = 1;
    } else {
      double& a = acc[xt];
      if (r == ScatterReduce::Sum || r == ScatterReduce::Mean) a += v;
      else if (r == ScatterReduce::Prod) a *= v;
      else if (std::isnan(a) || std::isnan(v)) a = kNaN;
      else a = r == ScatterReduce::Amax ? std::max(a, v) : std::min(a, v);
      count[xt] += 1;
    }
    touched[xt] = true;
  }
  if (r == ScatterReduce::Mean)
    for (size_t i = 0; i < acc.size(); ++i)
      if (touched[i] || include_self) acc[i] = integer ? std::floor(acc[i] / count[i]) : acc[i] / count[i];
  return acc;
}

TEST(CompositeIndexing, ScatterReduceAgainstLoopsWithSmallerIndex) {
  // x [4, 5, 3], reduced along each dim in turn; index smaller than x outside dim and
  // smaller than src everywhere (PyTorch's rule), with repeats, and NaN in src.
  const Shape xs = {4, 5, 3};
  const std::vector<ScatterReduce> all = {ScatterReduce::Sum, ScatterReduce::Prod, ScatterReduce::Mean,
                                          ScatterReduce::Amax, ScatterReduce::Amin};
  uint64_t seed = 40;
  for (DType dt : {DType::Float64, DType::Float32, DType::Int64, DType::Int32})
    for (int64_t d = 0; d < 3; ++d) {
      Shape is = {3, 2, 2}, ss = {4, 6, 3};
      is[d] = 6;
      ss[d] = 7;
      Tensor x = random(xs, dt, seed++, -3, 3), src = random(ss, dt, seed++, -3, 3);
      if (dt == DType::Float64) src.view({-1}).narrow(0, 5, 1).fill_(kNaN);
      Tensor index = random(is, DType::Int64, seed++, 0, static_cast<double>(xs[d] - 1));
      for (ScatterReduce r : all)
        for (bool self : {true, false}) {
          const std::vector<double> expect =
              scatter_reduce_loops(values(x), xs, d, values(index), is, values(src), ss, r, self, !is_floating(dt));
          const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
          EXPECT_TRUE(matches(scatter_reduce(x, d, index, src, r, self), xs, dt, expect, tol, tol))
              << dtype_name(dt) << " dim " << d << " reduce " << static_cast<int>(r) << " include_self " << self;
          if (is_floating(dt))
            EXPECT_TRUE(matches(scatter_reduce(Variable(with_layout(x, Layout::Transposed)), d, index,
                                               Variable(with_layout(src, Layout::Sliced)), r, self).data(),
                                xs, dt, expect, tol, tol));
        }
    }
  // 0-d, an empty index, and int32 indices.
  Tensor s0 = tensor<double>({2.5}).reshape({});
  EXPECT_TRUE(matches(scatter_reduce(s0, 0, tensor<int64_t>({0}).reshape({}), tensor<double>({-4}).reshape({}),
                                     ScatterReduce::Prod), {}, DType::Float64, {-10}));
  Tensor x = random({2, 3}, DType::Float64, 3);
  Tensor untouched = scatter_reduce(x, 1, zeros({2, 0}, DType::Int64), zeros({2, 0}, DType::Float64),
                                    ScatterReduce::Amin, false);
  EXPECT_TRUE(matches(untouched, {2, 3}, DType::Float64, values(x)));
  EXPECT_FALSE(untouched.shares_storage(x));  // a new tensor, as PyTorch's
  EXPECT_TRUE(all_close(values(scatter_reduce(x, 0, tensor<int32_t>({1, 1}, {1, 2}), ones({1, 2}, DType::Float64),
                                              ScatterReduce::Amax)),
                        values(scatter_reduce(x, 0, tensor<int64_t>({1, 1}, {1, 2}), ones({1, 2}, DType::Float64),
                                              ScatterReduce::Amax)), 0, 0));
}

TEST(CompositeIndexing, ScatterReduceIsSegmentedOnLargeInputs) {
  // 140,000 entries into 140,000 positions: the dense comparison of every entry with every
  // position (2e10 pairs) ran out of memory here.
  const int64_t n = 140000;
  Tensor x = random({n}, DType::Float64, 5, 0.5, 1.5), src = random({n}, DType::Float64, 6, 0.5, 1.5);
  Tensor index = random({n}, DType::Int64, 7, 0, n - 1);
  for (ScatterReduce r : {ScatterReduce::Prod, ScatterReduce::Amax, ScatterReduce::Amin})
    for (bool self : {true, false})
      EXPECT_TRUE(matches(scatter_reduce(x, 0, index, src, r, self), {n}, DType::Float64,
                          scatter_reduce_loops(values(x), {n}, 0, values(index), {n}, values(src), {n}, r, self, false),
                          1e-12, 1e-12));
  Variable xv(x, true), sv(src, true);
  sum(scatter_reduce(xv, 0, index, sv, ScatterReduce::Amax, false)).backward();
  EXPECT_EQ(sv.grad().shape(), (Shape{n}));
}

TEST(CompositeIndexing, ScatterReduceExcludedSelfTakesNoShareOfTheGradient) {
  // out[0] = max(src[0], src[1]) = src[0] = 3 with x[0] = 3 left out: out[0] moves one for
  // one with src[0] (a unique maximum among what is reduced), so src[0]'s gradient is 1.
  // PyTorch gives 0.5 (its tie count includes the excluded x); wick follows the derivative.
  for (ScatterReduce r : {ScatterReduce::Amax, ScatterReduce::Amin}) {
    const double other = r == ScatterReduce::Amax ? 1 : 7;
    auto f = [&](const std::vector<Variable>& v) {
      return scatter_reduce(v[0], 0, tensor<int64_t>({0, 0}), v[1], r, false);
    };
    Variable xv(tensor<double>({3, 5}), true), sv(tensor<double>({3, other}), true);
    sum(f({xv, sv})).backward();
    EXPECT_TRUE(matches(xv.grad().data(), {2}, DType::Float64, {0, 1}));
    EXPECT_TRUE(matches(sv.grad().data(), {2}, DType::Float64, {1, 0}));
    // The same by central differences (the function is linear near this point).
    const double h = 1e-3;
    auto out0 = [&](double s0) {
      return values(f({Variable(tensor<double>({3, 5})), Variable(tensor<double>({s0, other}))}).data())[0];
    };
    EXPECT_NEAR((out0(3 + h) - out0(3 - h)) / (2 * h), 1.0, 1e-9);
    // Included, x ties with src[0] and the two share it.
    Variable xi(tensor<double>({3, 5}), true), si(tensor<double>({3, other}), true);
    sum(scatter_reduce(xi, 0, tensor<int64_t>({0, 0}), si, r, true)).backward();
    EXPECT_TRUE(matches(xi.grad().data(), {2}, DType::Float64, {0.5, 1}));
    EXPECT_TRUE(matches(si.grad().data(), {2}, DType::Float64, {0.5, 0}));
  }
}

TEST(CompositeIndexing, EmbeddingBagModes) {
  Tensor w = random({5, 3}, DType::Float64, 21);
  const std::vector<double> wv = values(w);
  const Tensor input = tensor<int64_t>({4, 1, 1, 0, 3, 2}), offsets = tensor<int64_t>({0, 2, 2, 5});
  // Bags: {4, 1}, {}, {1, 0, 3}, {2}; padding_idx 1 drops the 1s.
  auto row = [&](int64_t r, int64_t c) { return wv[static_cast<size_t>(r * 3 + c)]; };
  const std::vector<std::vector<int64_t>> bags = {{4, 1}, {}, {1, 0, 3}, {2}};
  for (EmbeddingBagMode mode : {EmbeddingBagMode::Sum, EmbeddingBagMode::Mean, EmbeddingBagMode::Max})
    for (bool pad : {false, true}) {
      std::vector<double> expect;
      for (const auto& bag : bags)
        for (int64_t c = 0; c < 3; ++c) {
          double s = 0, m = -INFINITY;
          int64_t k = 0;
          for (int64_t r : bag) {
            if (pad && r == 1) continue;
            s += row(r, c), m = std::max(m, row(r, c)), ++k;
          }
          expect.push_back(k == 0 ? 0 : mode == EmbeddingBagMode::Sum ? s : mode == EmbeddingBagMode::Mean ? s / k : m);
        }
      EmbeddingBagOptions o;
      o.mode = mode;
      if (pad) o.padding_idx = 1;
      EXPECT_TRUE(matches(embedding_bag(w, input, offsets, o), {4, 3}, DType::Float64, expect, 1e-14, 1e-14))
          << static_cast<int>(mode) << " " << pad;
    }
  // 2-d input (fixed-size bags), include_last_offset, per_sample_weights.
  EmbeddingBagOptions sum;
  sum.mode = EmbeddingBagMode::Sum;
  EXPECT_TRUE(all_close(values(embedding_bag(w, tensor<int64_t>({4, 1, 0, 3}, {2, 2}), Tensor(), sum)),
                        values(embedding_bag(w, tensor<int64_t>({4, 1, 0, 3}), tensor<int64_t>({0, 2}), sum)), 0, 0));
  EmbeddingBagOptions last = sum;
  last.include_last_offset = true;
  EXPECT_EQ(embedding_bag(w, input, tensor<int64_t>({0, 2, 6}), last).shape(), (Shape{2, 3}));
  EmbeddingBagOptions weighted = sum;
  weighted.per_sample_weights = tensor<double>({2, 0, 0, 0, 0, 0});
  EXPECT_TRUE(matches(embedding_bag(w, input, tensor<int64_t>({0}), weighted), {1, 3}, DType::Float64,
                      {2 * row(4, 0), 2 * row(4, 1), 2 * row(4, 2)}));
  expect_error([&] { embedding_bag(w, input, tensor<int64_t>({1, 3})); }, {"embedding_bag", "first offset"});
  expect_error([&] { embedding_bag(w, tensor<int64_t>({5}), tensor<int64_t>({0})); }, {"embedding_bag", "index 5"});
  EmbeddingBagOptions weighted_mean = weighted;
  weighted_mean.mode = EmbeddingBagMode::Mean;
  expect_error([&] { embedding_bag(w, input, offsets, weighted_mean); }, {"embedding_bag", "per_sample_weights", "Sum"});
}

// mode Max gives each dim's gradient to the first entry of the bag (in bag order, padding
// skipped) that holds the maximum, as PyTorch's max_indices do; equal rows do not share it.
TEST(CompositeIndexing, EmbeddingBagMaxGradientGoesToTheFirstMaximumOfTheBag) {
  for (Device device : cpu_and_cuda()) {
    SCOPED_TRACE(device.str());
    const Tensor w = tensor<double>({1, 5, 3, 5, 3, 2, 0, 5, 3, 5}, {5, 2}).to(device);
    // Bags {0, 1, 2, 3}: dim 0's maximum 3 in rows 1 and 2, dim 1's 5 in rows 0, 1 and 3;
    // {3, 1, 0}: rows 3, 1 and 0 hold dim 1's 5 and row 3 comes first; {4, 2, 2}: padding 4
    // skipped, row 2 twice (its first entry takes it); {2, 4}: row 2 alone.
    const Tensor input = tensor<int64_t>({0, 1, 2, 3, 3, 1, 0, 4, 2, 2, 2, 4}).to(device);
    const Tensor offsets = tensor<int64_t>({0, 4, 7, 10}).to(device);
    EmbeddingBagOptions o;
    o.mode = EmbeddingBagMode::Max;
    o.padding_idx = 4;
    Variable wv(w, true);
    Variable y = embedding_bag(wv, input, offsets, o);
    EXPECT_TRUE(matches(y.data().to(Device::cpu()), {4, 2}, DType::Float64, {3, 5, 3, 5, 3, 2, 3, 2}, 0, 0));
    // Weigh the bags' outputs apart: bag b's gradient is 10^b.
    sum(mul(y, Variable(tensor<double>({1, 1, 10, 10, 100, 100, 1000, 1000}, {4, 2}).to(device)))).backward();
    // Row 0: bag 0's dim 1 (1); row 1: bag 0's dim 0 and bag 1's dim 0 (1 + 10); row 2: bag 2
    // (both dims, 100) and bag 3 (1000); row 3: bag 1's dim 1 (10).
    EXPECT_TRUE(matches(wv.grad().data().to(Device::cpu()), {5, 2}, DType::Float64,
                        {0, 1, 11, 0, 1100, 1100, 0, 10, 0, 0}, 0, 0));
  }
}

TEST(CompositeIndexing, EmbeddingBagNegativePaddingIdxCountsFromTheEnd) {
  // padding_idx -4 of 5 embeddings is row 1: its entries count nowhere, in the value and in
  // the weight's gradient (PyTorch adds the number of embeddings to a negative padding_idx).
  Tensor w = random({5, 3}, DType::Float64, 22);
  const Tensor input = tensor<int64_t>({4, 1, 1, 0, 3, 2}), offsets = tensor<int64_t>({0, 2, 2, 5});
  for (EmbeddingBagMode mode : {EmbeddingBagMode::Sum, EmbeddingBagMode::Mean, EmbeddingBagMode::Max}) {
    EmbeddingBagOptions neg, pos;
    neg.mode = pos.mode = mode;
    neg.padding_idx = -4;
    pos.padding_idx = 1;
    Variable wn(w, true), wp(w, true);
    Variable yn = embedding_bag(wn, input, offsets, neg), yp = embedding_bag(wp, input, offsets, pos);
    EXPECT_TRUE(all_close(values(yn.data()), values(yp.data()), 0, 0)) << static_cast<int>(mode);
    sum(yn).backward();
    sum(yp).backward();
    EXPECT_TRUE(all_close(values(wn.grad().data()), values(wp.grad().data()), 0, 0));
    EXPECT_TRUE(matches(wn.grad().data().select(0, 1), {3}, DType::Float64, {0, 0, 0}));
  }
  EmbeddingBagOptions last;
  last.padding_idx = -5;  // row 0
  EXPECT_TRUE(matches(embedding_bag(w, tensor<int64_t>({0, 0}), tensor<int64_t>({0}), last), {1, 3}, DType::Float64,
                      {0, 0, 0}));
  for (int64_t bad : {-6, 5}) {
    EmbeddingBagOptions o;
    o.padding_idx = bad;
    expect_error([&] { embedding_bag(w, input, offsets, o); },
                 {"embedding_bag", "padding_idx " + std::to_string(bad), "out of range", "5 embeddings"});
  }
  // A 2-d input with empty bags is refused (PyTorch's offsets would step by 0); no bags is fine.
  expect_error([&] { embedding_bag(w, zeros({2, 0}, DType::Int64)); }, {"embedding_bag", "[2, 0]", "at least one"});
  expect_error([&] { embedding_bag(w, zeros({0, 0}, DType::Int64)); }, {"embedding_bag", "[0, 0]"});
  EXPECT_EQ(embedding_bag(w, zeros({0, 4}, DType::Int64)).shape(), (Shape{0, 3}));
}

TEST(CompositeContraction, TensordotAgainstLoops) {
  Tensor a = random({3, 4, 5}, DType::Float64, 7), b = random({5, 2, 4}, DType::Float64, 8);
  const std::vector<double> va = values(a), vb = values(b);
  std::vector<double> expect;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t l = 0; l < 5; ++l) s += va[flat({3, 4, 5}, {i, k, l})] * vb[flat({5, 2, 4}, {l, j, k})];
      expect.push_back(s);
    }
  EXPECT_TRUE(matches(tensordot(a, b, {1, 2}, {2, 0}), {3, 2}, DType::Float64, expect, 1e-12, 1e-12));
  EXPECT_TRUE(matches(tensordot(with_layout(a, Layout::Transposed), b, {-1, 1}, {0, 2}), {3, 2}, DType::Float64,
                      expect, 1e-12, 1e-12));
  EXPECT_EQ(tensordot(a, b, 0).shape(), (Shape{3, 4, 5, 5, 2, 4}));
  EXPECT_EQ(tensordot(random({2, 5}, DType::Float64, 9), b, 1).shape(), (Shape{2, 2, 4}));
  expect_error([&] { tensordot(a, b, {0}, {0}); }, {"tensordot", "3 != 5"});
  expect_error([&] { tensordot(a, b, 4); }, {"tensordot", "4 dims"});
}

TEST(CompositeContraction, EinsumAgainstLoops) {
  Tensor a = random({2, 3, 4}, DType::Float64, 11), b = random({2, 4, 5}, DType::Float64, 12);
  const std::vector<double> va = values(a), vb = values(b);
  std::vector<double> bmm_ref;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double s = 0;
        for (int64_t k = 0; k < 4; ++k) s += va[flat({2, 3, 4}, {n, i, k})] * vb[flat({2, 4, 5}, {n, k, j})];
        bmm_ref.push_back(s);
      }
  EXPECT_TRUE(matches(einsum("bij,bjk->bik", {a, b}), {2, 3, 5}, DType::Float64, bmm_ref, 1e-12, 1e-12));
  // Without "->": the letters seen once (i, k); b, seen twice, is summed.
  EXPECT_TRUE(all_close(values(einsum("bij, bjk", {with_layout(a, Layout::Sliced), b})),
                        values(sum(tensor<double>(bmm_ref, {2, 3, 5}), {0})), 1e-12, 1e-12));
  EXPECT_TRUE(matches(einsum("...ij,...jk->...ik", {a, b}), {2, 3, 5}, DType::Float64, bmm_ref, 1e-12, 1e-12));
  // The output ordered differently, a transposed result.
  Tensor r = einsum("bij,bjk->kbi", {a, b});
  ASSERT_EQ(r.shape(), (Shape{5, 2, 3}));
  EXPECT_DOUBLE_EQ(values(r)[flat({5, 2, 3}, {4, 1, 2})], bmm_ref[flat({2, 3, 5}, {1, 2, 4})]);
  // Trace, diagonal, sum, outer product, transpose, three operands.
  Tensor m = random({4, 4}, DType::Float64, 13);
  const std::vector<double> vm = values(m);
  EXPECT_NEAR(values(einsum("ii", {m}))[0], vm[0] + vm[5] + vm[10] + vm[15], 1e-12);
  EXPECT_TRUE(matches(einsum("ii->i", {m}), {4}, DType::Float64, {vm[0], vm[5], vm[10], vm[15]}));
  EXPECT_TRUE(all_close(values(einsum("ij->", {m})), values(sum(m)), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(values(einsum("ij->ji", {m})), values(m.t().contiguous()), 0, 0));
  Tensor u = random({3}, DType::Float64, 14), w = random({2}, DType::Float64, 15);
  EXPECT_TRUE(all_close(values(einsum("i,j->ij", {u, w})), values(outer(u, w)), 1e-15, 0));
  Tensor c = random({5, 2}, DType::Float64, 16);
  EXPECT_TRUE(all_close(values(einsum("bij,bjk,kl->bil", {a, b, c})), values(matmul(matmul(a, b), c)), 1e-12, 1e-12));
  // A size-1 dim broadcasts.
  EXPECT_TRUE(all_close(values(einsum("bij,bjk->bik", {a.narrow(0, 0, 1), b})),
                        values(matmul(a.narrow(0, 0, 1), b)), 1e-12, 1e-12));
  expect_error([&] { einsum("ij,jk", {m}); }, {"einsum", "2 terms", "1 operands"});
  expect_error([&] { einsum("ijk", {m}); }, {"einsum", "3 letters", "2 dims"});
  expect_error([&] { einsum("ij,jk->ik", {a.narrow(0, 0, 1).squeeze(0), m.narrow(0, 0, 3)}); }, {"einsum", "4", "3"});
  expect_error([&] { einsum("i1", {u}); }, {"einsum", "'1'"});
  expect_error([&] { einsum("ij->iz", {m}); }, {"einsum", "in no input"});
}

TEST(CompositeContraction, EinsumWithSizeZeroDims) {
  // A contracted size-0 label sums nothing (zeros); a kept one gives an empty result; a
  // size-1 label broadcasts against 0 as against any size. Once "cannot expand [0, 4] to
  // [1, 4]".
  auto z = [](const Shape& s) { return random(s, DType::Float64, 3); };
  auto expect_zeros = [](const Tensor& t, const Shape& shape) {
    EXPECT_TRUE(matches(t, shape, DType::Float64, std::vector<double>(static_cast<size_t>(numel_of(shape)), 0.0)));
  };
  expect_zeros(einsum("ij,jk->ik", {z({3, 0}), z({0, 4})}), {3, 4});
  expect_zeros(einsum("ij,jk->ik", {z({0, 2}), z({2, 4})}), {0, 4});
  expect_zeros(einsum("ij,jk", {z({3, 2}), z({2, 0})}), {3, 0});
  expect_zeros(einsum("bij,bjk->bik", {z({0, 2, 3}), z({1, 3, 4})}), {0, 2, 4});
  expect_zeros(einsum("bij,bjk->bik", {z({1, 2, 3}), z({0, 3, 4})}), {0, 2, 4});
  expect_zeros(einsum("...ij,...jk->...ik", {z({0, 2, 3}), z({3, 4})}), {0, 2, 4});
  expect_zeros(einsum("ii->i", {z({0, 0})}), {0});
  expect_zeros(einsum("ii", {z({0, 0})}), {});
  expect_zeros(einsum("i,i->", {z({0}), z({0})}), {});
  expect_zeros(einsum("ij->j", {z({0, 3})}), {3});
  expect_zeros(einsum("i,j->ij", {z({0}), z({2})}), {0, 2});
  expect_zeros(einsum("i,ij,j", {z({2}), z({2, 0}), z({0})}), {});
  expect_error([&] { einsum("ij,jk", {z({3, 0}), z({2, 4})}); }, {"einsum", "sizes 0 and 2"});
  // The gradients are zeros of the operands' shapes.
  Variable a(z({3, 0}), true), b(z({0, 4}), true), c(z({2, 3}), true);
  sum(add(einsum("ij,jk->ik", {a, b}), narrow(einsum("ij,jk->ik", {c, Variable(z({3, 4}))}), 0, 0, 1))).backward();
  EXPECT_EQ(a.grad().shape(), (Shape{3, 0}));
  EXPECT_EQ(b.grad().shape(), (Shape{0, 4}));
  Variable d(z({2, 3}), true);
  sum(einsum("ij,jk->ik", {d, Variable(z({3, 0}))})).backward();
  expect_zeros(d.grad().data(), {2, 3});
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(shape_composites) {
  using namespace wick;
  return {
      {"var correction 2", [](auto& v) { return var(v[0], {1}, 2.0, true); }, {{2, 5}}},
      {"std_mean", [](auto& v) { auto [s, m] = std_mean(v[0], {0}, 0.5); return add(s, m); }, {{4, 3}}},
      {"amax dims", [](auto& v) { return amax(v[0], {0, 2}); }, {{2, 3, 2}}},
      {"amin all", [](auto& v) { return amin(v[0]); }, {{3, 2}}},
      {"clamp tensor bounds", [](auto& v) { return clamp(v[0], std::optional<Variable>(v[1]), std::optional<Variable>(v[2])); },
       {{3, 4}, {4}, {3, 1}}},
      {"where number", [](auto& v) { return where(gt(v[0].data(), 0.0), v[0], 2.0); }, {{5}}},
      {"pad reflect", [](auto& v) { return pad(v[0], {2, 1, 1, 2}, PadMode::Reflect); }, {{2, 3, 4}}},
      {"pad replicate", [](auto& v) { return pad(v[0], {3, 0}, PadMode::Replicate); }, {{2, 3}}},
      {"pad circular", [](auto& v) { return pad(v[0], {2, 3}, PadMode::Circular); }, {{2, 3}}},
      {"pad constant crop", [](auto& v) { return pad(v[0], {1, -1, -1, 2}, PadMode::Constant, 0.5); }, {{3, 3}}},
      {"diagonal offset", [](auto& v) { return diagonal(v[0], 1, 2, 0); }, {{3, 2, 4}}},
      {"repeat_interleave", [](auto& v) { return repeat_interleave(v[0], tensor<int64_t>({2, 0, 1}), 1); }, {{2, 3}}},
      {"take", [](auto& v) { return take(v[0], tensor<int64_t>({3, 0, 3, -1})); }, {{2, 2}}},
      {"index_fill", [](auto& v) { return index_fill(v[0], 0, tensor<int64_t>({1}), 3.0); }, {{3, 2}}},
      {"index_copy", [](auto& v) { return index_copy(v[0], 1, tensor<int64_t>({2, 0, 2}), v[1]); }, {{2, 3}, {2, 3}}},
      {"tensordot", [](auto& v) { return tensordot(v[0], v[1], {0, 2}, {1, 0}); }, {{2, 3, 4}, {4, 2, 2}}},
      {"index", [](auto& v) { return index(v[0], {tensor<int64_t>({1, 0, 1}), tensor<int64_t>({-1})}); }, {{2, 3, 2}}},
      {"index_put accumulate",
       [](auto& v) { return index_put(v[0], {tensor<int64_t>({0, 0, 2})}, v[1], true); }, {{3, 2}, {3, 2}}},
      {"index_put", [](auto& v) { return index_put(v[0], {tensor<int64_t>({2, 0, 2})}, v[1]); }, {{3, 2}, {1, 2}}},
      {"masked_scatter", [](auto& v) { return masked_scatter(v[0], tensor<bool>({false, true}), v[1]); },
       {{3, 2}, {4}}},
      {"unfold", [](auto& v) { return unfold(v[0], 1, 2, 1); }, {{2, 4}}},
      {"scatter_reduce mean", [](auto& v) {
         return scatter_reduce(v[0], 0, tensor<int64_t>({1, 1, 0}, {3, 1}), v[1], ScatterReduce::Mean, false);
       }, {{2, 1}, {3, 1}}},
      {"scatter_reduce prod", [](auto& v) {
         return scatter_reduce(v[0], 1, tensor<int64_t>({0, 0, 2}, {1, 3}), v[1], ScatterReduce::Prod);
       }, {{1, 3}, {1, 3}}},
      {"scatter_reduce amax", [](auto& v) {
         return scatter_reduce(v[0], 1, tensor<int64_t>({0, 0, 2, 1}, {1, 4}), v[1], ScatterReduce::Amax, false);
       }, {{1, 3}, {1, 4}}},
      {"scatter_reduce amin smaller index", [](auto& v) {
         return scatter_reduce(v[0], 1, tensor<int64_t>({2, 0, 2, 2}, {2, 2}), v[1], ScatterReduce::Amin);
       }, {{3, 3}, {2, 3}}},
      {"scatter_reduce prod smaller index", [](auto& v) {
         return scatter_reduce(v[0], 0, tensor<int64_t>({1, 0, 1}, {3, 1}), v[1], ScatterReduce::Prod, false);
       }, {{2, 3}, {4, 2}}},
      {"embedding_bag mean padding",
       [](auto& v) {
         EmbeddingBagOptions o;
         o.padding_idx = 0;
         return embedding_bag(v[0], tensor<int64_t>({3, 0, 1, 1, 2}), tensor<int64_t>({0, 2, 2}), o);
       },
       {{4, 3}}},
      {"embedding_bag sum negative padding_idx",
       [](auto& v) {
         EmbeddingBagOptions o;
         o.mode = EmbeddingBagMode::Sum;
         o.padding_idx = -1;
         return embedding_bag(v[0], tensor<int64_t>({3, 0, 1, 3}, {2, 2}), Tensor(), o);
       },
       {{4, 3}}},
      {"embedding_bag max", [](auto& v) {
         EmbeddingBagOptions o;
         o.mode = EmbeddingBagMode::Max;
         return embedding_bag(v[0], tensor<int64_t>({3, 0, 1, 2}, {2, 2}), Tensor(), o);
       }, {{4, 3}}},
      {"einsum bmm", [](auto& v) { return einsum("bij,bjk->bki", {v[0], v[1]}); }, {{2, 2, 3}, {2, 3, 2}}},
      {"einsum trace and outer", [](auto& v) { return einsum("ii,j->j", {v[0], v[1]}); }, {{3, 3}, {2}}},
      {"einsum three operands", [](auto& v) { return einsum("i,ij,j", {v[0], v[1], v[2]}); }, {{2}, {2, 3}, {3}}},
  };
}
