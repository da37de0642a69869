// Learning-rate schedules: each one's lr sequence against hand-computed values, every group
// scheduled, state round trips.
#include <cmath>
#include <numbers>

#include <wick/optim/adagrad.h>
#include <wick/optim/adam.h>
#include <wick/optim/lr_scheduler.h>
#include <wick/optim/sgd.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

using Vec = std::vector<double>;

struct Fixture {
  Variable a{zeros({1}), true}, b{zeros({1}), true};
  SGD opt{std::vector<SGD::Group>{{{{"a", a}}, SGDOptions{.lr = 1.0}}, {{{"b", b}}, SGDOptions{.lr = 0.1}}}};
};

// The lr of group 0 at epochs 0..expected.size()-1 (group 1 has base lr 0.1 and follows the
// same factors for every scheduler but OneCycleLR).
void expect_sequence(LRScheduler& s, Optimizer& opt, const Vec& expected, bool relative_groups = true) {
  for (size_t e = 0; e < expected.size(); ++e) {
    if (e > 0) s.step();
    EXPECT_EQ(s.last_epoch(), static_cast<int64_t>(e));
    EXPECT_NEAR(opt.lr(0), expected[e], 1e-12) << "epoch " << e;
    if (relative_groups) {
      EXPECT_NEAR(opt.lr(1), 0.1 * expected[e], 1e-12) << "epoch " << e;
    }
  }
}

TEST(LRScheduler, StepLR) {
  Fixture f;
  StepLR s(f.opt, 2, 0.5);
  expect_sequence(s, f.opt, {1, 1, 0.5, 0.5, 0.25, 0.25});
  expect_error([&] { StepLR(f.opt, 0); }, {"StepLR", "step_size", "0"});
}

TEST(LRScheduler, MultiStepLR) {
  Fixture f;
  MultiStepLR s(f.opt, {2, 5}, 0.1);
  expect_sequence(s, f.opt, {1, 1, 0.1, 0.1, 0.1, 0.01, 0.01});
}

// torch sorts the milestones (a Counter): any order, and a repeated one counts twice.
TEST(LRScheduler, MultiStepLRUnsortedAndRepeatedMilestones) {
  Fixture f;
  MultiStepLR s(f.opt, {5, 2, 2}, 0.1);
  expect_sequence(s, f.opt, {1, 1, 0.01, 0.01, 0.01, 0.001});
}

TEST(LRScheduler, CosineAnnealingLR) {
  Fixture f;
  CosineAnnealingLR s(f.opt, 4, 0.2);
  Vec expected;
  for (int e = 0; e <= 6; ++e) expected.push_back(0.2 + 0.8 * (1 + std::cos(std::numbers::pi * e / 4)) / 2);
  expect_sequence(s, f.opt, expected, false);
  EXPECT_NEAR(f.opt.lr(1), 0.2 + (0.1 - 0.2) * (1 + std::cos(std::numbers::pi * 6 / 4)) / 2, 1e-12);
  expect_error([&] { CosineAnnealingLR(f.opt, 0); }, {"CosineAnnealingLR", "T_max"});
}

TEST(LRScheduler, CosineAnnealingWarmRestarts) {
  Fixture f;
  CosineAnnealingWarmRestarts s(f.opt, 2, 2);  // periods of 2, 4, 8 epochs
  auto c = [](double t) { return (1 + std::cos(std::numbers::pi * t)) / 2; };
  expect_sequence(s, f.opt, {c(0), c(0.5), c(0), c(0.25), c(0.5), c(0.75), c(0), c(1.0 / 8)});
  Fixture g;
  CosineAnnealingWarmRestarts same(g.opt, 3);
  expect_sequence(same, g.opt, {c(0), c(1.0 / 3), c(2.0 / 3), c(0), c(1.0 / 3)});
}

