// batch_norm, layer_norm and group_norm (forward and the fused backward helpers) against
// float64 references computed here with plain loops over values(); backward references are
// central differences of those forward references.
#include <cmath>
#include <limits>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

// x seen as [N, C, S]; element (n, c, s) belongs to statistics set set_of(n, c) and takes
// the affine parameters of channel c (w, b empty: none).
struct NormSpec {
  int64_t n, c, s, sets;
  std::function<int64_t(int64_t, int64_t)> set_of;
};

struct RefNorm {
  std::vector<double> out, mean, invstd, unbiased_var;
};

RefNorm ref_norm(const std::vector<double>& x, const NormSpec& p, const std::vector<double>& w,
                 const std::vector<double>& b, double eps) {
  std::vector<double> sum(p.sets), count(p.sets), sq(p.sets);
  auto each = [&](auto&& f) {
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t c = 0; c < p.c; ++c)
        for (int64_t s = 0; s < p.s; ++s) f(n, c, (n * p.c + c) * p.s + s);
  };
  each([&](int64_t n, int64_t c, int64_t i) {
    sum[p.set_of(n, c)] += x[i];
    count[p.set_of(n, c)] += 1;
  });
  RefNorm r;
  for (int64_t k = 0; k < p.sets; ++k) r.mean.push_back(sum[k] / count[k]);
  each([&](int64_t n, int64_t c, int64_t i) {
    const double d = x[i] - r.mean[p.set_of(n, c)];
    sq[p.set_of(n, c)] += d * d;
  });
  for (int64_t k = 0; k < p.sets; ++k) {
    r.invstd.push_back(1 / std::sqrt(sq[k] / count[k] + eps));
    r.unbiased_var.push_back(sq[k] / (count[k] - 1));
  }
  r.out.resize(x.size());
  each([&](int64_t n, int64_t c, int64_t i) {
    const int64_t k = p.set_of(n, c);
    r.out[i] = (x[i] - r.mean[k]) * r.invstd[k] * (w.empty() ? 1.0 : w[c]) + (b.empty() ? 0.0 : b[c]);
  });
  return r;
}

NormSpec batch_spec(int64_t n, int64_t c, int64_t s) {
  return {n, c, s, c, [](int64_t, int64_t ch) { return ch; }};
}
NormSpec group_spec(int64_t n, int64_t c, int64_t s, int64_t g) {
  return {n, c, s, n * g, [=](int64_t i, int64_t ch) { return i * g + ch / (c / g); }};
}

// d/dv of sum_j dy_j * f(v)_j by central differences, for each element of v.
std::vector<double> numeric_grad(const std::function<std::vector<double>(const std::vector<double>&)>& f,
                                 std::vector<double> v, const std::vector<double>& dy) {
  const double h = 1e-6;
  std::vector<double> g;
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    std::vector<double> up = f(v);
    v[i] = keep - h;
    std::vector<double> down = f(v);
    v[i] = keep;
    double d = 0;
    for (size_t j = 0; j < dy.size(); ++j) d += dy[j] * (up[j] - down[j]) / (2 * h);
    g.push_back(d);
  }
  return g;
}

const std::vector<DType> kNormDTypes = {DType::Float32, DType::Float64};
DType stats_of(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

TEST(BatchNorm, TrainingEveryLayoutAndDType) {
  for (DType dt : kNormDTypes) {
    for (const Shape& shape : {Shape{4, 3, 5}, Shape{6, 3}}) {
      for (Layout l : kAllLayouts) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(shape) + " " + layout_name(l));
        const int64_t S = shape.size() == 3 ? shape[2] : 1;
        Tensor x = with_layout(random(shape, dt, 1, -1, 3), l);
        Tensor w = random({3}, dt, 2), b = random({3}, dt, 3);
        Tensor rm = random({3}, dt, 4), rv = random({3}, dt, 5, 0.5, 2);
        const std::vector<double> rm0 = values(rm), rv0 = values(rv);
        NormResult r = batch_norm(x, w, b, rm, rv, true, 0.25, 1e-5);
        RefNorm e = ref_norm(values(x), batch_spec(shape[0], 3, S), values(w), values(b), 1e-5);
        EXPECT_TRUE(matches(r.out, shape, dt, e.out));
        EXPECT_TRUE(matches(r.mean, {3}, stats_of(dt), e.mean));
        EXPECT_TRUE(matches(r.invstd, {3}, stats_of(dt), e.invstd));
        std::vector<double> erm, erv;
        for (int c = 0; c < 3; ++c) {
          erm.push_back(0.75 * rm0[c] + 0.25 * e.mean[c]);
          erv.push_back(0.75 * rv0[c] + 0.25 * e.unbiased_var[c]);
        }
        EXPECT_TRUE(matches(rm, {3}, dt, erm));
        EXPECT_TRUE(matches(rv, {3}, dt, erv));
      }
    }
  }
}

