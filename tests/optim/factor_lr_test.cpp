// FactorLR, lamp's schedule as a scheduler: rates are base times the factor of the epoch and
// the observed validation loss, a factor <= 0 stops and leaves the rates alone, and its state
// round-trips like any scheduler's.
#include <optional>

#include <wick/optim/factor_lr.h>
#include <wick/optim/sgd.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct FactorFixture {
  Variable a{zeros({1}), true}, b{zeros({1}), true};
  SGD opt{std::vector<SGD::Group>{{{{"a", a}}, SGDOptions{.lr = 1.0}}, {{{"b", b}}, SGDOptions{.lr = 0.1}}}};
};

// Halves the rate once a validation loss below 1 was seen; stops at epoch 4.
double factor(int64_t epoch, std::optional<double> loss) {
  if (epoch >= 4) return 0;
  return loss && *loss < 1 ? 0.5 : 1.0;
}

TEST(FactorLR, RatesFollowTheFactorOfTheEpochAndTheObservedLoss) {
  FactorFixture f;
  FactorLR s(f.opt, factor);
  EXPECT_EQ(f.opt.lr(0), 1.0);  // epoch 0, no loss yet
  EXPECT_FALSE(s.stops());
  s.observe(2.0);
  s.step();
  EXPECT_EQ(f.opt.lr(0), 1.0);
  s.observe(0.5);
  s.step();
  EXPECT_EQ(f.opt.lr(0), 0.5);
  EXPECT_EQ(f.opt.lr(1), 0.05);
  EXPECT_EQ(s.lr_at(1, 2), 0.05);
  s.step();  // epoch 3
  EXPECT_FALSE(s.stops());
  s.step();  // epoch 4: the factor is 0
  EXPECT_TRUE(s.stops());
  EXPECT_EQ(f.opt.lr(0), 0.5);  // the rates it had
  expect_error([&] { FactorLR(f.opt, nullptr); }, {"FactorLR", "no factor"});
}

TEST(FactorLR, StateRoundTripsAndReappliesWithTheObservedLoss) {
  FactorFixture f;
  FactorLR s(f.opt, factor);
  s.step();
  s.step();
  const TensorMap state = s.state_dict();
  FactorFixture g;
  FactorLR t(g.opt, factor);
  t.observe(0.25);
  t.load_state_dict(state);
  EXPECT_EQ(t.last_epoch(), 2);
  EXPECT_EQ(g.opt.lr(0), 0.5);
  EXPECT_EQ(g.opt.lr(1), 0.05);
}

}  // namespace
}  // namespace wick::test