TEST(LRScheduler, LambdaMultiplicativePolynomialConstant) {
  {
    Fixture f;
    LambdaLR s(f.opt, [](int64_t e) { return 1.0 / (e + 1); });
    expect_sequence(s, f.opt, {1, 0.5, 1.0 / 3});
  }
  {
    Fixture f;
    LambdaLR s(f.opt, std::vector<LambdaLR::Factor>{[](int64_t) { return 2.0; }, [](int64_t e) { return e + 1.0; }});
    s.step();
    EXPECT_NEAR(f.opt.lr(0), 2.0, 1e-12);
    EXPECT_NEAR(f.opt.lr(1), 0.2, 1e-12);
    expect_error([&] { LambdaLR(f.opt, std::vector<LambdaLR::Factor>{[](int64_t) { return 1.0; }}); },
                 {"LambdaLR", "1 functions for 2"});
  }
  {
    Fixture f;
    MultiplicativeLR s(f.opt, [](int64_t e) { return e == 2 ? 0.5 : 0.9; });
    expect_sequence(s, f.opt, {1, 0.9, 0.45, 0.405});
  }
  {
    Fixture f;
    PolynomialLR s(f.opt, 4, 2.0);
    expect_sequence(s, f.opt, {1, 0.5625, 0.25, 0.0625, 0, 0});
  }
  {
    Fixture f;
    ConstantLR s(f.opt, 0.5, 2);
    expect_sequence(s, f.opt, {0.5, 0.5, 1, 1});
    expect_error([&] { ConstantLR(f.opt, 1.5); }, {"ConstantLR", "factor"});
  }
}

TEST(LRScheduler, ExponentialLR) {
  Fixture f;
  ExponentialLR s(f.opt, 0.5);
  expect_sequence(s, f.opt, {1, 0.5, 0.25, 0.125});
}

TEST(LRScheduler, LinearLR) {
  Fixture f;
  LinearLR s(f.opt, 0.5, 1.0, 4);
  expect_sequence(s, f.opt, {0.5, 0.625, 0.75, 0.875, 1, 1});
  expect_error([&] { LinearLR(f.opt, 0.0); }, {"LinearLR", "start_factor 0"});
}

TEST(LRScheduler, CosineWithWarmup) {
  Fixture f;
  CosineWarmupLR s(f.opt, 2, 6, 0.0);
  double r = std::sqrt(0.5);  // cos(pi / 4)
  expect_sequence(s, f.opt, {0, 0.5, 1, 0.5 * (1 + r), 0.5, 0.5 * (1 - r), 0, 0});
  // With a floor (group 1's base lr is below it, so only group 0 is checked).
  Fixture g;
  CosineWarmupLR m(g.opt, 2, 6, 0.1);
  expect_sequence(m, g.opt, {0, 0.5, 1, 0.1 + 0.45 * (1 + r), 0.55, 0.1 + 0.45 * (1 - r), 0.1}, false);
  expect_error([&] { CosineWarmupLR(f.opt, 6, 6); }, {"CosineWarmupLR", "warmup_steps (6)", "total_steps (6)"});
}

TEST(LRScheduler, OneCycleLR) {
  Fixture f;
  OneCycleLR s(f.opt, 1.0, 10);  // pct_start 0.3: up for 2 steps, down for 7
  double lo = 0.04, min = 0.04 / 1e4;
  auto down = [&](double pct) { return min + (1 - min) / 2 * (1 + std::cos(std::numbers::pi * pct)); };
  Vec expected = {lo, 1 - (1 - lo) / 2, 1};
  for (int e = 3; e <= 9; ++e) expected.push_back(down((e - 2) / 7.0));
  expect_sequence(s, f.opt, expected, false);
  EXPECT_NEAR(f.opt.lr(0), min, 1e-15);
  EXPECT_EQ(f.opt.lr(1), f.opt.lr(0));  // absolute: every group follows max_lr
  s.step();  // torch allows stepping to total_steps itself
  expect_error([&] { s.step(); }, {"OneCycleLR", "stepped 11 times", "total_steps 10"});
  // Over 3 steps pct_start 0.3 ends the rise at step -0.1: torch starts in the fall.
  OneCycleLR short_cycle(f.opt, 1.0, 3, {.pct_start = 0.3});
  EXPECT_NEAR(f.opt.lr(0), min + (1 - min) / 2 * (1 + std::cos(std::numbers::pi * 0.1 / 2.1)), 1e-15);
}

// Momentum cycling, from torch's formulas with the defaults (base 0.85, max 0.95): down
// from 0.95 to 0.85 while the lr rises (epochs 0..2), back up to 0.95 while it falls.
Vec one_cycle_momenta() {
  auto anneal = [](double from, double to, double pct) {
    return to + (from - to) / 2 * (1 + std::cos(std::numbers::pi * pct));
  };
  Vec out = {0.95, 0.90, 0.85};
  for (int e = 3; e <= 9; ++e) out.push_back(anneal(0.85, 0.95, (e - 2) / 7.0));
  return out;
}