TEST(BatchNorm, EvalUsesRunningStatisticsWithoutUpdatingThem) {
  Tensor x = random({3, 2, 4}, DType::Float32, 7);
  Tensor rm = tensor<float>({0.5f, -1.0f}), rv = tensor<float>({2.0f, 0.25f});
  NormResult r = batch_norm(x, Tensor(), Tensor(), rm, rv, false, 0.1, 1e-3);
  std::vector<double> xv = values(x), e;
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t c = (i / 4) % 2;
    e.push_back((xv[i] - values(rm)[c]) / std::sqrt(values(rv)[c] + 1e-3));
  }
  EXPECT_TRUE(matches(r.out, {3, 2, 4}, DType::Float32, e));
  EXPECT_TRUE(matches(rm, {2}, DType::Float32, {0.5, -1.0}));
  EXPECT_TRUE(matches(r.invstd, {2}, DType::Float32, {1 / std::sqrt(2.001), 1 / std::sqrt(0.251)}));
}

TEST(BatchNorm, BackwardTrainingAndEvalMatchNumericGradients) {
  const int64_t N = 3, C = 2, S = 4;
  Tensor x = random({N, C, S}, DType::Float64, 11), w = random({C}, DType::Float64, 12);
  Tensor b = random({C}, DType::Float64, 13), dy = random({N, C, S}, DType::Float64, 14);
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b), dyv = values(dy);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    Tensor rm = random({C}, DType::Float64, 15), rv = random({C}, DType::Float64, 16, 0.5, 2);
    const std::vector<double> rmv = values(rm), rvv = values(rv);
    NormResult r = batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5);
    NormGrads g = batch_norm_backward(with_layout(dy, Layout::Transposed), x, w, r.mean, r.invstd, training);
    auto fwd = [&](const std::vector<double>& xs, const std::vector<double>& ws, const std::vector<double>& bs) {
      if (training) return ref_norm(xs, batch_spec(N, C, S), ws, bs, 1e-5).out;
      std::vector<double> o;
      for (int64_t i = 0; i < N * C * S; ++i) {
        const int64_t c = (i / S) % C;
        o.push_back((xs[i] - rmv[c]) / std::sqrt(rvv[c] + 1e-5) * ws[c] + bs[c]);
      }
      return o;
    };
    EXPECT_TRUE(all_close(values(g.input), numeric_grad([&](auto& v) { return fwd(v, wv, bv); }, xv, dyv), 1e-6, 1e-7));
    EXPECT_TRUE(
        all_close(values(g.weight), numeric_grad([&](auto& v) { return fwd(xv, v, bv); }, wv, dyv), 1e-6, 1e-7));
    EXPECT_TRUE(all_close(values(g.bias), numeric_grad([&](auto& v) { return fwd(xv, wv, v); }, bv, dyv), 1e-6, 1e-7));
  }
}

TEST(BatchNorm, OutputMaskAndFloat32Backward) {
  Tensor x = random({5, 3, 2}, DType::Float32, 21), dy = random({5, 3, 2}, DType::Float32, 22);
  NormResult r = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  NormGrads g = batch_norm_backward(dy, x, Tensor(), r.mean, r.invstd, true, {true, false, true});
  EXPECT_FALSE(g.weight.defined());
  auto f = [&](const std::vector<double>& v) { return ref_norm(v, batch_spec(5, 3, 2), {}, {}, 1e-5).out; };
  EXPECT_TRUE(all_close(values(g.input), numeric_grad(f, values(x), values(dy)), 1e-4, 1e-4));
  std::vector<double> db(3);
  const std::vector<double> dyv = values(dy);
  for (int64_t i = 0; i < 30; ++i) db[(i / 2) % 3] += dyv[i];
  EXPECT_TRUE(matches(g.bias, {3}, DType::Float32, db));
}

