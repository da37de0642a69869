// The fused optimizer steps (every case of fused_optim_table.h) against their update rules
// written out per element in double, over several steps and lists mixing dtypes and shapes;
// GradScaler's unscale against g * inv_scale in double.
#include <cmath>

#include "tests/support/reference.h"
#include "tests/tensor/fused_optim_table.h"

namespace wick::test {
namespace {

// Params of two dtypes and shapes and an empty one (one list, as an optimizer group would
// pass them).
struct Lists {
  std::vector<Tensor> p, g;
  FusedLists state;
};

Lists make_lists(uint64_t seed) {
  Lists l;
  const std::vector<std::pair<Shape, DType>> specs = {
      {{3, 4}, DType::Float32}, {{5}, DType::Float64}, {{0}, DType::Float32}};
  for (const auto& [shape, dt] : specs) {
    l.p.push_back(random(shape, dt, seed++));
    l.g.push_back(random(shape, dt, seed++));
    for (auto& list : l.state) list.push_back(zeros(shape, dt));
  }
  return l;
}

double tolerance(const Tensor& t) { return t.dtype() == DType::Float64 ? 1e-12 : 2e-6; }

// Every row has a case in fused_optim_table.h.
TEST(FusedOptimizers, EveryFusedOptimizerHasACase) {
  std::vector<bool> covered(std::variant_size_v<FusedHyper>);
  for (const FusedCase& c : fused_cases()) covered[c.hyper(1).index()] = true;
  for (size_t i = 0; i < covered.size(); ++i) EXPECT_TRUE(covered[i]) << "alternative " << i << " of FusedHyper";
}

// Each case over three steps, against its float64 reference per element: the gradients
// change between steps and the first is given transposed (read, not written); a state list
// the step does not use stays zero.
TEST(FusedOptimizers, EveryCaseOverSeveralSteps) {
  for (const FusedCase& c : fused_cases()) {
    SCOPED_TRACE(c.name);
    Lists l = make_lists(1);
    std::vector<std::vector<double>> p;
    std::vector<std::vector<std::vector<double>>> s(kMaxFusedStates);
    for (const Tensor& t : l.p) {
      p.push_back(values(t));
      for (auto& list : s) list.push_back(std::vector<double>(t.numel()));
    }
    for (int step = 1; step <= 3; ++step) {
      const FusedHyper h = c.hyper(step);
      std::vector<Tensor> grads = l.g;
      for (Tensor& g : grads) g = add(mul(g, static_cast<double>(step)), 0.25 * step);
      grads[0] = with_layout(grads[0], Layout::Transposed);
      fused_step_of(h, l.p, grads, l.state);
      for (size_t t = 0; t < p.size(); ++t) {
        const std::vector<double> g = values(grads[t]);
        for (size_t i = 0; i < p[t].size(); ++i) {
          double si[kMaxFusedStates];
          for (size_t k = 0; k < kMaxFusedStates; ++k) si[k] = s[k][t][i];
          c.reference(step, p[t][i], g[i], si);
          for (size_t k = 0; k < kMaxFusedStates; ++k)
            if (fused_uses_state(h, k)) s[k][t][i] = si[k];
        }
        const Tensor& pt = l.p[t];
        EXPECT_TRUE(matches(pt, pt.shape(), pt.dtype(), p[t], tolerance(pt), tolerance(pt))) << "param " << t;
        for (size_t k = 0; k < kMaxFusedStates; ++k)
          EXPECT_TRUE(matches(l.state[k][t], pt.shape(), pt.dtype(), s[k][t], 1e-5, 1e-6))
              << "state " << k << " of param " << t << " after step " << step;
      }
    }
  }
}

// unscale_grads_: every floating dtype, a tensor longer than a CUDA chunk, an empty one; the
// result is g * inv_scale rounded once, and the flag is raised by an inf or a NaN anywhere
// (first, middle, last element) and never by finite values, however large.
TEST(UnscaleGrads, ScalesEveryDtypeAndFlagsNonFinite) {
  const double inv = 1.0 / 1024;
  std::vector<Tensor> g;
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
    g.push_back(random({3, 5}, dt, 60 + g.size(), -3e4, 3e4));
  g.push_back(random({40000}, DType::Float32, 70));
  g.push_back(zeros({0}));
  std::vector<std::vector<double>> expected;
  for (const Tensor& t : g) {
    expected.push_back(values(t));
    for (double& e : expected.back()) e *= inv;
  }
  Tensor found = zeros({1});
  unscale_grads_(g, found, inv);
  EXPECT_EQ(found.item<float>(), 0.0f);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_TRUE(matches(g[i], g[i].shape(), g[i].dtype(), expected[i]));
  for (double bad : {INFINITY, -INFINITY, NAN})
    for (int64_t at : {int64_t{0}, int64_t{20000}, int64_t{39999}}) {
      SCOPED_TRACE(std::to_string(bad) + " at " + std::to_string(at));
      Tensor big = random({40000}, DType::Float32, 71), small = random({4}, DType::BFloat16, 72);
      big.flatten().narrow(0, at, 1).fill_(Scalar(bad));
      Tensor flag = zeros({1});
      unscale_grads_({small, big}, flag, 0.5);
      EXPECT_EQ(flag.item<float>(), 1.0f);
      unscale_grads_({small}, flag, 0.5);  // a later clean call leaves the flag raised
      EXPECT_EQ(flag.item<float>(), 1.0f);
    }
  Tensor flag = zeros({1});
  unscale_grads_({full({2}, Scalar(3.0e38))}, flag, 1.0);
  EXPECT_EQ(flag.item<float>(), 0.0f);
}

// Stochastic rounding to bfloat16: representable values and inf/NaN stay; a value a quarter
// of an ulp past one goes up (away from zero) a quarter of the time, for either sign; the
// mean over many draws is the float32 value; the same generator state gives the same bits.
TEST(StochasticRound, IsUnbiasedAndExactWhereItCanBe) {
  const int64_t n = 100000;
  const double quarter = 1.0 + std::ldexp(1.0, -9);  // 1 + ulp/4, the ulp above 1 being 2^-7
  for (double sign : {1.0, -1.0}) {
    SCOPED_TRACE(sign);
    Tensor x = full({n}, Scalar(sign * quarter), Options(DType::Float32));
    Tensor out = empty({n}, Options(DType::BFloat16));
    stochastic_round_(out, x);
    Tensor v = out.to(DType::Float64);
    const double up = static_cast<double>(sum(eq(v, sign * (1.0 + std::ldexp(1.0, -7)))).item<int64_t>()) / n;
    EXPECT_NEAR(up, 0.25, 0.01);
    EXPECT_EQ(sum(eq(v, sign * 1.0)).item<int64_t>() + sum(eq(v, sign * (1.0 + std::ldexp(1.0, -7)))).item<int64_t>(), n);
  }
  Tensor r = random({n}, DType::Float32, 5, -3, 3);
  Tensor out = empty({n}, Options(DType::BFloat16));
  stochastic_round_(out, r);
  const double bias = mean(sub(out.to(DType::Float64), r.to(DType::Float64))).item<double>();
  EXPECT_LT(std::abs(bias), 1e-4);  // ulps up to 2^-6 here; the mean of n of them is ~1e-5
  Tensor exact = tensor<float>({0.0f, -0.0f, 1.0f, -2.5f, 0.1875f, INFINITY, -INFINITY, NAN});
  Tensor e = empty({8}, Options(DType::BFloat16));
  stochastic_round_(e, exact);
  std::vector<double> ev = values(e);
  const std::vector<double> want = {0.0, -0.0, 1.0, -2.5, 0.1875, INFINITY, -INFINITY};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(ev[i], want[i]) << i;
  EXPECT_TRUE(std::isnan(ev[7]));
  Generator g1(9), g2(9);
  Tensor a = empty({1000}, Options(DType::BFloat16)), b = empty({1000}, Options(DType::BFloat16));
  Tensor src = random({1000}, DType::Float32, 6);
  stochastic_round_(a, src, &g1);
  stochastic_round_(b, src, &g2);
  EXPECT_TRUE(all(eq(a, b)).item<bool>());
  stochastic_round_(b, src, &g2);  // the generator moved on: other bits
  EXPECT_FALSE(all(eq(a, b)).item<bool>());
  expect_error([&] { stochastic_round_(empty({2}, Options(DType::Float16)), zeros({2})); },
               {"stochastic_round_", "float16"});
  expect_error([&] { stochastic_round_(empty({3}, Options(DType::BFloat16)), zeros({2})); },
               {"stochastic_round_", "[3]", "[2]"});
  expect_error([&] { stochastic_round_(empty({2, 2}, Options(DType::BFloat16)).t(), zeros({2, 2})); },
               {"stochastic_round_", "contiguous"});
  stochastic_round_(empty({0}, Options(DType::BFloat16)), zeros({0}));
}

TEST(UnscaleGrads, RejectsMisuse) {
  Tensor g = zeros({2, 3});
  expect_error([&] { unscale_grads_({g}, zeros({2}), 1.0); }, {"unscale_grads_", "found_inf", "one element"});
  expect_error([&] { unscale_grads_({g}, zeros({1}, DType::Float64), 1.0); }, {"unscale_grads_", "float64"});
  expect_error([&] { unscale_grads_({g.t()}, zeros({1}), 1.0); }, {"unscale_grads_", "grads[0]", "contiguous"});
  expect_error([&] { unscale_grads_({zeros({2}, DType::Int64)}, zeros({1}), 1.0); }, {"unscale_grads_", "int64"});
  expect_error([&] { unscale_grads_({g, Tensor()}, zeros({1}), 1.0); }, {"unscale_grads_", "grads[1]", "undefined"});
  expect_error([&] { unscale_grads_({g}, zeros({1}), INFINITY); }, {"unscale_grads_", "inv_scale", "finite"});
}

TEST(OptimStep, EmptyListsAndNoMomentumBuffers) {
  sgd_step({}, {}, {}, SgdHyper{0.1});
  adam_step({}, {}, {}, AdamHyper{});
  rmsprop_step({}, {}, {}, RMSpropHyper{});
  Tensor p = tensor<float>({1, 2}), g = tensor<float>({1, -1});
  sgd_step({p}, {g}, {}, SgdHyper{0.5});
  EXPECT_TRUE(matches(p, {2}, DType::Float32, {0.5, 2.5}));
  // Without centering or a momentum, RMSprop needs square_avg only.
  Tensor sq = zeros({2});
  rmsprop_step({p}, {g}, {std::vector<Tensor>{sq}}, RMSpropHyper{.lr = 0.1, .alpha = 0.5});
  EXPECT_TRUE(matches(sq, {2}, DType::Float32, {0.5, 0.5}));
}

TEST(OptimStep, RejectsMisuse) {
  Tensor p = zeros({2, 3}), g = zeros({2, 3});
  expect_error([&] { sgd_step({p}, {g, g}, {}, SgdHyper{0.1}); }, {"sgd_step", "grads has 2 tensors", "params has 1"});
  expect_error([&] { sgd_step({p}, {zeros({3, 2})}, {}, SgdHyper{0.1}); },
               {"sgd_step", "grads[0] is [3, 2]", "[2, 3]"});
  expect_error([&] { sgd_step({p}, {g}, {}, SgdHyper{0.1, 0.9}); }, {"sgd_step", "momentum_buffer has 0 tensors"});
  expect_error([&] { sgd_step({p.t()}, {g.t()}, {}, SgdHyper{0.1}); }, {"sgd_step", "params[0]", "must be contiguous"});
  expect_error([&] { sgd_step({zeros({2}, DType::Int64)}, {zeros({2}, DType::Int64)}, {}, SgdHyper{0.1}); },
               {"sgd_step", "int64", "floating point"});
  expect_error([&] { sgd_step({p}, {g}, {}, SgdHyper{0.1, 0, 0, 0, true}); }, {"sgd_step", "nesterov"});
  const Tensor transposed = zeros({2, 3}).t().contiguous().t();
  expect_error([&] { adam_step({p}, {g}, {std::vector<Tensor>{zeros({2, 3})}, {transposed}}, AdamHyper{}); },
               {"adam_step", "exp_avg_sq[0]", "contiguous"});
  AdamHyper h;
  h.step = 0;
  expect_error([&] { adam_step({p}, {g}, {std::vector<Tensor>{zeros({2, 3})}, {zeros({2, 3})}}, h); },
               {"adam_step", "step counts from 1, got 0"});
  const Tensor wide = zeros({2, 3}, DType::Float64);
  expect_error([&] { adam_step({p}, {g}, {std::vector<Tensor>{wide}, {zeros({2, 3})}}, AdamHyper{}); },
               {"adam_step", "exp_avg[0]", "float64"});
  // A centered RMSprop needs grad_avg; one with a momentum, momentum_buffer.
  expect_error([&] { rmsprop_step({p}, {g}, {std::vector<Tensor>{zeros({2, 3})}}, RMSpropHyper{.centered = true}); },
               {"rmsprop_step", "grad_avg has 0 tensors"});
  expect_error(
      [&] {
        rmsprop_step({p}, {g}, {std::vector<Tensor>{zeros({2, 3})}, {}, {zeros({3})}}, RMSpropHyper{.momentum = 0.5});
      },
      {"rmsprop_step", "momentum_buffer[0] is [3]"});
}

}  // namespace
}  // namespace wick::test
