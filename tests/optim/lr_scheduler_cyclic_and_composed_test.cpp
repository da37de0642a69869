// Issue 13 section 3, schedules: CyclicLR, SequentialLR, ChainedScheduler and OneCycleLR's
// linear / three-phase / per-group additions, against hand-derived lr sequences (torch's own
// test values where they are exact), and how schedules treat a group added later.
#include <cmath>
#include <memory>
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

struct AdditionsFixture {
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
  AdditionsFixture f;
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
  AdditionsFixture g;
  CyclicLR a(g.opt, 0.1, 1.0, {.step_size_up = 1, .step_size_down = 3, .cycle_momentum = false});
  expect_lrs(a, g.opt, {0.1, 1.0, 0.7, 0.4, 0.1, 1.0, 0.7});
  EXPECT_EQ(g.opt.options(0).momentum, 0.0);  // not cycled
}

TEST(CyclicLR, Triangular2HalvesEachCycleAndExpRangeDecaysPerIteration) {
  AdditionsFixture f;
  CyclicLR t2(f.opt, 0.0, 1.0, {.step_size_up = 2, .mode = CyclicLR::Mode::Triangular2});
  expect_lrs(t2, f.opt, {0, 0.5, 1, 0.5, 0, 0.25, 0.5, 0.25, 0, 0.125, 0.25, 0.125, 0});
  EXPECT_NEAR(f.opt.options(0).momentum, 0.9, 1e-15);
  AdditionsFixture g;
  CyclicLR ex(g.opt, 0.0, 1.0, {.step_size_up = 2, .mode = CyclicLR::Mode::ExpRange, .gamma = 0.9});
  Vec expected;
  const Vec heights = {0, 0.5, 1, 0.5, 0, 0.5, 1, 0.5};
  for (size_t e = 0; e < heights.size(); ++e) expected.push_back(heights[e] * std::pow(0.9, static_cast<double>(e)));
  expect_lrs(ex, g.opt, expected);
  EXPECT_NEAR(ex.momentum_at(6), 0.9 - 0.1 * std::pow(0.9, 6), 1e-15);
  // A custom scale function, by cycle: the second cycle at a tenth.
  AdditionsFixture h;
  CyclicLR custom(h.opt, 0.0, 1.0,
                  {.step_size_up = 1, .scale_fn = [](double cycle) { return cycle == 1 ? 1.0 : 0.1; },
                   .cycle_momentum = false});
  expect_lrs(custom, h.opt, {0, 1, 0, 0.1, 0});
  AdditionsFixture i;
  CyclicLR by_iteration(i.opt, 0.0, 1.0,
                        {.step_size_up = 1, .scale_fn = [](double e) { return 1 / (1 + e); },
                         .scale_mode = CyclicLR::ScaleMode::Iterations, .cycle_momentum = false});
  expect_lrs(by_iteration, i.opt, {0, 0.5, 0, 0.25, 0});
}

TEST(CyclicLR, PerGroupBoundsAdamBeta1AndErrors) {
  AdditionsFixture f;
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
  AdditionsFixture f, g;
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
  AdditionsFixture f;
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
  AdditionsFixture f;
  ConstantLR warm(f.opt, 0.5, 10);
  CyclicLR cycle(f.opt, 0.1, 1.0, {.step_size_up = 2});
  SequentialLR s(f.opt, {&warm, &cycle}, {2});
  expect_lrs(s, f.opt, {0.5, 0.5, 0.1, 0.55, 1.0, 0.55});
  EXPECT_NEAR(f.opt.lr(1), 0.55, 1e-15);  // CyclicLR's bounds are absolute
  EXPECT_NEAR(f.opt.options(0).momentum, 0.85, 1e-15);
}

TEST(SequentialLR, StateRoundTripAndErrors) {
  AdditionsFixture f, g;
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
  AdditionsFixture f;
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
  AdditionsFixture g;
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
  AdditionsFixture f;
  CyclicLR cyc(f.opt, 0.1, 1.0, {.step_size_up = 2, .cycle_momentum = false});
  ExponentialLR ex(f.opt, 0.5);
  ChainedScheduler s({&cyc, &ex});
  expect_lrs(s, f.opt, {0.1, 0.275, 0.5, 0.275, 0.05});
  AdditionsFixture g;
  ExponentialLR first(g.opt, 0.5);
  CyclicLR last(g.opt, 0.1, 1.0, {.step_size_up = 2});
  ChainedScheduler t({&first, &last});
  expect_lrs(t, g.opt, {0.1, 0.55, 1.0, 0.55, 0.1});
  EXPECT_NEAR(g.opt.options(1).momentum, 0.9, 1e-15);  // CyclicLR's momentum still cycles
}

