// The sort family (wick/tensor/sort.h) against float64 references computed here: rows read with
// values(), ordered by std::stable_sort with NaN as the largest key, and plain loops for the
// selections, over every dtype, layout, dim and direction, with ties, NaN, infinities,
// signed zeros, 0-d and empty shapes, and the refusals.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tests/support/dtype_sets.h"
#include "tests/support/reference.h"
#include "tests/support/sort_reference.h"

namespace wick::test {
namespace {


const std::vector<Shape> kShapes = {{7}, {3, 5}, {2, 3, 4}, {1, 1}, {4, 1}, {}, {0}, {3, 0}, {0, 4}};

int64_t wrapped(int64_t dim, const Shape& shape) {
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(shape.size()));
  return dim < 0 ? dim + n : dim;
}

std::vector<int64_t> dims_of(const Shape& shape) {
  std::vector<int64_t> dims = {-1};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) dims.push_back(d);
  return dims;
}

// The shape a selection along d leaves.
Shape selected_shape(const Shape& shape, int64_t d, bool keepdim) {
  if (shape.empty()) return {};
  Shape out = shape;
  if (keepdim) out[d] = 1;
  else out.erase(out.begin() + d);
  return out;
}

TEST(Sort, MatchesStableReferenceOnEveryDtypeLayoutAndDim) {
  uint64_t seed = 1;
  for (DType t : kAllDTypes)
    for (const Shape& shape : kShapes)
      for (Layout layout : kAllLayouts) {
        if (shape.size() < 2 && layout == Layout::Transposed) continue;
        const Tensor x = with_layout(random_with_ties(shape, t, seed++), layout);
        const std::vector<double> xv = values(x);
        for (int64_t dim : dims_of(shape))
          for (bool descending : {false, true}) {
            const std::string what = std::string(dtype_name(t)) + " " + shape_str(shape) + " " + layout_name(layout) +
                                     " dim " + std::to_string(dim) + (descending ? " descending" : " ascending");
            auto [v, i] = sort(x, dim, descending);
            std::vector<double> ev(xv.size()), ei(xv.size());
            for (const auto& row : rows_along(shape, wrapped(dim, shape))) {
              const std::vector<int64_t> order = ref_order(row_values(xv, row), descending);
              for (size_t k = 0; k < row.size(); ++k) {
                ev[row[k]] = xv[row[order[k]]];
                ei[row[k]] = static_cast<double>(order[k]);
              }
            }
            EXPECT_TRUE(matches(v, shape, t, ev, 0, 0)) << what;
            EXPECT_TRUE(matches(i, shape, DType::Int64, ei)) << what;
            EXPECT_TRUE(all_close(values(argsort(x, dim, descending)), ei, 0, 0)) << what;
          }
      }
}

TEST(Sort, NaNSignedZerosTiesAndEdges) {
  const Tensor x = tensor<double>({2, kNaN, -0.0, 1, kNaN, 0.0, -kInf, 1});
  EXPECT_TRUE(matches(sort(x).second, {8}, DType::Int64, {6, 2, 5, 3, 7, 0, 1, 4}));
  EXPECT_TRUE(matches(sort(x, 0, true).second, {8}, DType::Int64, {1, 4, 0, 3, 7, 2, 5, 6}));
  // -0.0 and 0.0 are equal keys: they keep their order and their signs.
  const std::vector<double> z = values(sort(tensor<double>({0.0, -0.0, 0.0, -0.0})).first);
  EXPECT_EQ(std::vector<bool>({std::signbit(z[0]), std::signbit(z[1]), std::signbit(z[2]), std::signbit(z[3])}),
            std::vector<bool>({false, true, false, true}));
  EXPECT_TRUE(matches(sort(tensor<double>({0.0, -0.0, 0.0, -0.0}), -1, true).second, {4}, DType::Int64, {0, 1, 2, 3}));
  // 16-bit NaN and bool.
  EXPECT_TRUE(matches(sort(x.to(DType::Float16), 0, true).second, {8}, DType::Int64, {1, 4, 0, 3, 7, 2, 5, 6}));
  EXPECT_TRUE(matches(sort(tensor<bool>({true, false, true, false})).second, {4}, DType::Int64, {1, 3, 0, 2}));
  // 0-d: the value and index 0, for dim 0 and -1 only.
  auto [v0, i0] = sort(full({}, 3.5, DType::Float32), 0, true);
  EXPECT_TRUE(matches(v0, {}, DType::Float32, {3.5}));
  EXPECT_TRUE(matches(i0, {}, DType::Int64, {0}));
  expect_error([] { sort(full({}, 1.0), 1); }, {"sort", "dim 1", "out of range"});
  expect_error([] { sort(zeros({2, 3}), 2); }, {"sort", "dim 2"});
  expect_error([] { argsort(zeros({2, 3}), -3); }, {"sort", "dim -3"});
  // Rows longer than the CPU kernel's grain, and many short rows.
  const Tensor big = random_with_ties({3, 40000}, DType::Float32, 7);
  const std::vector<double> bv = values(big);
  auto [bvals, bidx] = sort(big, 1, true);
  std::vector<double> ei;
  for (const auto& row : rows_along({3, 40000}, 1))
    for (int64_t k : ref_order(row_values(bv, row), true)) ei.push_back(static_cast<double>(k));
  EXPECT_TRUE(all_close(values(bidx), ei, 0, 0));
}

