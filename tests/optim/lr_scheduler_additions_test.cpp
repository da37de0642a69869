// Issue 13 section 3, schedules: CyclicLR, SequentialLR, ChainedScheduler and OneCycleLR's
// linear / three-phase / per-group additions, against hand-derived lr sequences (torch's own
// test values where they are exact), and how schedules treat a group added later.
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

Variable param() { return Variable(zeros({2}, DType::Float64), true); }

struct Fixture {
  Variable a{zeros({1}), true}, b{zeros({1}), true};
  SGD opt{std::vector<SGD::Group>{{{{"a", a}}, SGDOptions{.lr = 1.0}}, {{{"b", b}}, SGDOptions{.lr = 0.1}}}};
};

// Steps `s` through epochs 0..expected.size()-1 checking group `group`'s lr.
void expect_lrs(LRScheduler& s, Optimizer& opt, const Vec& expected, size_t group = 0, double tol = 1e-12) {
  for (size_t e = 0; e < expected.size(); ++e) {
    if (e > 0) s.step();
    EXPECT_EQ(s.last_epoch(), static_cast<int64_t>(e));
    EXPECT_NEAR(opt.lr(group), expected[e], tol) << s.name() << " epoch " << e << " group " << group;
  }
}

Vec scaled(Vec v, double f) {
  for (double& x : v) x *= f;
  return v;
}

// torch's CyclicLR, triangular, over two cycles: up over 2 steps, down over 2.
TEST(CyclicLR, TriangularOverTwoCycles) {
  Fixture f;
  CyclicLR s(f.opt, 0.1, 1.0, {.step_size_up = 2});
  EXPECT_EQ(s.momentum_name(), "momentum");
  // Every group gets the same absolute bounds, whatever its lr was.
  EXPECT_EQ(f.opt.lr(1), 0.1);
  const Vec lrs = {0.1, 0.55, 1.0, 0.55, 0.1, 0.55, 1.0, 0.55, 0.1};
  const Vec momenta = {0.9, 0.85, 0.8, 0.85, 0.9, 0.85, 0.8, 0.85, 0.9};  // torch's defaults 0.8 / 0.9
  for (size_t e = 0; e < lrs.size(); ++e) {
    if (e > 0) s.step();
    for (size_t g = 0; g < 2; ++g) {
      EXPECT_NEAR(f.opt.lr(g), lrs[e], 1e-12) << "epoch " << e;
      EXPECT_NEAR(f.opt.options(g).momentum, momenta[e], 1e-12) << "epoch " << e;
    }
  }
  // Asymmetric: up in 1 step, down in 3.
  Fixture g;
  CyclicLR a(g.opt, 0.1, 1.0, {.step_size_up = 1, .step_size_down = 3, .cycle_momentum = false});
  expect_lrs(a, g.opt, {0.1, 1.0, 0.7, 0.4, 0.1, 1.0, 0.7});
  EXPECT_EQ(g.opt.options(0).momentum, 0.0);  // not cycled
}

TEST(CyclicLR, Triangular2HalvesEachCycleAndExpRangeDecaysPerIteration) {
  Fixture f;
  CyclicLR t2(f.opt, 0.0, 1.0, {.step_size_up = 2, .mode = CyclicLR::Mode::Triangular2});
  expect_lrs(t2, f.opt, {0, 0.5, 1, 0.5, 0, 0.25, 0.5, 0.25, 0, 0.125, 0.25, 0.125, 0});
  EXPECT_NEAR(f.opt.options(0).momentum, 0.9, 1e-15);
  Fixture g;
  CyclicLR ex(g.opt, 0.0, 1.0, {.step_size_up = 2, .mode = CyclicLR::Mode::ExpRange, .gamma = 0.9});
  Vec expected;
  const Vec heights = {0, 0.5, 1, 0.5, 0, 0.5, 1, 0.5};
  for (size_t e = 0; e < heights.size(); ++e) expected.push_back(heights[e] * std::pow(0.9, static_cast<double>(e)));
  expect_lrs(ex, g.opt, expected);
  EXPECT_NEAR(ex.momentum_at(6), 0.9 - 0.1 * std::pow(0.9, 6), 1e-15);
  // A custom scale function, by cycle: the second cycle at a tenth.
  Fixture h;
  CyclicLR custom(h.opt, 0.0, 1.0,
                  {.step_size_up = 1, .scale_fn = [](double cycle) { return cycle == 1 ? 1.0 : 0.1; },
                   .cycle_momentum = false});
  expect_lrs(custom, h.opt, {0, 1, 0, 0.1, 0});
  Fixture i;
  CyclicLR by_iteration(i.opt, 0.0, 1.0,
                        {.step_size_up = 1, .scale_fn = [](double e) { return 1 / (1 + e); },
                         .scale_mode = CyclicLR::ScaleMode::Iterations, .cycle_momentum = false});
  expect_lrs(by_iteration, i.opt, {0, 0.5, 0, 0.25, 0});
}

