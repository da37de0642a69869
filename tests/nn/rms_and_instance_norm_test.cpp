// rms_norm / RMSNorm and instance_norm / InstanceNorm1d/2d against float64 references
// computed group by group: default eps, 16-bit inputs, running statistics, modes, unbatched
// inputs, refusals; gradient checks in the gradcheck table below.
#include "tests/autograd/cases.h"

#include <cmath>
#include <limits>

#include <wick/nn/norm.h>

namespace wick::test {
namespace {

// y = x / sqrt(mean(x^2) + eps) * w over groups of `group` consecutive elements; w repeats
// every group (empty: no weight).
std::vector<double> ref_rms(const std::vector<double>& x, size_t group, const std::vector<double>& w, double eps) {
  std::vector<double> y;
  for (size_t g = 0; g < x.size() / group; ++g) {
    double ms = 0;
    for (size_t k = 0; k < group; ++k) ms += x[g * group + k] * x[g * group + k];
    ms /= static_cast<double>(group);
    for (size_t k = 0; k < group; ++k) y.push_back(x[g * group + k] / std::sqrt(ms + eps) * (w.empty() ? 1.0 : w[k]));
  }
  return y;
}

TEST(RmsNorm, MatchesReference) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor x = random({2, 3, 4}, dt, 1);
    Tensor w = random({3, 4}, dt, 2);
    const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
    const double default_eps = dt == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                    : std::numeric_limits<float>::epsilon();
    EXPECT_TRUE(matches(rms_norm(Variable(with_layout(x, Layout::Transposed)), {4}).data(), {2, 3, 4}, dt,
                        ref_rms(values(x), 4, {}, default_eps), tol, tol));
    EXPECT_TRUE(matches(rms_norm(Variable(x), {3, 4}, Variable(w), 1e-3).data(), {2, 3, 4}, dt,
                        ref_rms(values(x), 12, values(w), 1e-3), tol, tol));
    // The default eps is the machine epsilon of the computation dtype: with mean(x^2) equal
    // to it, y = x / sqrt(2 eps), about 0.707 (it would be 1 with float64's eps for float32).
    Tensor tiny = full({2, 3}, std::sqrt(default_eps), dt);
    std::vector<double> expected = ref_rms(values(tiny), 3, {}, default_eps);
    EXPECT_NEAR(expected[0], std::sqrt(0.5), 1e-6);
    EXPECT_TRUE(matches(rms_norm(Variable(tiny), {3}).data(), {2, 3}, dt, expected, tol, tol));
  }
  // 16-bit inputs are computed in float32 (float32's eps) and cast back.
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor x = random({3, 5}, dt, 3), w = random({5}, dt, 4);
    Variable y = rms_norm(Variable(x), {5}, Variable(w));
    EXPECT_TRUE(matches(y.data(), {3, 5}, dt,
                        ref_rms(values(x), 5, values(w), std::numeric_limits<float>::epsilon())));
  }
  expect_error([] { rms_norm(Variable(zeros({2, 3})), {4}); }, {"rms_norm", "[4]", "[2, 3]"});
  expect_error([] { rms_norm(Variable(zeros({2, 3})), {}); }, {"rms_norm", "at least one dim"});
  expect_error([] { rms_norm(Variable(zeros({2, 3})), {3}, Variable(ones({2}))); }, {"rms_norm", "weight [2]", "[3]"});
  expect_error([] { rms_norm(Variable(zeros({2, 3}, DType::Int64)), {3}); }, {"rms_norm", "floating", "int64"});
}