TEST(LayerNorm, LastDimsEveryLayoutDTypeAndAffine) {
  for (DType dt : {DType::Float16, DType::Float32, DType::Float64}) {
    for (Layout l : kAllLayouts) {
      for (bool affine : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + layout_name(l) + (affine ? " affine" : ""));
        Tensor x = with_layout(random({3, 4, 5}, dt, 31, -2, 5), l);
        Tensor w = affine ? random({4, 5}, dt, 32) : Tensor(), b = affine ? random({4, 5}, dt, 33) : Tensor();
        NormResult r = layer_norm(x, {4, 5}, w, b, 1e-5);
        NormSpec p{3, 20, 1, 3, [](int64_t n, int64_t) { return n; }};
        RefNorm e = ref_norm(values(x), p, affine ? values(w) : std::vector<double>{},
                             affine ? values(b) : std::vector<double>{}, 1e-5);
        EXPECT_TRUE(
            matches(r.out, {3, 4, 5}, dt, e.out, dt == DType::Float16 ? 4e-3 : -1, dt == DType::Float16 ? 4e-3 : -1));
        EXPECT_TRUE(matches(r.mean, {3}, stats_of(dt), e.mean));
        EXPECT_TRUE(matches(r.invstd, {3}, stats_of(dt), e.invstd));
      }
    }
  }
}

TEST(LayerNorm, BackwardMatchesNumericGradients) {
  const int64_t M = 4, K = 6;
  Tensor x = random({2, 2, K}, DType::Float64, 41), w = random({K}, DType::Float64, 42);
  Tensor b = random({K}, DType::Float64, 43), dy = random({2, 2, K}, DType::Float64, 44);
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b), dyv = values(dy);
  NormResult r = layer_norm(x, {K}, w, b);
  NormGrads g = layer_norm_backward(dy, with_layout(x, Layout::Offset), {K}, w, r.mean, r.invstd);
  NormSpec p{M, K, 1, M, [](int64_t n, int64_t) { return n; }};
  auto fwd = [&](const std::vector<double>& xs, const std::vector<double>& ws, const std::vector<double>& bs) {
    return ref_norm(xs, p, ws, bs, 1e-5).out;
  };
  EXPECT_TRUE(all_close(values(g.input), numeric_grad([&](auto& v) { return fwd(v, wv, bv); }, xv, dyv), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(values(g.weight), numeric_grad([&](auto& v) { return fwd(xv, v, bv); }, wv, dyv), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(values(g.bias), numeric_grad([&](auto& v) { return fwd(xv, wv, v); }, bv, dyv), 1e-6, 1e-7));
}

// The CPU kernel runs LayerNorm's rows (one value per channel) through a flat loop of its
// own; without affine parameters a row is also one group of one channel, which takes the
// general loop. Both must give the same bits, forward and backward.
TEST(LayerNorm, RowsGiveTheGroupNormLoopsBits) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t N = 5, K = 37;  // K: not a multiple of the kernel's 8 partial sums
    Tensor x = add(random({N, K}, dt, 81, -2, 5), 3.0), dy = random({N, K}, dt, 82);
    NormResult rows = layer_norm(x, {K}, Tensor(), Tensor());
    NormResult group = group_norm(x.view({N, 1, K}), 1, Tensor(), Tensor());
    EXPECT_EQ(values(rows.out), values(group.out));
    EXPECT_EQ(values(rows.mean), values(group.mean));
    EXPECT_EQ(values(rows.invstd), values(group.invstd));
    NormGrads g_rows = layer_norm_backward(dy, x, {K}, Tensor(), rows.mean, rows.invstd, {true, false, false});
    NormGrads g_group = group_norm_backward(dy.view({N, 1, K}), x.view({N, 1, K}), 1, Tensor(), group.mean,
                                            group.invstd, {true, false, false});
    EXPECT_EQ(values(g_rows.input), values(g_group.input));
  }
}