TEST(ChainedScheduler, StateRoundTripAndErrors) {
  AdditionsFixture f, g;
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
  AdditionsFixture f;
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
  // pct_start 0.55 over 10 steps: the third phase starts and ends at step 9, so torch divides
  // by zero at step 10 (and not before).
  OneCycleLR late(f.opt, 1.0, 10, {.pct_start = 0.55, .three_phase = true});
  for (int i = 0; i < 9; ++i) late.step();
  expect_error([&] { late.step(); }, {"OneCycleLR", "step 10", "phase 3", "no length", "pct_start 0.55", "three_phase"});
  expect_error([&] { OneCycleLR(f.opt, 1.0, 10, {.pct_start = 0.1}); }, {"OneCycleLR", "step 0", "phase 1"});
  expect_error([&] { OneCycleLR(f.opt, 1.0, 10, {.pct_start = 1.5}); }, {"OneCycleLR", "pct_start", "[0, 1]", "1.5"});
  OneCycleLR edge(f.opt, 1.0, 10, {.pct_start = 0.5, .three_phase = true});  // phases 4, 4, 1 steps
}

// OneCycleLR against torch's formulas: literal trajectories printed by
// tests/optim/one_cycle_reference.py (a transcription of torch.optim.lr_scheduler.OneCycleLR's
// phases and get_lr in Python floats, run without PyTorch), then a loop reference of the same
// formulas over a grid of lengths, pct_start, annealing and phase counts. Where torch divides
// by zero (a step in a phase of length 0) wick throws at the same step.
struct OneCycleRow {
  double max_lr;
  int64_t total;
  double pct_start;
  OneCycleLR::Anneal anneal;
  bool three_phase;
  int64_t raises_at;  // -1: never
  Vec lr, momentum;
};