TEST(CyclicLR, PerGroupBoundsAdamBeta1AndErrors) {
  Fixture f;
  CyclicLR s(f.opt, {0.1, 0.2}, {1.0, 3.0}, {.step_size_up = 2, .cycle_momentum = false});
  expect_lrs(s, f.opt, {0.2, 1.6, 3.0, 1.6, 0.2}, 1);
  EXPECT_EQ(s.base_lrs(), (Vec{0.1, 0.2}));

  Variable a = param();
  Adam adam({{"a", a}}, AdamOptions{.lr = 0.1, .beta2 = 0.99});
  CyclicLR c(adam, 0.01, 0.1, {.step_size_up = 2, .base_momentum = 0.7, .max_momentum = 0.9});
  EXPECT_EQ(c.momentum_name(), "beta1");
  expect_lrs(c, adam, {0.01, 0.055, 0.1});
  EXPECT_NEAR(adam.options(0).beta1, 0.7, 1e-15);
  EXPECT_EQ(adam.options(0).beta2, 0.99);

  Adagrad ada({{"a", a}}, AdagradOptions{.lr = 0.1});
  expect_error([&] { CyclicLR(ada, 0.1, 1.0); }, {"CyclicLR", "cycle_momentum", "Adagrad has neither"});
  CyclicLR plain(ada, 0.01, 1.0, {.cycle_momentum = false});
  EXPECT_EQ(ada.lr(0), 0.01);  // the optimizer's lr is replaced by base_lr
  expect_error([&] { CyclicLR(f.opt, {0.1, 0.2, 0.3}, {1.0}); },
               {"CyclicLR", "expected 2 values for base_lr", "got 3"});
  expect_error([&] { CyclicLR(f.opt, 0.1, -1.0); }, {"CyclicLR", "max_lr -1", "non-negative"});
  expect_error([&] { CyclicLR(f.opt, -0.1, 1.0); }, {"CyclicLR", "base_lr -0.1"});
  expect_error([&] { CyclicLR(f.opt, 0.1, 1.0, {.step_size_up = 0}); }, {"CyclicLR", "step_size_up 0"});
  expect_error([&] { CyclicLR(f.opt, 0.1, 1.0, {.base_momentum = 0.95}); },
               {"CyclicLR", "base_momentum (0.95)", "max_momentum (0.9)"});
}

TEST(CyclicLR, StateRoundTrip) {
  Fixture f, g;
  CyclicLR s(f.opt, 0.1, 1.0, {.step_size_up = 3});
  for (int i = 0; i < 4; ++i) s.step();
  CyclicLR t(g.opt, 0.1, 1.0, {.step_size_up = 3});
  t.load_state_dict(s.state_dict());
  EXPECT_EQ(t.last_epoch(), 4);
  EXPECT_EQ(g.opt.lr(0), f.opt.lr(0));
  EXPECT_EQ(g.opt.options(1).momentum, f.opt.options(1).momentum);
  s.step();
  t.step();
  EXPECT_EQ(g.opt.lr(1), f.opt.lr(1));
}

// torch's documented example (the current one; older docs printed 0.9 at the milestone,
// which its code never gave): ConstantLR(0.1, 20) then ExponentialLR(0.9) from epoch 20,
// which restarts at its own epoch 0 with the initial lr.
TEST(SequentialLR, SwitchesAtMilestonesRestartingTheNextSchedule) {
  Variable a = param();
  SGD opt({{"a", a}}, SGDOptions{.lr = 0.05});
  ConstantLR warm(opt, 0.1, 20);
  ExponentialLR decay(opt, 0.9);  // made when the lr was 0.005: the sequence gives it 0.05
  SequentialLR s(opt, {&warm, &decay}, {20});
  Vec expected(20, 0.005);
  for (double v : {0.05, 0.045, 0.0405, 0.03645}) expected.push_back(v);
  expect_lrs(s, opt, expected, 0, 1e-15);
  EXPECT_EQ(decay.last_epoch(), 3);
  EXPECT_EQ(decay.base_lrs(), Vec{0.05});

  // Three schedules, both groups scaled from their own base.
  Fixture f;
  LinearLR up(f.opt, 0.5, 1.0, 2);
  ConstantLR dip(f.opt, 0.5, 1);
  StepLR steps(f.opt, 2, 0.1);
  SequentialLR seq(f.opt, {&up, &dip, &steps}, {3, 5});
  const Vec lrs = {0.5, 0.75, 1, 0.5, 1, 1, 1, 0.1, 0.1, 0.01};
  expect_lrs(seq, f.opt, lrs);
  EXPECT_NEAR(f.opt.lr(1), 0.1 * lrs.back(), 1e-15);
  EXPECT_NEAR(seq.lr_at(0, 3), 0.5, 1e-15);
}

