#pragma once
// What the sort family's tests share: inputs with few distinct values (so rows have many
// ties) plus, for floating dtypes, NaN, infinities and both signed zeros; the rows of a
// row-major shape along a dim; and the reference order (std::stable_sort, NaN largest).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <wick/tensor/shape.h>
#include <wick/tensor/tensor.h>

namespace wick::test {

inline Tensor random_with_ties(const Shape& shape, DType dtype, uint64_t seed) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> pool = {-3, -1.5, 0, 1, 2, 2.5, 7};
  if (dtype == DType::Bool) pool = {0, 1};
  else if (dtype == DType::UInt8) pool = {0, 1, 2, 5, 200};
  else if (!is_floating(dtype)) pool = {-3, -1, 0, 1, 2, 7, 100000};
  else pool.insert(pool.end(), {nan, nan, inf, -inf, -0.0});
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (double& x : v) x = pool[pick(rng)];
  return tensor<double>(v, shape).to(dtype);
}

// For each row along dim d of a row-major `shape` (0-d: one row of one), the flat
// positions of its elements in order; rows in the row-major order of the other dims.
inline std::vector<std::vector<int64_t>> rows_along(const Shape& shape, int64_t d) {
  const Shape s = shape.empty() ? Shape{1} : shape;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < static_cast<int64_t>(s.size()); ++k) {
    if (k < d) outer *= s[k];
    if (k > d) inner *= s[k];
  }
  std::vector<std::vector<int64_t>> rows;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> row;
      for (int64_t k = 0; k < s[d]; ++k) row.push_back((o * s[d] + k) * inner + i);
      rows.push_back(row);
    }
  return rows;
}

inline std::vector<double> row_values(const std::vector<double>& all, const std::vector<int64_t>& positions) {
  std::vector<double> r;
  for (int64_t p : positions) r.push_back(all[p]);
  return r;
}

inline bool ref_before(double a, double b, bool descending) {
  if (std::isnan(a) || std::isnan(b)) return descending ? std::isnan(a) && !std::isnan(b) : std::isnan(b) && !std::isnan(a);
  return descending ? a > b : a < b;
}

// The positions 0..n-1 of `row` in stable sorted order.
inline std::vector<int64_t> ref_order(const std::vector<double>& row, bool descending) {
  std::vector<int64_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ref_before(row[a], row[b], descending); });
  return order;
}

}  // namespace wick::test