TEST(Topk, LargestAndSmallestFirstKOfTheStableOrder) {
  uint64_t seed = 100;
  for (DType t : kNumericTypes)
    for (const Shape& shape : {Shape{9}, Shape{4, 6}, Shape{2, 5, 3}, Shape{}, Shape{0, 3}}) {
      const Tensor x = with_layout(random_with_ties(shape, t, seed++), shape.size() > 1 ? Layout::Transposed : Layout::Offset);
      const std::vector<double> xv = values(x);
      for (int64_t dim : dims_of(shape)) {
        const int64_t d = wrapped(dim, shape);
        const int64_t n = shape.empty() ? 1 : shape[d];
        for (int64_t k : {int64_t{0}, std::min<int64_t>(1, n), n / 2, n})
          for (bool largest : {true, false}) {
            auto [v, i] = topk(x, k, dim, largest);
            Shape out = shape;
            if (!out.empty()) out[d] = k;
            // Reference laid out like the result: rows of the output shape.
            std::vector<double> ev(static_cast<size_t>(numel_of(out))), ei(ev.size());
            const auto in_rows = rows_along(shape, d);
            const auto out_rows = rows_along(out, d);
            for (size_t r = 0; r < in_rows.size() && !out_rows.empty(); ++r) {
              const std::vector<int64_t> order = ref_order(row_values(xv, in_rows[r]), largest);
              for (int64_t j = 0; j < static_cast<int64_t>(out_rows[r].size()); ++j) {
                ev[out_rows[r][j]] = xv[in_rows[r][order[j]]];
                ei[out_rows[r][j]] = static_cast<double>(order[j]);
              }
            }
            const std::string what = std::string(dtype_name(t)) + " " + shape_str(shape) + " dim " +
                                     std::to_string(dim) + " k " + std::to_string(k);
            EXPECT_TRUE(matches(v, out, t, ev, 0, 0)) << what;
            EXPECT_TRUE(matches(i, out, DType::Int64, ei)) << what;
          }
      }
    }
  expect_error([] { topk(zeros({2, 3}), 4); }, {"topk", "k = 4", "size 3", "[2, 3]"});
  expect_error([] { topk(zeros({2, 3}), -1); }, {"topk", "k = -1"});
  expect_error([] { topk(zeros({2, 3}), 1, 2); }, {"topk", "dim 2"});
  expect_error([] { topk(zeros({3}, DType::Bool), 1); }, {"topk", "bool"});
}

// The k-th (1-based) smallest of each row in the stable order, NaN largest.
TEST(Kthvalue, KthOfTheStableAscendingOrder) {
  uint64_t seed = 200;
  for (DType t : kNumericTypes)
    for (const Shape& shape : {Shape{9}, Shape{4, 6}, Shape{2, 5, 3}, Shape{}, Shape{0, 3}}) {
      const Tensor x = with_layout(random_with_ties(shape, t, seed++), Layout::Sliced);
      const std::vector<double> xv = values(x);
      for (int64_t dim : dims_of(shape)) {
        const int64_t d = wrapped(dim, shape);
        const int64_t n = shape.empty() ? 1 : shape[d];
        if (n == 0) {
          expect_error([&] { kthvalue(x, 1, dim); }, {"kthvalue", "size 0"});
          continue;
        }
        for (int64_t k : {int64_t{1}, (n + 1) / 2, n})
          for (bool keepdim : {false, true}) {
            std::vector<double> ev, ei;
            for (const auto& row : rows_along(shape, d)) {
              const int64_t pos = ref_order(row_values(xv, row), false)[k - 1];
              ev.push_back(xv[row[pos]]);
              ei.push_back(static_cast<double>(pos));
            }
            auto [v, i] = kthvalue(x, k, dim, keepdim);
            const std::string what = std::string(dtype_name(t)) + " " + shape_str(shape) + " dim " + std::to_string(dim);
            EXPECT_TRUE(matches(v, selected_shape(shape, d, keepdim), t, ev, 0, 0)) << what;
            EXPECT_TRUE(matches(i, selected_shape(shape, d, keepdim), DType::Int64, ei)) << what;
          }
      }
    }
  expect_error([] { kthvalue(zeros({2, 3}), 0); }, {"kthvalue", "k = 0", "1 <= k <= 3"});
  expect_error([] { kthvalue(zeros({2, 3}), 4, 1); }, {"kthvalue", "k = 4"});
  expect_error([] { kthvalue(zeros({2}, DType::Bool), 1); }, {"kthvalue", "bool"});
  EXPECT_TRUE(matches(kthvalue(ones({}, DType::Bool), 1).first, {}, DType::Bool, {1}));  // 0-d: PyTorch takes it
}