TEST(SequentialLR, AbsoluteSchedulesKeepTheirOwnBoundsAndMomentum) {
  Fixture f;
  ConstantLR warm(f.opt, 0.5, 10);
  CyclicLR cycle(f.opt, 0.1, 1.0, {.step_size_up = 2});
  SequentialLR s(f.opt, {&warm, &cycle}, {2});
  expect_lrs(s, f.opt, {0.5, 0.5, 0.1, 0.55, 1.0, 0.55});
  EXPECT_NEAR(f.opt.lr(1), 0.55, 1e-15);  // CyclicLR's bounds are absolute
  EXPECT_NEAR(f.opt.options(0).momentum, 0.85, 1e-15);
}

TEST(SequentialLR, StateRoundTripAndErrors) {
  Fixture f, g;
  ConstantLR c1(f.opt, 0.1, 2), c2(g.opt, 0.1, 2);
  ExponentialLR e1(f.opt, 0.9), e2(g.opt, 0.9);
  SequentialLR s(f.opt, {&c1, &e1}, {2}), t(g.opt, {&c2, &e2}, {2});
  for (int i = 0; i < 4; ++i) s.step();
  TensorMap state = s.state_dict();
  EXPECT_TRUE(matches(state.at("last_epoch"), {}, DType::Float64, {4}));
  EXPECT_TRUE(matches(state.at("scheduler.1.last_epoch"), {}, DType::Float64, {2}));
  EXPECT_TRUE(matches(state.at("scheduler.1.base_lr.1"), {}, DType::Float64, {0.1}));
  t.load_state_dict(state);
  EXPECT_EQ(t.last_epoch(), 4);
  EXPECT_NEAR(g.opt.lr(0), 0.81, 1e-15);
  s.step();
  t.step();
  EXPECT_EQ(g.opt.lr(0), f.opt.lr(0));
  EXPECT_EQ(g.opt.lr(1), f.opt.lr(1));
  state.erase("scheduler.0.last_epoch");
  expect_error([&] { t.load_state_dict(state); }, {"ConstantLR.load_state_dict", "expected 3 entries"});

  expect_error([&] { SequentialLR(f.opt, {}, {}); }, {"SequentialLR", "at least one scheduler", "got none"});
  expect_error([&] { SequentialLR(f.opt, {&c1, &e1}, {2, 4}); },
               {"SequentialLR", "one milestone fewer", "2 schedulers and 2 milestones"});
  expect_error([&] { SequentialLR(f.opt, {&c1, &e1}, {}); }, {"SequentialLR", "2 schedulers and 0 milestones"});
  expect_error([&] { SequentialLR(f.opt, {&c1, &e1, &c1}, {3, 3}); },
               {"SequentialLR", "positive and increasing", "milestone 1 = 3"});
  expect_error([&] { SequentialLR(f.opt, {&c1, &e1}, {0}); }, {"SequentialLR", "milestone 0 = 0"});
  expect_error([&] { SequentialLR(f.opt, {&c1, &e2}, {2}); },
               {"SequentialLR", "scheduler 1 (ExponentialLR)", "another optimizer"});
  expect_error([&] { SequentialLR(f.opt, {&c1, nullptr}, {2}); }, {"SequentialLR", "scheduler 1 is null"});
}