TEST(LRScheduler, OneCycleLRCyclesSgdMomentum) {
  Fixture f;  // SGD made with momentum 0: like torch, the cycle overrides it
  OneCycleLR s(f.opt, 1.0, 10);
  EXPECT_EQ(s.momentum_name(), "momentum");
  Vec expected = one_cycle_momenta();
  EXPECT_NEAR(expected[5], 0.85 + 0.1 * (1 - std::cos(std::numbers::pi * 3 / 7.0)) / 2, 1e-15);
  for (size_t e = 0; e < expected.size(); ++e) {
    if (e > 0) s.step();
    EXPECT_NEAR(s.momentum_at(static_cast<int64_t>(e)), expected[e], 1e-12) << "epoch " << e;
    for (size_t g = 0; g < 2; ++g) {
      EXPECT_NEAR(f.opt.hyper_parameter(g, "momentum"), expected[e], 1e-12) << "epoch " << e << " group " << g;
      EXPECT_NEAR(f.opt.options(g).momentum, expected[e], 1e-12) << "epoch " << e << " group " << g;
    }
  }
  // Other bounds, and the state round trip restores the momentum with the lr.
  Fixture g;
  OneCycleLR t(g.opt, 1.0, 10, {.base_momentum = 0.5, .max_momentum = 0.7});
  EXPECT_NEAR(g.opt.options(0).momentum, 0.7, 1e-15);
  t.load_state_dict(s.state_dict());  // epoch 9: the end of the cycle
  EXPECT_NEAR(g.opt.options(1).momentum, 0.7, 1e-12);
  EXPECT_NEAR(g.opt.lr(0), f.opt.lr(0), 1e-15);
  expect_error([&] { OneCycleLR(g.opt, 1.0, 10, {.base_momentum = 0.9, .max_momentum = 0.8}); },
               {"OneCycleLR", "base_momentum (0.9)", "max_momentum (0.8)"});
}

TEST(LRScheduler, OneCycleLRCyclesAdamBeta1) {
  Variable a{zeros({2}), true};
  Adam opt({{"a", a}}, AdamOptions{.lr = 0.1, .beta1 = 0.5, .beta2 = 0.99});
  OneCycleLR s(opt, 2.0, 10);
  EXPECT_EQ(s.momentum_name(), "beta1");
  Vec expected = one_cycle_momenta();
  for (size_t e = 0; e < expected.size(); ++e) {
    if (e > 0) s.step();
    EXPECT_NEAR(opt.options(0).beta1, expected[e], 1e-12) << "epoch " << e;
    EXPECT_EQ(opt.options(0).beta2, 0.99);  // only beta1 cycles
  }
  EXPECT_NEAR(opt.lr(0), 2.0 / 25 / 1e4, 1e-15);
}

TEST(LRScheduler, OneCycleLRNeedsAMomentumToCycle) {
  Variable a{zeros({2}), true};
  Adagrad opt({{"a", a}}, AdagradOptions{.lr = 0.1});
  expect_error([&] { OneCycleLR(opt, 1.0, 10); },
               {"OneCycleLR", "cycle_momentum", "'beta1' or 'momentum'", "Adagrad has neither"});
  OneCycleLR s(opt, 1.0, 10, {.cycle_momentum = false});
  EXPECT_EQ(s.momentum_name(), "");
  EXPECT_NEAR(opt.lr(0), 0.04, 1e-15);
  s.step();
  EXPECT_NEAR(opt.lr(0), 1 - 0.96 / 2, 1e-12);
  // Without cycling, the optimizer's own momentum stays.
  Fixture f;
  f.opt.options(0).momentum = 0.3;
  OneCycleLR t(f.opt, 1.0, 10, {.cycle_momentum = false});
  t.step();
  EXPECT_EQ(f.opt.options(0).momentum, 0.3);
}

TEST(LRScheduler, ReduceLROnPlateau) {
  Fixture f;
  ReduceLROnPlateau s(f.opt, {.factor = 0.5, .patience = 1, .threshold = 0.1, .cooldown = 1, .min_lr = 0.2});
  const Vec metrics = {10, 9.5, 9.2, 9.1, 9.1, 9.1, 9.1, 9.1, 9.1, 9.1, 9.1, 9.1, 5.0};
  const Vec lrs = {1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2, 0.2, 0.2, 0.2, 0.2};
  for (size_t i = 0; i < metrics.size(); ++i) {
    s.step(metrics[i]);
    EXPECT_DOUBLE_EQ(f.opt.lr(0), lrs[i]) << "step " << i;
  }
  EXPECT_EQ(s.best(), 5.0);
  EXPECT_DOUBLE_EQ(f.opt.lr(1), 0.1);  // already below min_lr: neither reduced nor raised
  // State round trip: a fresh scheduler resumes with the same counters.
  Fixture g;
  ReduceLROnPlateau t(g.opt, {.factor = 0.5, .patience = 1});
  s.step(9);
  t.load_state_dict(s.state_dict());
  EXPECT_EQ(t.best(), 5.0);
  EXPECT_EQ(t.num_bad_epochs(), 1);
  expect_error([&] { t.load_state_dict({}); }, {"ReduceLROnPlateau.load_state_dict", "expected 4 entries"});
  expect_error([&] { ReduceLROnPlateau(f.opt, {.factor = 1.0}); }, {"ReduceLROnPlateau", "factor", "(0, 1)"});
}