const std::vector<OneCycleRow>& one_cycle_rows() {
  static const std::vector<OneCycleRow> rows = {
      {1.0, 10, 0.3, OneCycleLR::Anneal::Cos, false, -1,
       {0.040000000000000036, 0.52, 1.0, 0.9504846320134737, 0.8117456539497631, 0.6112620219362893, 0.38874197806371075, 0.18825834605023697, 0.049519367986526286, 4e-06, 0.04951936798652623},
       {0.95, 0.8999999999999999, 0.85, 0.854951556604879, 0.8688255099070633, 0.8888739533021842, 0.9111260466978157, 0.9311744900929366, 0.945048443395121, 0.95, 0.945048443395121}},
      {1.0, 10, 0.3, OneCycleLR::Anneal::Linear, false, -1,
       {0.04, 0.52, 1.0, 0.8571434285714286, 0.7142868571428571, 0.5714302857142857, 0.42857371428571434, 0.2857171428571429, 0.14286057142857145, 4.000000000004e-06, -0.14285257142857133},
       {0.95, 0.8999999999999999, 0.85, 0.8642857142857142, 0.8785714285714286, 0.8928571428571428, 0.9071428571428571, 0.9214285714285714, 0.9357142857142857, 0.95, 0.9642857142857142}},
      {0.1, 12, 0.25, OneCycleLR::Anneal::Cos, true, -1,
       {0.0040000000000000036, 0.052000000000000005, 0.1, 0.052000000000000005, 0.004, 0.0038019575420312575, 0.0032470549057570953, 0.0024451973637258373, 0.0015552026362741626, 0.0007533450942429048, 0.00019844245796874242, 4e-07, 0.0001984424579687422},
       {0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}},
      {0.1, 12, 0.25, OneCycleLR::Anneal::Linear, true, -1,
       {0.004, 0.052000000000000005, 0.1, 0.052000000000000005, 0.0040000000000000036, 0.0034286285714285715, 0.002857257142857143, 0.0022858857142857144, 0.0017145142857142859, 0.0011431428571428573, 0.0005717714285714288, 4.0000000000022656e-07, -0.0005709714285714283},
       {0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}},
      {2.0, 10, 0.05, OneCycleLR::Anneal::Cos, false, -1,
       {1.9863613579575088, 1.8794742333114842, 1.6772828624994547, 1.401697817871271, 1.0825830151549507, 0.7545194948011494, 0.4530580296702058, 0.21086664716564413, 0.05419054156833217, 8e-06, 0.05419054156833228},
       {0.8506819348298639, 0.8560263124396755, 0.8661359214187129, 0.8799152287673515, 0.8958710327263834, 0.9122742743570399, 0.9273474079061212, 0.9394570254698197, 0.9472908620850317, 0.95, 0.9472908620850317}},
      {2.0, 10, 0.0, OneCycleLR::Anneal::Linear, false, -1,
       {1.8000008, 1.6000016, 1.4000024, 1.2000031999999998, 1.0000040000000001, 0.8000048, 0.6000056, 0.4000063999999999, 0.20000719999999994, 8.000000000008e-06, -0.19999120000000037},
       {0.86, 0.87, 0.88, 0.89, 0.8999999999999999, 0.9099999999999999, 0.9199999999999999, 0.9299999999999999, 0.94, 0.95, 0.96}},
      {1.0, 10, 0.6, OneCycleLR::Anneal::Cos, true, -1,
       {0.040000000000000036, 0.1316718427000253, 0.3716718427000253, 0.6683281572999747, 0.9083281572999747, 1.0, 0.9083281572999747, 0.6683281572999747, 0.37167184270002523, 0.13167184270002527, 0.04},
       {0.95, 0.9404508497187474, 0.9154508497187474, 0.8845491502812526, 0.8595491502812526, 0.85, 0.8595491502812526, 0.8845491502812526, 0.9154508497187474, 0.9404508497187474, 0.95}},
      {1.0, 1, 0.3, OneCycleLR::Anneal::Cos, false, -1,
       {4e-06, 0.6112620219362891},
       {0.95, 0.8888739533021843}},
      {1.0, 10, 0.1, OneCycleLR::Anneal::Cos, false, 0,
       {},
       {}},
      {1.0, 10, 1.0, OneCycleLR::Anneal::Linear, false, 10,
       {0.04, 0.14666666666666667, 0.2533333333333333, 0.35999999999999993, 0.4666666666666666, 0.5733333333333334, 0.6799999999999999, 0.7866666666666667, 0.8933333333333333, 1.0},
       {0.95, 0.9388888888888889, 0.9277777777777777, 0.9166666666666666, 0.9055555555555556, 0.8944444444444444, 0.8833333333333333, 0.8722222222222222, 0.861111111111111, 0.85}},
  };
  return rows;
}

// Steps a OneCycleLR on an SGD with momentum through `total` steps, recording the lr and
// momentum after each (construction is step 0), or the step at which it threw.
struct CycleRun {
  Vec lr, momentum;
  int64_t threw_at = -1;
};
CycleRun run_one_cycle(double max_lr, int64_t total, OneCycleLR::Options o) {
  Variable a = param();
  SGD opt({{"a", a}}, SGDOptions{.lr = 1.0, .momentum = 0.5});
  CycleRun r;
  std::unique_ptr<OneCycleLR> s;
  try {
    s = std::make_unique<OneCycleLR>(opt, max_lr, total, o);
  } catch (const Error&) {
    r.threw_at = 0;
    return r;
  }
  for (int64_t e = 0; e <= total; ++e) {
    if (e > 0) {
      try {
        s->step();
      } catch (const Error&) {
        r.threw_at = e;
        return r;
      }
    }
    r.lr.push_back(opt.lr(0));
    r.momentum.push_back(opt.options(0).momentum);
  }
  return r;
}