// torch's chainable forms: ConstantLR's factor and ExponentialLR's decay multiply.
TEST(ChainedScheduler, MultipliesFactorSchedules) {
  Fixture f;
  ConstantLR c(f.opt, 0.1, 2);
  ExponentialLR e(f.opt, 0.9);
  ChainedScheduler s({&c, &e});
  const Vec lrs = {0.1, 0.09, 0.81, 0.729, 0.6561};
  for (size_t i = 0; i < lrs.size(); ++i) {
    if (i > 0) s.step();
    EXPECT_NEAR(f.opt.lr(0), lrs[i], 1e-15) << "epoch " << i;
    EXPECT_NEAR(f.opt.lr(1), 0.1 * lrs[i], 1e-15) << "epoch " << i;
    EXPECT_EQ(c.last_epoch(), static_cast<int64_t>(i));  // each is stepped every step
    EXPECT_EQ(e.last_epoch(), static_cast<int64_t>(i));
  }
  // Three: a step decay on top.
  Fixture g;
  LinearLR l(g.opt, 0.5, 1.0, 2);
  StepLR st(g.opt, 3, 0.5);
  ExponentialLR ex(g.opt, 0.9);
  ChainedScheduler three({&l, &st, &ex});
  Vec expected;
  for (int i = 0; i <= 6; ++i)
    expected.push_back((i >= 2 ? 1.0 : 0.5 + 0.25 * i) * std::pow(0.5, i / 3) * std::pow(0.9, i));
  expect_lrs(three, g.opt, expected);
}

// An absolute schedule sets the lr; the factor schedules after it apply their per-step
// ratio, those before it are overridden (torch's chainable step order).
TEST(ChainedScheduler, AbsoluteSchedulesSetTheLr) {
  Fixture f;
  CyclicLR cyc(f.opt, 0.1, 1.0, {.step_size_up = 2, .cycle_momentum = false});
  ExponentialLR ex(f.opt, 0.5);
  ChainedScheduler s({&cyc, &ex});
  expect_lrs(s, f.opt, {0.1, 0.275, 0.5, 0.275, 0.05});
  Fixture g;
  ExponentialLR first(g.opt, 0.5);
  CyclicLR last(g.opt, 0.1, 1.0, {.step_size_up = 2});
  ChainedScheduler t({&first, &last});
  expect_lrs(t, g.opt, {0.1, 0.55, 1.0, 0.55, 0.1});
  EXPECT_NEAR(g.opt.options(1).momentum, 0.9, 1e-15);  // CyclicLR's momentum still cycles
}

TEST(ChainedScheduler, StateRoundTripAndErrors) {
  Fixture f, g;
  ConstantLR c1(f.opt, 0.1, 2), c2(g.opt, 0.1, 2);
  ExponentialLR e1(f.opt, 0.9), e2(g.opt, 0.9);
  ChainedScheduler s({&c1, &e1}), t({&c2, &e2});
  for (int i = 0; i < 3; ++i) s.step();
  t.load_state_dict(s.state_dict());
  EXPECT_EQ(g.opt.lr(0), f.opt.lr(0));
  s.step();
  t.step();
  EXPECT_EQ(g.opt.lr(1), f.opt.lr(1));
  EXPECT_NEAR(f.opt.lr(0), std::pow(0.9, 4), 1e-15);
  expect_error([&] { ChainedScheduler({}); }, {"ChainedScheduler", "at least one scheduler", "got none"});
  expect_error([&] { ChainedScheduler({&c1, &e2}); }, {"ChainedScheduler", "scheduler 1 (ExponentialLR)", "another optimizer"});
}

// torch's OneCycleLR tests: linear annealing, two phases (max_lr 25, final_div_factor 2)
// and three phases (pct_start 0.4, final_div_factor 4).
TEST(OneCycleLR, LinearAnnealingTwoAndThreePhases) {
  Variable a = param();
  SGD opt({{"a", a}}, SGDOptions{.lr = 1.0});
  OneCycleLR two(opt, 25.0, 10, {.final_div_factor = 2, .cycle_momentum = false, .anneal_strategy = OneCycleLR::Anneal::Linear});
  expect_lrs(two, opt, {1, 13, 25, 21.5, 18, 14.5, 11, 7.5, 4, 0.5});
  Variable b = param();
  SGD opt3({{"b", b}}, SGDOptions{.lr = 1.0});
  OneCycleLR three(opt3, 25.0, 10,
                   {.pct_start = 0.4, .final_div_factor = 4, .base_momentum = 0.1, .max_momentum = 0.7,
                    .anneal_strategy = OneCycleLR::Anneal::Linear, .three_phase = true});
  // Phase boundaries at steps 3 (max), 6 (back to max_lr / div_factor) and 9 (minimum).
  const Vec lrs = {1, 9, 17, 25, 17, 9, 1, 0.75, 0.5, 0.25};
  const Vec momenta = {0.7, 0.5, 0.3, 0.1, 0.3, 0.5, 0.7, 0.7, 0.7, 0.7};
  for (size_t e = 0; e < lrs.size(); ++e) {
    if (e > 0) three.step();
    EXPECT_NEAR(opt3.lr(0), lrs[e], 1e-12) << "epoch " << e;
    EXPECT_NEAR(opt3.options(0).momentum, momenta[e], 1e-12) << "epoch " << e;
  }
  three.step();  // total_steps itself is allowed, and stays in the last phase
  EXPECT_NEAR(opt3.lr(0), 0.25 - 0.75 / 3, 1e-12);
  expect_error([&] { three.step(); }, {"OneCycleLR", "stepped 11 times"});
}