// median: the first NaN of a row with any, else the (n - 1) / 2-th of the stable order;
// nanmedian: the (m - 1) / 2-th of the m numbers (0 when there are none).
TEST(Median, LowerMedianNaNRulesAndIndices) {
  uint64_t seed = 300;
  for (DType t : kNumericTypes)
    for (const Shape& shape : {Shape{8}, Shape{5, 4}, Shape{3, 2, 5}, Shape{}, Shape{2, 1}}) {
      const Tensor x = with_layout(random_with_ties(shape, t, seed++), Layout::Offset);
      const std::vector<double> xv = values(x);
      for (bool ignore_nan : {false, true}) {
        for (int64_t dim : dims_of(shape)) {
          const int64_t d = wrapped(dim, shape);
          for (bool keepdim : {false, true}) {
            std::vector<double> ev, ei;
            for (const auto& row : rows_along(shape, d)) {
              const std::vector<double> rv = row_values(xv, row);
              const auto first_nan = std::find_if(rv.begin(), rv.end(), [](double v) { return std::isnan(v); });
              const int64_t nans = std::count_if(rv.begin(), rv.end(), [](double v) { return std::isnan(v); });
              int64_t pos;
              if (!ignore_nan && first_nan != rv.end()) {
                pos = first_nan - rv.begin();
              } else {
                const int64_t m = static_cast<int64_t>(rv.size()) - nans;
                pos = ref_order(rv, false)[m > 0 ? (m - 1) / 2 : 0];
              }
              ev.push_back(rv[pos]);
              ei.push_back(static_cast<double>(pos));
            }
            auto [v, i] = ignore_nan ? nanmedian(x, dim, keepdim) : median(x, dim, keepdim);
            const std::string what = std::string(ignore_nan ? "nanmedian " : "median ") + dtype_name(t) + " " +
                                     shape_str(shape) + " dim " + std::to_string(dim);
            EXPECT_TRUE(matches(v, selected_shape(shape, d, keepdim), t, ev, 0, 0)) << what;
            EXPECT_TRUE(matches(i, selected_shape(shape, d, keepdim), DType::Int64, ei)) << what;
          }
        }
        // Of all elements.
        std::vector<double> sorted = xv;
        std::stable_sort(sorted.begin(), sorted.end(), [](double a, double b) { return ref_before(a, b, false); });
        const int64_t nans = std::count_if(xv.begin(), xv.end(), [](double v) { return std::isnan(v); });
        const int64_t n = static_cast<int64_t>(xv.size());
        const double expected = !ignore_nan ? (nans > 0 ? kNaN : sorted[(n - 1) / 2])
                                            : sorted[n - nans > 0 ? (n - nans - 1) / 2 : 0];
        EXPECT_TRUE(matches(ignore_nan ? nanmedian(x) : median(x), {}, t, {expected}, 0, 0))
            << dtype_name(t) << " " << shape_str(shape);
      }
    }
  const Tensor all_nan = tensor<double>({kNaN, kNaN, kNaN}, {1, 3});
  EXPECT_TRUE(matches(nanmedian(all_nan, 1).second, {1}, DType::Int64, {0}));
  // Of no elements: NaN converted to the dtype, as PyTorch's.
  EXPECT_TRUE(matches(median(zeros({0})), {}, DType::Float32, {kNaN}));
  EXPECT_TRUE(matches(nanmedian(zeros({2, 0}, DType::Float64)), {}, DType::Float64, {kNaN}));
  EXPECT_TRUE(matches(median(zeros({0}, DType::Int32)), {}, DType::Int32, {-2147483648.0}));
  EXPECT_TRUE(matches(median(zeros({0}, DType::UInt8)), {}, DType::UInt8, {0}));
  EXPECT_TRUE(matches(median(zeros({0}, DType::Bool)), {}, DType::Bool, {1}));
  expect_error([] { nanmedian(zeros({2, 0}), 1); }, {"nanmedian", "size 0"});
  expect_error([] { median(zeros({2}, DType::Bool)); }, {"median", "bool"});
}

