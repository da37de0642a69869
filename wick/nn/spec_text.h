#pragma once
// The text form shared by layer and optimizer descriptions (wick/nn/layer_spec.h,
// wick/optim/optimizer_spec.h): names of [A-Za-z0-9_.-] (at most 128 characters) and
// "key=value" items whose values are finite numbers written with 17 significant digits, so
// that every double survives the round trip.
#include <string>
#include <utility>

namespace wick {

bool is_spec_name(const std::string& s);
// "key=value" with a checked name and number; `where` starts the error messages.
std::pair<std::string, double> spec_key_value(const std::string& item, const std::string& where);
std::string spec_number_text(double v);

}  // namespace wick
