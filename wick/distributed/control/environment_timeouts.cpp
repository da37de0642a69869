#include <wick/distributed/control/environment_timeouts.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include <wick/tensor/error.h>

namespace wick::distributed {

Milliseconds timeout_from_environment(const char* variable, Milliseconds fallback) {
  return timeout_from_environment(variable, fallback,
                                  [](const char* name) -> const char* { return std::getenv(name); });
}

Milliseconds timeout_from_environment(const char* variable, Milliseconds fallback,
                                      const std::function<const char*(const char*)>& lookup) {
  const char* value = lookup(variable);
  if (value == nullptr || *value == '\0') return fallback;
  const std::string text(value);
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  const bool whole = end != text.c_str() && *end == '\0';
  // "inf" and 1e30 do not fit int64 milliseconds, and clocks add a timeout to now() in
  // nanoseconds: 1e8 s (over 3 years) is the most. A fraction of a millisecond rounds up, so
  // a positive timeout stays positive.
  WICK_CHECK(whole && seconds > 0 && seconds <= 1e8, variable, "='", text,
             "' is not a timeout: give a positive number of seconds, at most 1e8 (e.g. ", variable, "=30)");
  return Milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

}  // namespace wick::distributed
