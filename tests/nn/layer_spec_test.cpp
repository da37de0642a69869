// LayerSpec: layers described by data, their text form, and
// the errors for bad descriptions.
#include <gtest/gtest.h>

#include <wick/nn/layer_spec.h>
#include <wick/tensor/factories.h>

#include "tests/support/reference.h"

namespace wick {
namespace {

using test::expect_error;

std::vector<LayerSpec> cnn_specs() {
  return {{"Conv2d", {{"in_channels", 1}, {"out_channels", 4}, {"kernel_size", 3}, {"padding", 1}}},
          {"BatchNorm2d", {{"num_features", 4}}},
          {"ReLU", {}, {}, {"skip"}},
          {"MaxPool2d", {{"kernel_size", 2}}},
          {"Flatten"},
          {"Dropout", {{"p", 0.25}}},
          {"Linear", {{"in_features", 4 * 14 * 14}, {"out_features", 10}, {"bias", 0}}},
          {"LeakyReLU", {{"negative_slope", 0.1}}},
          {"Sigmoid"}, {"Tanh"}, {"GELU"}, {"SiLU"},
          {"AvgPool2d", {{"kernel_size", 2}, {"stride", 1}}},
          {"BatchNorm1d", {{"num_features", 3}}}};
}

TEST(LayerSpec, BuildsEachTypeWithItsArguments) {
  Generator g(1);
  std::vector<StagedLayer> layers = make_layers(cnn_specs(), &g);
  ASSERT_EQ(layers.size(), 14u);
  EXPECT_STREQ(layers[0].module->type_name(), "Conv2d");
  EXPECT_EQ(layers[0].module->parameters()[0].shape(), (Shape{4, 1, 3, 3}));
  EXPECT_EQ(layers[6].module->parameters().size(), 1u);  // bias=0
  EXPECT_EQ(layers[2].outputs, std::vector<std::string>{"skip"});
  // The CNN's first layers run on a [2, 1, 28, 28] batch.
  Variable h(zeros({2, 1, 28, 28}));
  for (size_t l = 0; l < 8; ++l) h = layers[l].module->forward(h);
  EXPECT_EQ(h.shape(), (Shape{2, 10}));
  // The same seed builds the same weights (how every rank of a pipeline agrees).
  Generator g2(1);
  EXPECT_EQ(make_layers(cnn_specs(), &g2)[0].module->parameters()[0].data().to_vector<double>(),
            layers[0].module->parameters()[0].data().to_vector<double>());
}

TEST(LayerSpec, TextRoundTrips) {
  std::vector<LayerSpec> specs = cnn_specs();
  specs[6].dependencies = {"a", "b.c"};
  specs[6].args["in_features"] = 0.1 + 0.2;  // a value that needs all 17 digits
  std::vector<LayerSpec> back = decode_layer_specs(encode_layer_specs(specs));
  ASSERT_EQ(back.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(back[i].type, specs[i].type);
    EXPECT_EQ(back[i].args, specs[i].args);
    EXPECT_EQ(back[i].dependencies, specs[i].dependencies);
    EXPECT_EQ(back[i].outputs, specs[i].outputs);
  }
}

TEST(LayerSpec, RefusesBadDescriptions) {
  expect_error([] { make_layer({"Linear", {{"in_features", 2}}}); }, {"Linear", "needs the argument 'out_features'"});
  expect_error([] { make_layer({"Linear", {{"in_features", 2}, {"out_features", 3}, {"colour", 1}}}); },
               {"Linear has no argument 'colour'"});
  expect_error([] { make_layer({"Linear", {{"in_features", 2.5}, {"out_features", 3}}}); },
               {"'in_features' must be a whole number >= 1, got 2.5"});
  expect_error([] { make_layer({"Linear", {{"in_features", -2}, {"out_features", 3}}}); }, {"in_features"});
  expect_error([] { make_layer({"Dropout", {{"p", 2}}}); }, {"Dropout's p must be in [0, 1]"});
  expect_error([] { make_layer({"Transformer"}); }, {"unknown layer type 'Transformer'", "known: Linear"});
  expect_error([] { make_layers({{"ReLU"}, {"Nope"}}); }, {"layer 1", "'Nope'"});
  expect_error([] { decode_layer_specs("Linear in_features=abc\n"); }, {"layer 0", "'abc' is not a number"});
  expect_error([] { decode_layer_specs("Linear in_features\n"); }, {"expected key=value"});
  expect_error([] { decode_layer_specs("ReLU deps=a,,b\n"); }, {"'' is not a name"});
  expect_error([] { decode_layer_specs("Re$LU\n"); }, {"not a layer type"});
}

}  // namespace
}  // namespace wick