// Every mode / threshold_mode pair: the same patience-0 schedule (each step that does not
// improve halves the lr), fed metrics that separate the four improvement rules.
TEST(LRScheduler, ReduceLROnPlateauModes) {
  using P = ReduceLROnPlateau;
  struct Case {
    P::Mode mode;
    P::ThresholdMode threshold_mode;
    Vec metrics, lrs;
    double best;
  };
  const std::vector<Case> cases = {
      // improves when < best * 0.9: 9.05 is not below 9, 8.9 is, 8.5 is not below 8.01
      {P::Mode::Min, P::ThresholdMode::Rel, {10, 9.05, 8.9, 8.5}, {1, 0.5, 0.5, 0.25}, 8.9},
      // improves when < best - 0.1: 9.95 is not below 9.9, 9.5 is, 9.45 is not below 9.4
      {P::Mode::Min, P::ThresholdMode::Abs, {10, 9.95, 9.5, 9.45}, {1, 0.5, 0.5, 0.25}, 9.5},
      // improves when > best * 1.1: 10.9 is not above 11, 11.1 is, 12 is not above 12.21
      {P::Mode::Max, P::ThresholdMode::Rel, {10, 10.9, 11.1, 12}, {1, 0.5, 0.5, 0.25}, 11.1},
      // improves when > best + 0.1: 10.05 is not above 10.1, 10.5 is, 10.55 is not above 10.6
      {P::Mode::Max, P::ThresholdMode::Abs, {10, 10.05, 10.5, 10.55}, {1, 0.5, 0.5, 0.25}, 10.5},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    Fixture f;
    P s(f.opt, {.mode = cases[c].mode, .threshold_mode = cases[c].threshold_mode, .factor = 0.5, .patience = 0,
                .threshold = 0.1});
    EXPECT_EQ(s.best(), cases[c].mode == P::Mode::Min ? INFINITY : -INFINITY) << "case " << c;
    for (size_t i = 0; i < cases[c].metrics.size(); ++i) {
      s.step(cases[c].metrics[i]);
      EXPECT_DOUBLE_EQ(f.opt.lr(0), cases[c].lrs[i]) << "case " << c << " step " << i;
    }
    EXPECT_EQ(s.best(), cases[c].best) << "case " << c;
  }
  // Max mode with negative metrics (a negated loss) still counts a rise as improvement.
  Fixture f;
  P s(f.opt, {.mode = P::Mode::Max, .factor = 0.5, .patience = 0});
  for (double m : {-5.0, -4.0, -3.0}) s.step(m);
  EXPECT_EQ(f.opt.lr(0), 1.0);
  EXPECT_EQ(s.best(), -3.0);
  s.step(-3.5);
  EXPECT_EQ(f.opt.lr(0), 0.5);
  expect_error([&] { P(f.opt, {.threshold = -1}); }, {"ReduceLROnPlateau", "threshold", "-1"});
}

TEST(LRScheduler, StateRoundTrip) {
  Fixture f;
  StepLR s(f.opt, 2, 0.5);
  for (int i = 0; i < 3; ++i) s.step();
  TensorMap state = s.state_dict();
  EXPECT_TRUE(matches(state.at("last_epoch"), {}, DType::Float64, {3}));
  EXPECT_TRUE(matches(state.at("base_lr.1"), {}, DType::Float64, {0.1}));
  Fixture g;
  g.opt.set_lr(0, 7);  // the loaded base lrs win
  StepLR t(g.opt, 2, 0.5);
  t.load_state_dict(state);
  EXPECT_EQ(g.opt.lr(0), 0.5);
  s.step();
  t.step();
  EXPECT_EQ(g.opt.lr(0), f.opt.lr(0));
  EXPECT_EQ(g.opt.lr(1), f.opt.lr(1));
  state.erase("base_lr.1");
  state["x"] = scalar_tensor(1.0);
  expect_error([&] { t.load_state_dict(state); }, {"StepLR.load_state_dict", "missing 'base_lr.1'"});
}

}  // namespace
}  // namespace wick::test
