#pragma once
// Float64 references for reductions, computed with plain loops over values(), and the
// tolerances of a CUDA result against the CPU's: shared by the reduction table
// (tests/autograd/reduce_table_test.cpp) and the tests of the reductions' special rules.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {

using Fold = std::function<double(const std::vector<double>&)>;

inline uint64_t dims_mask(const Dims& dims, int64_t nd) {
  if (nd == 0) return 0;
  if (dims.empty()) return ~uint64_t{0} >> (64 - nd);
  uint64_t m = 0;
  for (int64_t d : dims) m |= uint64_t{1} << (d < 0 ? d + nd : d);
  return m;
}

// The shape of a reduction's result.
inline Shape reduced_shape(const Shape& shape, const Dims& dims, bool keepdim) {
  const uint64_t m = dims_mask(dims, static_cast<int64_t>(shape.size()));
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!((m >> d) & 1)) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// For every output (row-major), `fold` of its input values in row-major order.
inline std::vector<double> ref_reduce(const Tensor& x, const Dims& dims, const Fold& fold) {
  const Shape& shape = x.shape();
  const int64_t nd = x.dim();
  const uint64_t m = dims_mask(dims, nd);
  Shape kept = shape;
  for (int64_t d = 0; d < nd; ++d)
    if ((m >> d) & 1) kept[d] = 1;
  std::vector<std::vector<double>> groups(static_cast<size_t>(numel_of(kept)));
  std::vector<int64_t> idx(nd, 0);
  for (double value : values(x)) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d) o = o * kept[d] + (((m >> d) & 1) ? 0 : idx[d]);
    groups[o].push_back(value);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<double> out;
  for (const auto& g : groups) out.push_back(fold(g));
  return out;
}

inline double ref_sum(const std::vector<double>& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
inline double ref_prod(const std::vector<double>& g) {
  double s = 1;
  for (double v : g) s *= v;
  return s;
}
inline double ref_mean(const std::vector<double>& g) { return ref_sum(g) / static_cast<double>(g.size()); }
inline Fold ref_var(double correction) {
  return [correction](const std::vector<double>& g) {
    const double m = ref_mean(g);
    double s = 0;
    for (double v : g) s += (v - m) * (v - m);
    return s / std::max(0.0, static_cast<double>(g.size()) - correction);
  };
}
inline Fold ref_norm(double p) {
  return [p](const std::vector<double>& g) {
    double s = 0;
    for (double v : g) {
      if (std::isinf(p)) s = std::max(s, std::fabs(v));
      else if (p == 0) s += v != 0;
      else s += std::pow(std::fabs(v), p);
    }
    return std::isinf(p) || p == 0 ? s : std::pow(s, 1.0 / p);
  };
}
inline double ref_logsumexp(const std::vector<double>& g) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (double v : g) m = std::max(m, v);
  if (!std::isfinite(m)) return m;
  for (double v : g) s += std::exp(v - m);
  return m + std::log(s);
}
inline double ref_all(const std::vector<double>& g) {
  return std::all_of(g.begin(), g.end(), [](double v) { return v != 0; });
}
inline double ref_any(const std::vector<double>& g) {
  return std::any_of(g.begin(), g.end(), [](double v) { return v != 0; });
}
// Index of the first max (kMax) or min; the first NaN wins.
template <bool kMax>
double ref_arg(const std::vector<double>& g) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) return static_cast<double>(i);
    if (kMax ? g[i] > g[best] : g[i] < g[best]) best = i;
  }
  return static_cast<double>(best);
}
template <bool kMax>
double ref_extremum(const std::vector<double>& g) {
  return g[static_cast<size_t>(ref_arg<kMax>(g))];
}

// --- CUDA against the CPU -----------------------------------------------------------------
// The CPU accumulates floats in double, CUDA float32 in float (kernels/cuda/reduce.cu), so a
// float32 result folding n values of magnitude <= m may differ by the rounding of the float
// tree, bounded by (lane run + tree depth) * 2^-24 * n * m; 8 * 2^-24 * n * m (plus rtol
// 1e-5) still catches a dropped or doubled element (an error of about m). 16-bit results
// may differ by one unit in the last place (double and float sums can round to different
// neighbours).
struct Tol {
  double rtol, atol;
};

inline Tol fold_tol(DType t, int64_t n, double m) {
  const double nm = static_cast<double>(std::max<int64_t>(n, 1)) * m;
  switch (t) {
    case DType::Float64: return {1e-12, 1e-14 * nm};
    case DType::Float32: return {1e-5, 8 * 0x1p-24 * nm};
    case DType::Float16: return {2e-3, 1e-3};
    case DType::BFloat16: return {1.6e-2, 1e-2};
    default: return {0, 0};
  }
}

// Rows of four values with NaN and infinities in every arrangement a reduction meets: one
// NaN, only NaNs beside finite values, +inf, -inf, all -inf, inf beside inf, inf beside
// -inf, all kinds at once. A [8, 4] float64 tensor.
inline Tensor special_value_rows() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  return tensor<double>({1, nan, 3, 4,           nan, nan, 0, 1, inf, 1, 2, 3,    -inf, 1, 2, 3,
                         -inf, -inf, -inf, -inf, inf, inf, 1, 1, inf, -inf, 0, 0, -inf, nan, 2, inf},
                        {8, 4});
}

inline std::string dims_str(const Dims& d) {
  std::string s = "{";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "}";
}

// Every non-empty subset of the dims of an nd-dim tensor (the full one included).
inline std::vector<Dims> dim_subsets(int64_t nd) {
  std::vector<Dims> out;
  for (uint64_t mask = 1; mask < (uint64_t{1} << nd); ++mask) {
    Dims d;
    for (int64_t k = 0; k < nd; ++k)
      if ((mask >> k) & 1) d.push_back(k);
    out.push_back(d);
  }
  return out;
}

// How many values each output of reducing `dims` of shape s folds (a 0-d tensor's one "dim"
// folds its one value).
inline int64_t folded(const Shape& s, const Dims& dims) {
  if (dims.empty() || s.empty()) return numel_of(s);
  int64_t n = 1;
  for (int64_t d : dims) n *= s[d < 0 ? d + static_cast<int64_t>(s.size()) : d];
  return n;
}

}  // namespace wick::test
