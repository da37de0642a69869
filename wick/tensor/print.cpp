// PyTorch-style printing: nested brackets, values aligned to one width, long dims elided
// with "..." (first and last 3 entries once a tensor has more than 1000 elements), then
// the shape, the dtype and (for non-CPU tensors) the device.
#include <wick/tensor/tensor.h>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace wick {

namespace {

constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdge = 3;

struct Format {
  bool floating = false;
  bool integral_values = true;  // every finite float is a whole number: print "2."
  bool scientific = false;
  int width = 1;
};

std::string format_value(double v, const Format& f, DType t) {
  char buf[64];
  if (t == DType::Bool) return v != 0 ? "True" : "False";
  if (!f.floating) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else if (std::isnan(v)) {
    return "nan";
  } else if (std::isinf(v)) {
    return v > 0 ? "inf" : "-inf";
  } else if (f.scientific) {
    std::snprintf(buf, sizeof buf, "%.4e", v);
  } else if (f.integral_values) {
    std::snprintf(buf, sizeof buf, "%.0f.", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", v);
  }
  return buf;
}

// Picks the format from the values that will be shown.
Format choose_format(const std::vector<double>& shown, DType t) {
  Format f;
  f.floating = is_floating(t);
  double max_abs = 0, min_abs = INFINITY;
  for (double v : shown) {
    if (!std::isfinite(v)) continue;
    if (v != std::nearbyint(v)) f.integral_values = false;
    double a = std::fabs(v);
    max_abs = std::max(max_abs, a);
    if (a > 0) min_abs = std::min(min_abs, a);
  }
  if (f.floating && (max_abs >= 1e8 || (min_abs < 1e-4 && !f.integral_values) ||
                     (max_abs / std::max(min_abs, 1e-300) > 1000 && !f.integral_values)))
    f.scientific = true;
  for (double v : shown) f.width = std::max<int>(f.width, static_cast<int>(format_value(v, f, t).size()));
  return f;
}

// Indices shown along a dim of size n.
std::vector<int64_t> shown_indices(int64_t n, bool summarize) {
  std::vector<int64_t> idx;
  if (summarize && n > 2 * kEdge) {
    for (int64_t i = 0; i < kEdge; ++i) idx.push_back(i);
    idx.push_back(-1);  // the elision mark
    for (int64_t i = n - kEdge; i < n; ++i) idx.push_back(i);
  } else {
    for (int64_t i = 0; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

void collect(const Tensor& t, const std::vector<double>& all, const Shape& strides, int64_t base, int64_t d,
             bool summarize, std::vector<double>& shown) {
  if (d == t.dim()) {
    shown.push_back(all[base]);
    return;
  }
  for (int64_t i : shown_indices(t.shape()[d], summarize))
    if (i >= 0) collect(t, all, strides, base + i * strides[d], d + 1, summarize, shown);
}

void emit(std::ostringstream& os, const Tensor& t, const std::vector<double>& all, const Shape& strides, int64_t base,
          int64_t d, bool summarize, const Format& f, int indent) {
  if (d == t.dim()) {
    std::string s = format_value(all[base], f, t.dtype());
    os << std::string(f.width - s.size(), ' ') << s;
    return;
  }
  os << '[';
  auto idx = shown_indices(t.shape()[d], summarize);
  bool last_dim = d == t.dim() - 1;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (k > 0) {
      os << ',';
      if (last_dim) os << ' ';
      else os << std::string(t.dim() - d - 1, '\n') << std::string(indent + 1, ' ');
    }
    if (idx[k] < 0) os << "...";
    else emit(os, t, all, strides, base + idx[k] * strides[d], d + 1, summarize, f, indent + 1);
  }
  os << ']';
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  // Printing happens rarely and on small tensors: read everything once as double.
  std::vector<double> all = to_vector<double>();
  Shape strides = contiguous_strides(shape_);
  bool summarize = numel_ > kThreshold;
  std::vector<double> shown;
  if (numel_ > 0) collect(*this, all, strides, 0, 0, summarize, shown);
  Format f = choose_format(shown, dtype_);
  std::ostringstream os;
  os << "tensor(";
  if (numel_ == 0) {
    os << "[]";
  } else if (dim() == 0) {
    os << format_value(all[0], f, dtype_);
  } else {
    emit(os, *this, all, strides, 0, 0, summarize, f, 7);
  }
  os << ", shape=" << shape_str(shape_) << ", dtype=" << dtype_name(dtype_);
  if (!device().is_cpu()) os << ", device='" << device() << "'";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace wick