TEST(OneCycleLR, ThreePhaseCosineAndPerGroupMaxLr) {
  Fixture f;
  OneCycleLR s(f.opt, {1.0, 2.0}, 20, {.pct_start = 0.25, .three_phase = true});
  auto cos_anneal = [](double from, double to, double pct) {
    return to + (from - to) / 2 * (1 + std::cos(std::numbers::pi * pct));
  };
  for (size_t g = 0; g < 2; ++g) {
    const double max = g == 0 ? 1.0 : 2.0, initial = max / 25, min = initial / 1e4;
    EXPECT_NEAR(s.base_lrs()[g], initial, 1e-15);  // torch's initial_lr
    for (int64_t e = 0; e <= 19; ++e) {
      double expected = e <= 4   ? cos_anneal(initial, max, e / 4.0)
                        : e <= 8 ? cos_anneal(max, initial, (e - 4) / 4.0)
                                 : cos_anneal(initial, min, (e - 8) / 11.0);
      EXPECT_NEAR(s.lr_at(g, e), expected, 1e-12) << "group " << g << " epoch " << e;
    }
    EXPECT_NEAR(s.lr_at(g, 4), max, 1e-15);
    EXPECT_NEAR(s.lr_at(g, 8), initial, 1e-15);
    EXPECT_NEAR(s.lr_at(g, 19), min, 1e-15);
  }
  EXPECT_NEAR(s.momentum_at(4), 0.85, 1e-15);
  EXPECT_NEAR(s.momentum_at(8), 0.95, 1e-15);
  EXPECT_NEAR(s.momentum_at(14), 0.95, 1e-15);
  EXPECT_NEAR(f.opt.lr(1), 0.08, 1e-15);
  expect_error([&] { OneCycleLR(f.opt, {1.0, 2.0, 3.0}, 20); }, {"OneCycleLR", "expected 2 values for max_lr", "got 3"});
  expect_error([&] { OneCycleLR(f.opt, -1.0, 20); }, {"OneCycleLR", "max_lr -1", "non-negative"});
  expect_error([&] { OneCycleLR(f.opt, 1.0, 10, {.pct_start = 0.55, .three_phase = true}); },
               {"OneCycleLR", "pct_start 0.55", "empty phase", "three_phase"});
  OneCycleLR edge(f.opt, 1.0, 10, {.pct_start = 0.5, .three_phase = true});  // phases 4, 4, 1 steps
}

// Schedulers drive the groups they were made for (see lr_scheduler.h); one made after the
// new group drives it too.
TEST(AddParamGroup, SchedulersMadeBeforeLeaveTheNewGroupAlone) {
  Variable a = param(), b = param();
  SGD opt({{"a", a}}, SGDOptions{.lr = 1.0});
  StepLR before(opt, 1, 0.5);
  opt.add_param_group({{{"b", b}}, {{"lr", 0.3}}});
  before.step();
  EXPECT_EQ(opt.lr(0), 0.5);
  EXPECT_EQ(opt.lr(1), 0.3);
  ExponentialLR after(opt, 0.1);
  after.step();
  EXPECT_NEAR(opt.lr(0), 0.05, 1e-15);
  EXPECT_NEAR(opt.lr(1), 0.03, 1e-15);
  // ReduceLROnPlateau reduces every group, as torch's does.
  ReduceLROnPlateau plateau(opt, {.factor = 0.5, .patience = 0});
  Variable c = param();
  opt.add_param_group({{{"c", c}}, {{"lr", 0.8}}});
  plateau.step(1.0);
  plateau.step(2.0);
  EXPECT_NEAR(opt.lr(2), 0.4, 1e-15);
}

}  // namespace
}  // namespace wick::test
