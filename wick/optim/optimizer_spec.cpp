#include <wick/optim/optimizer_spec.h>

#include <sstream>

#include <wick/nn/spec_text.h>
#include <wick/optim/adagrad.h>
#include <wick/optim/adam.h>
#include <wick/optim/rmsprop.h>
#include <wick/optim/sgd.h>

namespace wick {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSpec& spec, NamedParameters params) {
  std::unique_ptr<Optimizer> opt;
  if (spec.type == "SGD") opt = std::make_unique<SGD>(std::move(params));
  else if (spec.type == "Adam") opt = std::make_unique<Adam>(std::move(params));
  else if (spec.type == "AdamW") opt = std::make_unique<AdamW>(std::move(params));
  else if (spec.type == "RMSprop") opt = std::make_unique<RMSprop>(std::move(params));
  else if (spec.type == "Adagrad") opt = std::make_unique<Adagrad>(std::move(params));
  else
    throw Error("make_optimizer: unknown optimizer '" + spec.type + "' (known: SGD, Adam, AdamW, RMSprop, Adagrad)");
  for (const auto& [name, value] : spec.hyper_parameters)
    for (size_t g = 0; g < opt->num_groups(); ++g) opt->set_hyper_parameter(g, name, value);
  return opt;
}

std::string encode_optimizer_spec(const OptimizerSpec& spec) {
  WICK_CHECK(is_spec_name(spec.type), "encode_optimizer_spec: '", spec.type, "' is not an optimizer type");
  std::string out = spec.type;
  for (const auto& [key, value] : spec.hyper_parameters) out += " " + key + "=" + spec_number_text(value);
  return out;
}

OptimizerSpec decode_optimizer_spec(const std::string& text) {
  std::stringstream words(text);
  OptimizerSpec s;
  words >> s.type;
  WICK_CHECK(is_spec_name(s.type), "decode_optimizer_spec: '", s.type, "' is not an optimizer type");
  for (std::string item; words >> item;) s.hyper_parameters.insert(spec_key_value(item, "decode_optimizer_spec"));
  return s;
}

}  // namespace wick
