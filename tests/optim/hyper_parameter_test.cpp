// Hyper-parameters by name: what schedulers use to drive more than the lr.
#include <wick/optim/adam.h>
#include <wick/optim/sgd.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

TEST(HyperParameter, ReadAndWriteByName) {
  Variable a{zeros({2}), true}, b{zeros({2}), true};
  SGD sgd(std::vector<SGD::Group>{{{{"a", a}}, SGDOptions{.lr = 0.1, .momentum = 0.9}},
                                  {{{"b", b}}, SGDOptions{.lr = 0.2, .momentum = 0.5, .nesterov = true}}});
  EXPECT_STREQ(sgd.name(), "SGD");
  EXPECT_TRUE(sgd.has_hyper_parameter(0, "momentum"));
  EXPECT_FALSE(sgd.has_hyper_parameter(0, "beta1"));
  EXPECT_EQ(sgd.hyper_parameter(1, "momentum"), 0.5);
  EXPECT_EQ(sgd.hyper_parameter(0, "nesterov"), 0.0);
  EXPECT_EQ(sgd.hyper_parameter(1, "nesterov"), 1.0);
  sgd.set_hyper_parameter(0, "momentum", 0.7);
  sgd.set_hyper_parameter(0, "nesterov", 1);
  EXPECT_EQ(sgd.options(0).momentum, 0.7);
  EXPECT_TRUE(sgd.options(0).nesterov);
  EXPECT_EQ(sgd.options(1).momentum, 0.5);  // groups are separate
  // set_lr and the named form reach the same field.
  sgd.set_hyper_parameter(1, "lr", 0.3);
  EXPECT_EQ(sgd.lr(1), 0.3);

  AdamW adamw({{"a", a}});
  EXPECT_STREQ(adamw.name(), "AdamW");
  EXPECT_TRUE(adamw.has_hyper_parameter(0, "beta1"));
  EXPECT_FALSE(adamw.has_hyper_parameter(0, "momentum"));
  adamw.set_hyper_parameter(0, "beta1", 0.8);
  EXPECT_EQ(adamw.options(0).beta1, 0.8);

  expect_error([&] { sgd.hyper_parameter(0, "beta1"); }, {"SGD", "group 0", "no hyper-parameter 'beta1'"});
  expect_error([&] { sgd.set_hyper_parameter(0, "beta1", 0.5); }, {"SGD", "no hyper-parameter 'beta1'"});
  expect_error([&] { sgd.has_hyper_parameter(2, "lr"); }, {"SGD", "group 2 out of range (2 groups)"});
}

// PyTorch's param groups: what a group does not set is the optimizer's default (issue 13,
// item 15): an AdamW group without weight_decay gets 1e-2, not the struct's 0.
TEST(HyperParameter, GroupsInheritTheOptimizersDefaults) {
  Variable a{zeros({2}), true}, b{zeros({2}), true};
  AdamW adamw({{{{"a", a}}, {{"lr", 0.5}}}, {{{"b", b}}, {}}});
  EXPECT_EQ(adamw.options(0).lr, 0.5);
  EXPECT_EQ(adamw.options(0).weight_decay, 1e-2);
  EXPECT_EQ(adamw.options(1).lr, 1e-3);
  EXPECT_EQ(adamw.options(1).weight_decay, 1e-2);
  SGD sgd({{{{"a", a}}, {{"nesterov", 1}}}, {{{"b", b}}, {{"lr", 0.3}}}}, SGDOptions{.lr = 0.1, .momentum = 0.9});
  EXPECT_TRUE(sgd.options(0).nesterov);
  EXPECT_EQ(sgd.options(0).lr, 0.1);
  EXPECT_EQ(sgd.options(1).lr, 0.3);
  EXPECT_EQ(sgd.options(1).momentum, 0.9);
  expect_error([&] { SGD({{{{"a", a}}, {{"betas", 0.9}}}}, SGDOptions{}); },
               {"SGD", "'betas'", "not one of its hyper-parameters", "momentum"});
}

}  // namespace
}  // namespace wick::test
