#pragma once
// LayerSpec: a layer described by data (its type and numeric arguments, plus the named
// outputs and dependencies of StagedLayer), so that one process can describe a model and
// another build its part of it. The text form (encode/decode) is what travels.
//
//   {"Linear", {{"in_features", 1}, {"out_features", 512}}}
//   {"Linear", {{"in_features", 512}, {"out_features", 512}}, {"res_1"}, {}}  // consumes res_1
//
// Types and arguments (defaults in brackets): Linear(in_features, out_features, bias [1]),
// Conv2d(in_channels, out_channels, kernel_size, stride [1], padding [0], dilation [1],
// groups [1], bias [1]), MaxPool2d(kernel_size, stride [kernel_size], padding [0]),
// AvgPool2d(kernel_size, stride [kernel_size], padding [0]), BatchNorm1d(num_features),
// BatchNorm2d(num_features), Dropout(p [0.5]), Flatten(start_dim [1], end_dim [-1]),
// LeakyReLU(negative_slope [0.01]), ReLU, Sigmoid, Tanh, GELU, SiLU.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <wick/nn/staged_model.h>
#include <wick/tensor/generator.h>

namespace wick {

struct LayerSpec {
  std::string type;
  std::map<std::string, double> args;
  std::vector<std::string> dependencies;
  std::vector<std::string> outputs;
};

// Builds the layer (parameters initialised from `g`, or the default generator; `g` is not
// kept). Throws
// wick::Error naming the layer for an unknown type, a missing, unknown or out-of-range
// argument.
StagedLayer make_layer(const LayerSpec& spec, Generator* g = nullptr);
std::vector<StagedLayer> make_layers(const std::vector<LayerSpec>& specs, Generator* g = nullptr);

// One line per layer: "type arg=value ... deps=a,b outs=c" (wick/nn/spec_text.h). Decoding checks
// every field (names are [A-Za-z0-9_.-], at most 4096 layers). The optimizer's description
// is wick/optim/optimizer_spec.h.
std::string encode_layer_specs(const std::vector<LayerSpec>& specs);
std::vector<LayerSpec> decode_layer_specs(const std::string& text);

}  // namespace wick
