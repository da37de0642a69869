#include <wick/nn/spec_text.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <wick/tensor/error.h>

namespace wick {

bool is_spec_name(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

std::pair<std::string, double> spec_key_value(const std::string& item, const std::string& where) {
  const size_t eq = item.find('=');
  WICK_CHECK(eq != std::string::npos, where, ": expected key=value, got '", item, "'");
  const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
  WICK_CHECK(is_spec_name(key), where, ": '", key, "' is not a name");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  WICK_CHECK(!text.empty() && *end == '\0' && std::isfinite(v), where, ": '", text, "' is not a number");
  return {key, v};
}

std::string spec_number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace wick
