#include <wick/tensor/device.h>
#include <wick/tensor/error.h>

#include <charconv>

namespace wick {

Device::Device(const std::string& spec) {
  if (spec == "cpu") {
    *this = cpu();
    return;
  }
  if (spec == "cuda") {
    *this = cuda(0);
    return;
  }
  if (spec.rfind("cuda:", 0) == 0) {
    int idx = -1;
    const char* first = spec.data() + 5;
    const char* last = spec.data() + spec.size();
    auto [ptr, ec] = std::from_chars(first, last, idx);
    if (ec == std::errc() && ptr == last && first != last && idx >= 0) {
      *this = cuda(idx);
      return;
    }
  }
  detail::throw_error("Device: cannot parse \"", spec, "\" (expected \"cpu\", \"cuda\" or \"cuda:N\")");
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace wick
