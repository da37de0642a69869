#pragma once
// wick::Error: the one exception type the library throws for misuse and bad input.
// Messages name the op, the shapes involved and the reason, e.g.
//   "add: shapes [2, 3] and [4] do not broadcast (dim -1: 3 vs 4)".
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

namespace wick {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
inline void append_all(std::ostringstream&) {}
template <class T, class... Rest>
void append_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}
template <class... Args>
[[noreturn]] void throw_error(const Args&... args) {
  std::ostringstream os;
  append_all(os, args...);
  throw Error(os.str());
}
}  // namespace detail

// strerror(errno), for messages about failed system calls.
inline std::string errno_text() { return std::strerror(errno); }

}  // namespace wick

// WICK_CHECK(cond, "op: ", "reason ", value...) throws wick::Error when cond is false.
#define WICK_CHECK(cond, ...)                         \
  do {                                                \
    if (!(cond)) ::wick::detail::throw_error(__VA_ARGS__); \
  } while (0)
