#pragma once
// OptimizerSpec: an optimizer described by data, so that one process can choose it and
// another build it over its own parameters (the pipeline's stages). Its text form is one
// line, "type key=value ..." (wick/nn/spec_text.h).
#include <map>
#include <memory>
#include <string>

#include <wick/optim/optimizer.h>

namespace wick {

// An optimizer by type ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad") and hyper-parameters
// by their options-struct names ("lr", "momentum", "weight_decay", ...).
struct OptimizerSpec {
  std::string type = "SGD";
  std::map<std::string, double> hyper_parameters;
};
std::unique_ptr<Optimizer> make_optimizer(const OptimizerSpec& spec, NamedParameters params);

std::string encode_optimizer_spec(const OptimizerSpec& spec);
// Checks every field; throws wick::Error naming the bad one.
OptimizerSpec decode_optimizer_spec(const std::string& text);

}  // namespace wick
