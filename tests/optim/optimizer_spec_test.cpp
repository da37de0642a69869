// OptimizerSpec: an optimizer described by data, its text form, and the optimizer built from it.
#include <gtest/gtest.h>

#include <wick/nn/layer_spec.h>
#include <wick/optim/optimizer_spec.h>
#include <wick/wick.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

TEST(OptimizerSpec, TextRoundTripKeepsEveryDigit) {
  OptimizerSpec o{"AdamW", {{"lr", 3e-3}, {"weight_decay", 0.1 + 0.2}}};
  OptimizerSpec back = decode_optimizer_spec(encode_optimizer_spec(o));
  EXPECT_EQ(back.type, "AdamW");
  EXPECT_EQ(back.hyper_parameters, o.hyper_parameters);
  expect_error([] { make_optimizer({"Lion"}, {}); }, {"unknown optimizer 'Lion'"});
  expect_error([] { decode_optimizer_spec("SGD lr=nan"); }, {"'nan' is not a number"});
  expect_error([] { decode_optimizer_spec("SGD lr"); }, {"decode_optimizer_spec", "expected key=value"});
  expect_error([] { decode_optimizer_spec("S$GD"); }, {"not an optimizer type"});
  expect_error([] { encode_optimizer_spec({"", {}}); }, {"encode_optimizer_spec"});
}

TEST(OptimizerSpec, OptimizersTakeTheirHyperParametersByName) {
  Generator g(2);
  StagedLayer l = make_layer({"Linear", {{"in_features", 2}, {"out_features", 2}}}, &g);
  auto sgd = make_optimizer({"SGD", {{"lr", 0.5}, {"momentum", 0.9}}}, l.module->named_parameters());
  EXPECT_EQ(sgd->lr(0), 0.5);
  EXPECT_EQ(sgd->hyper_parameter(0, "momentum"), 0.9);
  EXPECT_STREQ(make_optimizer({"Adam"}, l.module->named_parameters())->name(), "Adam");
  expect_error([&] { make_optimizer({"SGD", {{"beta1", 0.9}}}, l.module->named_parameters()); }, {"beta1"});
}

}  // namespace
}  // namespace wick