// RMS norm (the layer norm kernels with the mean taken as 0 and no bias): the output, invstd
// and both gradients against a float64 reference and finite differences; the default eps is
// the machine epsilon of the statistics dtype.
TEST(RmsNorm, ForwardAndBackwardMatchReferenceAndNumericGradients) {
  const int64_t M = 3, K = 7;
  Tensor x = random({M, K}, DType::Float64, 91), w = random({K}, DType::Float64, 92);
  Tensor dy = random({M, K}, DType::Float64, 93);
  const std::vector<double> xv = values(x), wv = values(w), dyv = values(dy);
  auto fwd = [&](const std::vector<double>& xs, const std::vector<double>& ws) {
    std::vector<double> y;
    for (int64_t m = 0; m < M; ++m) {
      double ms = 0;
      for (int64_t k = 0; k < K; ++k) ms += xs[m * K + k] * xs[m * K + k] / static_cast<double>(K);
      for (int64_t k = 0; k < K; ++k) y.push_back(xs[m * K + k] / std::sqrt(ms + 1e-3) * ws[k]);
    }
    return y;
  };
  NormResult r = rms_norm(with_layout(x, Layout::Transposed), {K}, w, 1e-3);
  EXPECT_FALSE(r.mean.defined());
  EXPECT_TRUE(matches(r.out, {M, K}, DType::Float64, fwd(xv, wv), 1e-12, 1e-12));
  NormGrads g = rms_norm_backward(dy, x, {K}, w, r.invstd);
  EXPECT_FALSE(g.bias.defined());
  EXPECT_TRUE(all_close(values(g.input), numeric_grad([&](auto& v) { return fwd(v, wv); }, xv, dyv), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(values(g.weight), numeric_grad([&](auto& v) { return fwd(xv, v); }, wv, dyv), 1e-6, 1e-7));
  NormGrads only_input = rms_norm_backward(dy, x, {K}, w, r.invstd, {true, false});
  EXPECT_EQ(values(only_input.input), values(g.input));
  EXPECT_FALSE(only_input.weight.defined());
  // Default eps: float32's machine epsilon for float32 and 16-bit inputs.
  Tensor tiny = full({2, 3}, std::sqrt(static_cast<double>(std::numeric_limits<float>::epsilon())), DType::Float32);
  EXPECT_NEAR(values(rms_norm(tiny, {3}).out)[0], std::sqrt(0.5), 1e-6);
  expect_error([&] { rms_norm(x, {K + 1}); }, {"rms_norm", "does not match"});
  expect_error([&] { rms_norm(x, {K}, ones({K})); }, {"rms_norm", "weight", "float32"});
}

TEST(GroupNorm, ForwardEveryLayoutAndDType) {
  for (DType dt : kNormDTypes) {
    for (Layout l : kAllLayouts) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + layout_name(l));
      Tensor x = with_layout(random({2, 6, 3, 2}, dt, 51), l);
      Tensor w = random({6}, dt, 52), b = random({6}, dt, 53);
      NormResult r = group_norm(x, 3, w, b, 1e-5);
      RefNorm e = ref_norm(values(x), group_spec(2, 6, 6, 3), values(w), values(b), 1e-5);
      EXPECT_TRUE(matches(r.out, {2, 6, 3, 2}, dt, e.out));
      EXPECT_TRUE(matches(r.mean, {2, 3}, stats_of(dt), e.mean));
      EXPECT_TRUE(matches(r.invstd, {2, 3}, stats_of(dt), e.invstd));
    }
  }
}