// The most frequent value (the smallest among equally frequent), the index of its last
// occurrence; each NaN counts once; an all-NaN row gives its first NaN.
TEST(Mode, MostFrequentSmallestLastIndex) {
  uint64_t seed = 400;
  for (DType t : kAllDTypes)
    for (const Shape& shape : {Shape{9}, Shape{4, 7}, Shape{3, 2, 5}, Shape{}, Shape{3, 1}}) {
      const Tensor x = with_layout(random_with_ties(shape, t, seed++), Layout::Sliced);
      const std::vector<double> xv = values(x);
      for (int64_t dim : dims_of(shape)) {
        const int64_t d = wrapped(dim, shape);
        for (bool keepdim : {false, true}) {
          std::vector<double> ev, ei;
          for (const auto& row : rows_along(shape, d)) {
            const std::vector<double> rv = row_values(xv, row);
            int64_t best = -1, best_count = 0;
            for (int64_t j = 0; j < static_cast<int64_t>(rv.size()); ++j) {
              if (std::isnan(rv[j])) continue;
              int64_t count = 0, last = j;
              for (int64_t k = 0; k < static_cast<int64_t>(rv.size()); ++k)
                if (rv[k] == rv[j]) ++count, last = k;
              if (count > best_count || (count == best_count && rv[j] < rv[best])) best = last, best_count = count;
            }
            if (best < 0) best = 0;  // every element is NaN
            ev.push_back(rv[best]);
            ei.push_back(static_cast<double>(best));
          }
          auto [v, i] = mode(x, dim, keepdim);
          const std::string what = std::string(dtype_name(t)) + " " + shape_str(shape) + " dim " + std::to_string(dim);
          EXPECT_TRUE(matches(v, selected_shape(shape, d, keepdim), t, ev, 0, 0)) << what;
          EXPECT_TRUE(matches(i, selected_shape(shape, d, keepdim), DType::Int64, ei)) << what;
        }
      }
    }
  auto [v, i] = mode(tensor<double>({3, 1, 3, kNaN, 1, kNaN, 2}));
  EXPECT_TRUE(matches(v, {}, DType::Float64, {1}));
  EXPECT_TRUE(matches(i, {}, DType::Int64, {4}));
  expect_error([] { mode(zeros({3, 0}), 1); }, {"mode", "size 0"});
}

// Distinct rows of m [n, c] in lexicographic order (NaN largest; rows with a NaN never
// equal), each with the rows equal to it.
struct RefUnique {
  std::vector<std::vector<double>> rows;
  std::vector<int64_t> inverse, counts;
};

RefUnique ref_unique(const std::vector<std::vector<double>>& m, bool sorted) {
  std::vector<int64_t> order(m.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      for (size_t c = 0; c < m[a].size(); ++c) {
        if (ref_before(m[a][c], m[b][c], false)) return true;
        if (ref_before(m[b][c], m[a][c], false)) return false;
      }
      return false;
    });
  RefUnique r;
  r.inverse.resize(m.size());
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || m[order[k]] != m[order[k - 1]]) {  // vector == is elementwise ==: NaN never equal
      r.rows.push_back(m[order[k]]);
      r.counts.push_back(0);
    }
    r.inverse[order[k]] = static_cast<int64_t>(r.rows.size()) - 1;
    ++r.counts.back();
  }
  return r;
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) { return std::vector<double>(v.begin(), v.end()); }