TEST(OneCycleLR, TrajectoryMatchesPyTorchsFormulas) {
  for (const OneCycleRow& row : one_cycle_rows()) {
    const std::string what = "max_lr " + std::to_string(row.max_lr) + " total " + std::to_string(row.total) +
                             " pct_start " + std::to_string(row.pct_start) +
                             (row.anneal == OneCycleLR::Anneal::Cos ? " cos" : " linear") +
                             (row.three_phase ? " three_phase" : "");
    const CycleRun r = run_one_cycle(row.max_lr, row.total,
                                {.pct_start = row.pct_start, .anneal_strategy = row.anneal, .three_phase = row.three_phase});
    EXPECT_EQ(r.threw_at, row.raises_at) << what;
    ASSERT_EQ(r.lr.size(), row.lr.size()) << what;
    for (size_t e = 0; e < row.lr.size(); ++e) {
      EXPECT_NEAR(r.lr[e], row.lr[e], 1e-15 * std::max(1.0, std::abs(row.lr[e]))) << what << " step " << e;
      EXPECT_NEAR(r.momentum[e], row.momentum[e], 1e-15 * std::max(1.0, std::abs(row.momentum[e]))) << what << " step " << e;
    }
  }
}

// torch's get_lr, transcribed: the phase a step falls in is the first whose end it does not
// pass (or the last), its fraction (step - previous end) / (end - previous end).
struct TorchOneCycle {
  double max_lr, div_factor, final_div_factor, base_m, max_m;
  int64_t total;
  double pct_start;
  bool cos, three_phase;
  // lr and momentum at `step`; false where torch divides by zero.
  bool at(int64_t step, double& lr, double& momentum) const {
    const double initial = max_lr / div_factor, min = initial / final_div_factor, n = static_cast<double>(total);
    struct P { double end, lr_from, lr_to, m_from, m_to; };
    std::vector<P> ps;
    if (three_phase)
      ps = {{pct_start * n - 1, initial, max_lr, max_m, base_m}, {2 * pct_start * n - 2, max_lr, initial, base_m, max_m},
            {n - 1, initial, min, max_m, max_m}};
    else
      ps = {{pct_start * n - 1, initial, max_lr, max_m, base_m}, {n - 1, max_lr, min, base_m, max_m}};
    auto anneal = [&](double a, double b, double pct) {
      return cos ? b + (a - b) / 2.0 * (std::cos(std::numbers::pi * pct) + 1) : (b - a) * pct + a;
    };
    double start = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      if (static_cast<double>(step) <= ps[i].end || i + 1 == ps.size()) {
        if (ps[i].end - start == 0) return false;
        const double pct = (static_cast<double>(step) - start) / (ps[i].end - start);
        lr = anneal(ps[i].lr_from, ps[i].lr_to, pct);
        momentum = anneal(ps[i].m_from, ps[i].m_to, pct);
        return true;
      }
      start = ps[i].end;
    }
    return false;
  }
};

TEST(OneCycleLR, EveryShapeOfScheduleMatchesTheTranscribedFormulas) {
  int checked = 0, throwing = 0;
  for (int64_t total : {1, 2, 3, 4, 7, 10, 16, 100})
    for (double pct : {0.0, 0.01, 0.1, 0.125, 0.25, 0.3, 0.45, 0.5, 0.55, 0.75, 0.999, 1.0})
      for (bool cos : {true, false})
        for (bool three : {false, true}) {
          const TorchOneCycle ref{2.0, 10.0, 100.0, 0.8, 0.9, total, pct, cos, three};
          OneCycleLR::Options o{.pct_start = pct, .div_factor = 10, .final_div_factor = 100, .base_momentum = 0.8,
                                .max_momentum = 0.9};
          o.anneal_strategy = cos ? OneCycleLR::Anneal::Cos : OneCycleLR::Anneal::Linear;
          o.three_phase = three;
          const CycleRun r = run_one_cycle(2.0, total, o);
          int64_t ref_throws = -1;
          for (int64_t e = 0; e <= total; ++e) {
            double lr = 0, m = 0;
            if (!ref.at(e, lr, m)) {
              ref_throws = e;
              break;
            }
            ASSERT_LT(static_cast<size_t>(e), r.lr.size()) << total << " " << pct << " " << cos << " " << three;
            EXPECT_NEAR(r.lr[e], lr, 1e-15 * std::max(1.0, std::abs(lr))) << total << " " << pct << " step " << e;
            EXPECT_NEAR(r.momentum[e], m, 1e-15 * std::max(1.0, std::abs(m))) << total << " " << pct << " step " << e;
            ++checked;
          }
          EXPECT_EQ(r.threw_at, ref_throws) << total << " " << pct << " " << cos << " " << three;
          throwing += ref_throws >= 0;
        }
  EXPECT_GT(checked, 3000);
  EXPECT_GT(throwing, 10);  // the grid reaches torch's division by zero too
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