TEST(GroupNorm, BackwardMatchesNumericGradients) {
  const int64_t N = 2, C = 4, S = 3, G = 2;
  Tensor x = random({N, C, S}, DType::Float64, 61), w = random({C}, DType::Float64, 62);
  Tensor b = random({C}, DType::Float64, 63), dy = random({N, C, S}, DType::Float64, 64);
  const std::vector<double> xv = values(x), wv = values(w), bv = values(b), dyv = values(dy);
  NormResult r = group_norm(x, G, w, b);
  NormGrads g = group_norm_backward(with_layout(dy, Layout::Sliced), x, G, w, r.mean, r.invstd);
  auto fwd = [&](const std::vector<double>& xs, const std::vector<double>& ws, const std::vector<double>& bs) {
    return ref_norm(xs, group_spec(N, C, S, G), ws, bs, 1e-5).out;
  };
  EXPECT_TRUE(all_close(values(g.input), numeric_grad([&](auto& v) { return fwd(v, wv, bv); }, xv, dyv), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(values(g.weight), numeric_grad([&](auto& v) { return fwd(xv, v, bv); }, wv, dyv), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(values(g.bias), numeric_grad([&](auto& v) { return fwd(xv, wv, v); }, bv, dyv), 1e-6, 1e-7));
}

TEST(Norm, LargeInputsUseThreadsAndStayAccurate) {
  // An offset of 1000 would cost a one-pass float32 variance most of its digits.
  Tensor x = add(random({64, 512}, DType::Float32, 71), 1000.0);
  NormResult r = layer_norm(x, {512}, Tensor(), Tensor());
  NormSpec p{64, 512, 1, 64, [](int64_t n, int64_t) { return n; }};
  EXPECT_TRUE(matches(r.out, {64, 512}, DType::Float32, ref_norm(values(x), p, {}, {}, 1e-5).out, 1e-4, 1e-4));
  NormResult bn = batch_norm(x.view({64, 8, 64}), Tensor(), Tensor(), Tensor(), Tensor(), true);
  EXPECT_TRUE(matches(bn.out, {64, 8, 64}, DType::Float32, ref_norm(values(x), batch_spec(64, 8, 64), {}, {}, 1e-5).out,
                      1e-4, 1e-4));
}

TEST(Norm, EmptyInputs) {
  NormResult l = layer_norm(zeros({0, 4}), {4}, ones({4}), zeros({4}));
  EXPECT_EQ(l.out.shape(), Shape({0, 4}));
  EXPECT_EQ(l.mean.shape(), Shape({0}));
  NormResult g = group_norm(zeros({0, 4, 2}), 2, Tensor(), Tensor());
  EXPECT_EQ(g.out.shape(), Shape({0, 4, 2}));
  Tensor rm = zeros({3}), rv = ones({3});
  NormResult b = batch_norm(zeros({0, 3}), Tensor(), Tensor(), rm, rv, true);
  EXPECT_EQ(b.out.shape(), Shape({0, 3}));
  EXPECT_TRUE(matches(rv, {3}, DType::Float32, {1, 1, 1}));
  NormGrads bg = batch_norm_backward(zeros({0, 3}), zeros({0, 3}), ones({3}), b.mean, b.invstd, true);
  EXPECT_TRUE(matches(bg.weight, {3}, DType::Float32, {0, 0, 0}));
}

TEST(Norm, RejectsMisuse) {
  Tensor x = random({2, 3, 4}, DType::Float32, 81);
  expect_error([&] { batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false); },
               {"batch_norm", "eval mode needs running_mean", "[2, 3, 4]"});
  expect_error([&] { batch_norm(x, ones({4}), Tensor(), Tensor(), Tensor(), true); },
               {"batch_norm", "weight must have shape [3]", "[4]"});
  expect_error(
      [&] {
        batch_norm(random({1, 3}, DType::Float32, 1), Tensor(), Tensor(), Tensor(), Tensor(), true);
      },
      {"batch_norm", "more than 1 value per channel", "[1, 3]"});
  expect_error([&] { batch_norm(x, ones({3}, DType::Float64), Tensor(), Tensor(), Tensor(), true); },
               {"batch_norm", "weight has dtype float64"});
  expect_error([&] { layer_norm(x, {3}, Tensor(), Tensor()); }, {"layer_norm", "normalized_shape [3]", "[2, 3, 4]"});
  expect_error([&] { group_norm(x, 2, Tensor(), Tensor()); }, {"group_norm", "3 channels", "2 groups"});
  expect_error(
      [&] {
        layer_norm(zeros({2, 3}, DType::Int64), {3}, Tensor(), Tensor());
      },
      {"layer_norm", "floating point", "int64"});
  expect_error(
      [&] {
        layer_norm_backward(zeros({2, 2}), zeros({2, 3}), {3}, Tensor(), zeros({2}), zeros({2}));
      },
      {"layer_norm_backward", "grad_out", "[2, 3]", "[2, 2]"});
}

}  // namespace
}  // namespace wick::test