TEST(Unique, FlattenedAndAlongADimWithInverseAndCounts) {
  uint64_t seed = 500;
  for (DType t : kAllDTypes)
    for (const Shape& shape : {Shape{11}, Shape{4, 3}, Shape{2, 3, 2}, Shape{}, Shape{0}, Shape{2, 0}})
      for (bool sorted : {true, false}) {
        const Tensor x = with_layout(random_with_ties(shape, t, seed++), Layout::Offset);
        const std::vector<double> xv = values(x);
        const std::string what = std::string(sorted ? "unique " : "unique_consecutive ") + dtype_name(t) + " " +
                                 shape_str(shape);
        auto run = [&](std::optional<int64_t> dim) {
          return sorted ? unique(x, true, true, dim) : unique_consecutive(x, true, true, dim);
        };
        // Flattened: each element a row of one.
        std::vector<std::vector<double>> elements;
        for (double v : xv) elements.push_back({v});
        RefUnique ref = ref_unique(elements, sorted);
        std::vector<double> ev;
        for (const auto& row : ref.rows) ev.push_back(row[0]);
        UniqueResult r = run(std::nullopt);
        EXPECT_TRUE(matches(r.values, {static_cast<int64_t>(ev.size())}, t, ev, 0, 0)) << what;
        EXPECT_TRUE(matches(r.inverse, shape, DType::Int64, as_doubles(ref.inverse))) << what;
        EXPECT_TRUE(matches(r.counts, {static_cast<int64_t>(ev.size())}, DType::Int64, as_doubles(ref.counts))) << what;
        // Along each dim: slices (in row-major order of the other dims) as rows.
        for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
          int64_t other = 1;
          for (int64_t k = 0; k < static_cast<int64_t>(shape.size()); ++k)
            if (k != d) other *= shape[k];
          if (other == 0 && shape[d] > 0) {
            expect_error([&] { run(d); }, {sorted ? "unique" : "unique_consecutive", "empty"});
            continue;
          }
          std::vector<std::vector<double>> slices(static_cast<size_t>(shape[d]));
          std::vector<int64_t> perm(shape.size());
          std::iota(perm.begin(), perm.end(), 0);
          perm.erase(perm.begin() + d);
          perm.insert(perm.begin(), d);
          const std::vector<double> mv = values(x.permute(perm));
          for (int64_t s = 0; s < shape[d]; ++s)
            slices[s] = std::vector<double>(mv.begin() + s * other, mv.begin() + (s + 1) * other);
          RefUnique rd = ref_unique(slices, sorted);
          UniqueResult u = run(d);
          Shape vshape = shape;
          vshape[d] = static_cast<int64_t>(rd.rows.size());
          // The reference values: the input's slices at each group's first member, laid out as x.
          std::vector<int64_t> picks;
          for (size_t g = 0; g < rd.rows.size(); ++g)
            for (int64_t s = 0; s < shape[d]; ++s)
              if (rd.inverse[s] == static_cast<int64_t>(g)) {
                picks.push_back(s);
                break;
              }
          const Tensor expected = index_select(x, d, tensor<int64_t>(picks, {static_cast<int64_t>(picks.size())}));
          EXPECT_TRUE(matches(u.values, vshape, t, values(expected), 0, 0)) << what << " dim " << d;
          EXPECT_TRUE(matches(u.inverse, {shape[d]}, DType::Int64, as_doubles(rd.inverse))) << what << " dim " << d;
          EXPECT_TRUE(matches(u.counts, {vshape[d]}, DType::Int64, as_doubles(rd.counts))) << what << " dim " << d;
        }
      }
  // NaNs stay distinct; without the flags inverse and counts are not computed.
  UniqueResult r = unique(tensor<double>({kNaN, 1, kNaN, 1}));
  EXPECT_TRUE(matches(r.values, {3}, DType::Float64, {1, kNaN, kNaN}));
  EXPECT_FALSE(r.inverse.defined());
  EXPECT_FALSE(r.counts.defined());
  expect_error([] { unique(zeros({2, 3}), false, false, 2); }, {"unique", "dim 2"});
  expect_error([] { unique(zeros({}), false, false, 0); }, {"unique", "0-d"});
  // Along an empty dim PyTorch wants it to be the only empty dim ("Number of zero sized
  // dimensions is more than one"); flattened, any empty tensor is fine.
  for (bool sorted : {true, false}) {
    auto run = [&](const Tensor& x, std::optional<int64_t> dim) {
      return sorted ? unique(x, true, true, dim) : unique_consecutive(x, true, true, dim);
    };
    const char* op = sorted ? "unique" : "unique_consecutive";
    expect_error([&] { run(zeros({0, 0}), 0); }, {op, "[0, 0]", "several empty dims"});
    expect_error([&] { run(zeros({2, 0, 3, 0}), 3); }, {op, "dim 3", "several empty dims"});
    expect_error([&] { run(zeros({0, 0, 4}), -3); }, {op, "several empty dims"});
    EXPECT_EQ(run(zeros({0, 0}), std::nullopt).values.shape(), (Shape{0}));
    UniqueResult e = run(zeros({2, 0, 3}), 1);
    EXPECT_EQ(e.values.shape(), (Shape{2, 0, 3}));
    EXPECT_EQ(e.inverse.shape(), (Shape{0}));
  }
}

}  // namespace
}  // namespace wick::test