TEST(RmsNorm, Module) {
  RMSNorm m({4}, std::nullopt, true, DType::Float64);
  EXPECT_EQ(m.state_dict().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_TRUE(matches(m.weight.data(), {4}, DType::Float64, {1, 1, 1, 1}));
  m.weight.data().copy_(tensor<double>({1, 2, 3, 4}));
  Tensor x = random({3, 4}, DType::Float64, 5);
  EXPECT_TRUE(matches(m(Variable(x)).data(), {3, 4}, DType::Float64,
                      ref_rms(values(x), 4, {1, 2, 3, 4}, std::numeric_limits<double>::epsilon()), 1e-12, 1e-12));
  RMSNorm plain({2, 2}, 0.5, false);
  EXPECT_TRUE(plain.state_dict().keys().empty());
  Tensor x2 = random({2, 2, 2}, DType::Float32, 6);
  EXPECT_TRUE(matches(plain(Variable(x2)).data(), {2, 2, 2}, DType::Float32, ref_rms(values(x2), 4, {}, 0.5)));
  expect_error([] { RMSNorm({}); }, {"RMSNorm", "normalized_shape"});
}

// Per (sample, channel) normalisation of x [N, C, S] (spatial dims flattened to S).
struct RefInstance {
  std::vector<double> y, mean, unbiased_var;  // mean / var per (n, c)
};
RefInstance ref_instance(const std::vector<double>& x, int64_t n, int64_t c, int64_t s, const std::vector<double>& w,
                         const std::vector<double>& b, double eps) {
  RefInstance r;
  r.y.resize(x.size());
  for (int64_t i = 0; i < n * c; ++i) {
    double m = 0, ss = 0;
    for (int64_t k = 0; k < s; ++k) m += x[static_cast<size_t>(i * s + k)];
    m /= static_cast<double>(s);
    for (int64_t k = 0; k < s; ++k) ss += (x[static_cast<size_t>(i * s + k)] - m) * (x[static_cast<size_t>(i * s + k)] - m);
    r.mean.push_back(m);
    r.unbiased_var.push_back(ss / static_cast<double>(s - 1));
    const size_t ch = static_cast<size_t>(i % c);
    for (int64_t k = 0; k < s; ++k) {
      const size_t e = static_cast<size_t>(i * s + k);
      r.y[e] = (x[e] - m) / std::sqrt(ss / static_cast<double>(s) + eps) * (w.empty() ? 1.0 : w[ch]) +
               (b.empty() ? 0.0 : b[ch]);
    }
  }
  return r;
}

// (1 - momentum) r + momentum * (the batch mean of the per-instance statistic).
std::vector<double> blend(const std::vector<double>& running, const std::vector<double>& per_instance, int64_t n,
                          int64_t c, double momentum) {
  std::vector<double> out;
  for (int64_t ch = 0; ch < c; ++ch) {
    double avg = 0;
    for (int64_t i = 0; i < n; ++i) avg += per_instance[static_cast<size_t>(i * c + ch)] / static_cast<double>(n);
    out.push_back((1 - momentum) * running[static_cast<size_t>(ch)] + momentum * avg);
  }
  return out;
}

TEST(InstanceNorm, FunctionalMatchesReference) {
  for (const Shape& shape : {Shape{2, 3, 5}, Shape{3, 2, 3, 4}}) {
    const int64_t n = shape[0], c = shape[1], s = numel_of(shape) / (n * c);
    Tensor x = random(shape, DType::Float64, 7);
    std::vector<double> w = values(random({c}, DType::Float64, 8)), b = values(random({c}, DType::Float64, 9));
    RefInstance plain = ref_instance(values(x), n, c, s, {}, {}, 1e-5);
    EXPECT_TRUE(matches(instance_norm(Variable(with_layout(x, Layout::Transposed))).data(), shape, DType::Float64,
                        plain.y, 1e-10, 1e-12));
    RefInstance affine = ref_instance(values(x), n, c, s, w, b, 1e-3);
    Tensor rm = random({c}, DType::Float64, 10), rv = random({c}, DType::Float64, 11, 0.5, 2);
    const std::vector<double> rm0 = values(rm), rv0 = values(rv);
    Variable y = instance_norm(Variable(x), rm, rv, Variable(tensor<double>(w)), Variable(tensor<double>(b)), true, 0.2,
                               1e-3);
    EXPECT_TRUE(matches(y.data(), shape, DType::Float64, affine.y, 1e-10, 1e-12));
    EXPECT_TRUE(matches(rm, {c}, DType::Float64, blend(rm0, affine.mean, n, c, 0.2), 1e-10, 1e-12));
    EXPECT_TRUE(matches(rv, {c}, DType::Float64, blend(rv0, affine.unbiased_var, n, c, 0.2), 1e-10, 1e-12));
    // Without use_input_stats, the running statistics normalise every instance; unchanged.
    const std::vector<double> rm1 = values(rm), rv1 = values(rv), xv = values(x);
    std::vector<double> expected;
    for (size_t e = 0; e < xv.size(); ++e) {
      const size_t ch = static_cast<size_t>((static_cast<int64_t>(e) / s) % c);
      expected.push_back((xv[e] - rm1[ch]) / std::sqrt(rv1[ch] + 1e-5) * w[ch] + b[ch]);
    }
    EXPECT_TRUE(matches(instance_norm(Variable(x), rm, rv, Variable(tensor<double>(w)), Variable(tensor<double>(b)),
                                      false)
                            .data(),
                        shape, DType::Float64, expected, 1e-10, 1e-12));
    EXPECT_TRUE(matches(rm, {c}, DType::Float64, rm1, 0, 0));
  }
  // float32.
  Tensor x = random({2, 2, 6}, DType::Float32, 12);
  EXPECT_TRUE(matches(instance_norm(Variable(x)).data(), {2, 2, 6}, DType::Float32,
                      ref_instance(values(x), 2, 2, 6, {}, {}, 1e-5).y, 1e-5, 1e-5));
  expect_error([] { instance_norm(Variable(zeros({2, 3, 1}))); }, {"instance_norm", "more than 1 spatial", "[2, 3, 1]"});
  expect_error([] { instance_norm(Variable(zeros({3}))); }, {"instance_norm", "[3]"});
  expect_error([] { instance_norm(Variable(zeros({2, 3, 4})), zeros({3})); }, {"instance_norm", "together"});
  expect_error([] { instance_norm(Variable(zeros({2, 3, 4})), Tensor(), Tensor(), Variable(), Variable(), false); },
               {"instance_norm", "running_mean and running_var"});
  expect_error([] { instance_norm(Variable(zeros({2, 3, 4})), Tensor(), Tensor(), Variable(ones({2}))); },
               {"instance_norm", "weight [2]", "3", "[2, 3, 4]"});
  expect_error([] { instance_norm(Variable(zeros({2, 3, 4})), zeros({4}), ones({4})); },
               {"instance_norm", "running_mean [4]"});
}

TEST(InstanceNorm, ModulesDefaultsModesAndUnbatchedInputs) {
  // PyTorch's defaults: no parameters, no buffers; the input's statistics in every mode.
  InstanceNorm1d plain(3);
  EXPECT_TRUE(plain.state_dict().keys().empty());
  Tensor x = random({2, 3, 5}, DType::Float32, 13);
  std::vector<double> expected = ref_instance(values(x), 2, 3, 5, {}, {}, 1e-5).y;
  EXPECT_TRUE(matches(plain(Variable(x)).data(), {2, 3, 5}, DType::Float32, expected, 1e-5, 1e-5));
  plain.eval();
  EXPECT_TRUE(matches(plain(Variable(x)).data(), {2, 3, 5}, DType::Float32, expected, 1e-5, 1e-5));
  // Unbatched [C, L] is one sample.
  EXPECT_TRUE(matches(plain(Variable(x.narrow(0, 1, 1).reshape({3, 5}))).data(), {3, 5}, DType::Float32,
                      std::vector<double>(expected.begin() + 15, expected.end()), 1e-5, 1e-5));
  // Without affine or running statistics num_features is not used (PyTorch only warns).
  EXPECT_EQ(plain(Variable(zeros({2, 4, 5}))).shape(), Shape({2, 4, 5}));

  InstanceNormOptions o;
  o.affine = true;
  o.track_running_stats = true;
  o.momentum = 0.3;
  InstanceNorm2d m(2, o, DType::Float64);
  EXPECT_EQ(m.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  m.weight.data().copy_(tensor<double>({2.0, -1.0}));
  m.bias.data().copy_(tensor<double>({0.5, 0.0}));
  Tensor x2 = random({3, 2, 2, 3}, DType::Float64, 14);
  RefInstance r = ref_instance(values(x2), 3, 2, 6, {2.0, -1.0}, {0.5, 0.0}, 1e-5);
  EXPECT_TRUE(matches(m(Variable(x2)).data(), {3, 2, 2, 3}, DType::Float64, r.y, 1e-10, 1e-12));
  const std::vector<double> rm = blend({0, 0}, r.mean, 3, 2, 0.3), rv = blend({1, 1}, r.unbiased_var, 3, 2, 0.3);
  EXPECT_TRUE(matches(m.buffer("running_mean"), {2}, DType::Float64, rm, 1e-10, 1e-12));
  EXPECT_TRUE(matches(m.buffer("running_var"), {2}, DType::Float64, rv, 1e-10, 1e-12));
  EXPECT_EQ(m.buffer("num_batches_tracked").item<int64_t>(), 0);  // PyTorch's InstanceNorm does not count
  // An empty batch leaves the running statistics alone.
  EXPECT_EQ(m(Variable(zeros({0, 2, 2, 3}, DType::Float64))).shape(), Shape({0, 2, 2, 3}));
  EXPECT_TRUE(matches(m.buffer("running_mean"), {2}, DType::Float64, rm, 1e-10, 1e-12));
  // Eval normalises with the running statistics.
  m.eval();
  std::vector<double> xv = values(x2), ev;
  for (size_t e = 0; e < xv.size(); ++e) {
    const size_t ch = (e / 6) % 2;
    ev.push_back((xv[e] - rm[ch]) / std::sqrt(rv[ch] + 1e-5) * (ch == 0 ? 2.0 : -1.0) + (ch == 0 ? 0.5 : 0.0));
  }
  EXPECT_TRUE(matches(m(Variable(x2)).data(), {3, 2, 2, 3}, DType::Float64, ev, 1e-10, 1e-12));
  EXPECT_TRUE(matches(m(Variable(x2.narrow(0, 2, 1).reshape({2, 2, 3}))).data(), {2, 2, 3}, DType::Float64,
                      std::vector<double>(ev.begin() + 24, ev.end()), 1e-10, 1e-12));

  expect_error([&] { m(Variable(zeros({2, 3, 2, 2}, DType::Float64))); },
               {"InstanceNorm2d", "3 channels", "num_features=2"});
  expect_error([&] { m(Variable(zeros({2, 3}, DType::Float64))); }, {"InstanceNorm2d", "3-d or 4-d", "[2, 3]"});
  expect_error([&] { plain(Variable(zeros({2, 3, 4, 5}))); }, {"InstanceNorm1d", "2-d or 3-d", "[2, 3, 4, 5]"});
  m.train();
  expect_error([&] { m(Variable(zeros({2, 2, 1, 1}, DType::Float64))); }, {"instance_norm", "more than 1 spatial"});
  expect_error([] { InstanceNorm1d(0); }, {"InstanceNorm", "num_features"});
}

}  // namespace
}  // namespace wick::test

WICK_GRADCHECK_CASES(norms_extra) {
  using namespace wick;
  return {
      {"rms_norm weight", [](auto& v) { return rms_norm(v[0], {4}, v[1]); }, {{3, 4}, {4}}},
      {"rms_norm 2 dims eps", [](auto& v) { return rms_norm(v[0], {2, 3}, Variable(), 0.1); }, {{2, 2, 3}}},
      {"instance_norm affine", [](auto& v) { return instance_norm(v[0], Tensor(), Tensor(), v[1], v[2]); },
       {{2, 3, 4}, {3}, {3}}},
      {"instance_norm 2d running stats",
       [](auto& v) {
         return instance_norm(v[0], zeros({2}, DType::Float64), ones({2}, DType::Float64), v[1], Variable(), true, 0.1);
       },
       {{2, 2, 2, 3}, {2}}},
      {"instance_norm running stats only",
       [](auto& v) {
         return instance_norm(v[0], full({3}, 0.5, DType::Float64), full({3}, 2.0, DType::Float64), Variable(), v[1],
                              false);
       },
       {{2, 3, 4}, {3}}},
  };
}
