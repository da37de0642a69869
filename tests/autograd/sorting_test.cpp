// The sort family on Variables (wick/autograd/sorting.h) and quantile / nanquantile: gradient
// cases (inputs drawn from a continuous range, so values are distinct), the Variable
// values equal to the Tensor ones, the gradients at ties and NaN, and quantile against a
// float64 loop reference with its refusals.
#include "tests/autograd/cases.h"

#include <cmath>
#include <limits>

#include <wick/autograd/sorting.h>

#include "tests/support/sort_reference.h"
#include "tests/support/reference.h"

WICK_GRADCHECK_CASES(sorting) {
  using namespace wick;
  using Q = QuantileInterpolation;
  return {
      {"sort", [](auto& v) { return sort(v[0], 1).first; }, {{3, 5}}},
      {"sort descending dim 0", [](auto& v) { return sort(v[0], 0, true).first; }, {{4, 3}}},
      {"topk", [](auto& v) { return topk(v[0], 2).first; }, {{3, 5}}},
      {"topk smallest dim 0", [](auto& v) { return topk(v[0], 3, 0, false).first; }, {{4, 2}}},
      {"kthvalue", [](auto& v) { return kthvalue(v[0], 2, 1).first; }, {{3, 4}}},
      {"kthvalue keepdim", [](auto& v) { return kthvalue(v[0], 3, 0, true).first; }, {{3, 4}}},
      {"median all", [](auto& v) { return median(v[0]); }, {{3, 4}}},
      {"nanmedian all", [](auto& v) { return nanmedian(v[0]); }, {{2, 3}}},
      {"median dim", [](auto& v) { return median(v[0], 0).first; }, {{5, 3}}},
      {"nanmedian dim keepdim", [](auto& v) { return nanmedian(v[0], 1, true).first; }, {{3, 4}}},
      {"mode", [](auto& v) { return mode(v[0], 1).first; }, {{3, 4}}},
      {"quantile linear", [](auto& v) { return quantile(v[0], 0.3, 1); }, {{3, 5}}},
      {"quantile q tensor keepdim",
       [](auto& v) { return quantile(v[0], tensor<double>({0.1, 0.5, 0.9}), 0, true); }, {{4, 3}}},
      {"quantile all midpoint", [](auto& v) { return quantile(v[0], 0.4, std::nullopt, false, Q::Midpoint); }, {{2, 3}}},
      {"quantile lower", [](auto& v) { return quantile(v[0], 0.6, 0, false, Q::Lower); }, {{4, 2}}},
      {"quantile higher", [](auto& v) { return quantile(v[0], 0.6, 0, false, Q::Higher); }, {{4, 2}}},
      {"nanquantile nearest", [](auto& v) { return nanquantile(v[0], 0.7, -1, false, Q::Nearest); }, {{3, 4}}},
      {"nanquantile linear", [](auto& v) { return nanquantile(v[0], tensor<double>({0.25, 0.8}), 1); }, {{2, 5}}},
  };
}

namespace wick::test {
namespace {


TEST(SortingVariables, ValuesAndIndicesEqualTheTensorOps) {
  const Tensor x = random_with_ties({4, 6}, DType::Float32, 3);
  const Variable v(x);
  auto same = [](const std::pair<Variable, Tensor>& a, const std::pair<Tensor, Tensor>& b) {
    return all_close(values(a.first.data()), values(b.first), 0, 0) && all_close(values(a.second), values(b.second), 0, 0);
  };
  EXPECT_TRUE(same(sort(v, 0, true), sort(x, 0, true)));
  EXPECT_TRUE(same(topk(v, 3, 1, false), topk(x, 3, 1, false)));
  EXPECT_TRUE(same(kthvalue(v, 4, 1, true), kthvalue(x, 4, 1, true)));
  EXPECT_TRUE(same(median(v, 0), median(x, 0)));
  EXPECT_TRUE(same(nanmedian(v, 1, true), nanmedian(x, 1, true)));
  EXPECT_TRUE(same(mode(v, 0), mode(x, 0)));
  EXPECT_TRUE(all_close(values(median(v).data()), values(median(x)), 0, 0));
  EXPECT_TRUE(all_close(values(nanmedian(v).data()), values(nanmedian(x)), 0, 0));
  // 0-d inputs.
  const Variable s(full({}, 2.5, DType::Float64), true);
  auto [sv, si] = kthvalue(s, 1);
  EXPECT_EQ(sv.dim(), 0);
  sv.backward();
  EXPECT_TRUE(matches(s.grad().data(), {}, DType::Float64, {1}));
}

// Ties: sort-like ops give the gradient to the returned index only; median() of all
// elements shares it among the elements equal to the result, or among the NaNs.
TEST(SortingVariables, GradientsAtTiesAndNaN) {
  Variable x(tensor<double>({3, 1, 3, 1, 2}), true);
  sum(topk(x, 2).first).backward();
  EXPECT_TRUE(matches(x.grad().data(), {5}, DType::Float64, {1, 0, 1, 0, 0}));
  Variable y(tensor<double>({2, 1, 2, 3}), true);
  median(y).backward();  // the lower median, 2, appears twice
  EXPECT_TRUE(matches(y.grad().data(), {4}, DType::Float64, {0.5, 0, 0.5, 0}));
  Variable z(tensor<double>({1, kNaN, 0, kNaN}), true);
  median(z).backward();
  EXPECT_TRUE(matches(z.grad().data(), {4}, DType::Float64, {0, 0.5, 0, 0.5}));
  Variable w(tensor<double>({1, kNaN, 0, 4}), true);
  nanmedian(w).backward();
  EXPECT_TRUE(matches(w.grad().data(), {4}, DType::Float64, {1, 0, 0, 0}));
  Variable m(tensor<double>({5, 1, 5, 1, 2}, {1, 5}), true);
  auto [mv, mi] = mode(m, 1);
  sum(mv).backward();  // 1 and 5 are equally frequent: 1, at its last index
  EXPECT_TRUE(matches(mi, {1}, DType::Int64, {3}));
  EXPECT_TRUE(matches(m.grad().data(), {1, 5}, DType::Float64, {0, 0, 0, 1, 0}));
}

double round_half_even_ref(double r) {
  const double f = std::floor(r);
  if (r - f != 0.5) return std::round(r);
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

// torch.lerp: from the nearer end, so each end is exact.
double lerp_ref(double lo, double hi, double w) { return w < 0.5 ? lo + w * (hi - lo) : hi - (hi - lo) * (1 - w); }

// The q-th quantile of one slice, by the definition in wick/autograd/sorting.h; a float32
// input's rank is q * (n - 1) rounded to float32.
double ref_quantile(std::vector<double> row, double q, QuantileInterpolation mode, bool ignore_nan, bool float32) {
  const bool has_nan = std::any_of(row.begin(), row.end(), [](double v) { return std::isnan(v); });
  if (has_nan && !ignore_nan) return kNaN;
  row.erase(std::remove_if(row.begin(), row.end(), [](double v) { return std::isnan(v); }), row.end());
  if (row.empty()) return kNaN;
  std::sort(row.begin(), row.end());
  const double r = float32 ? static_cast<double>(static_cast<float>(q) * static_cast<float>(row.size() - 1))
                           : q * static_cast<double>(row.size() - 1);
  const double lo = row[static_cast<size_t>(std::floor(r))], hi = row[static_cast<size_t>(std::ceil(r))];
  switch (mode) {
    case QuantileInterpolation::Lower: return lo;
    case QuantileInterpolation::Higher: return hi;
    case QuantileInterpolation::Nearest: return row[static_cast<size_t>(round_half_even_ref(r))];
    case QuantileInterpolation::Midpoint: return lerp_ref(lo, hi, 0.5);
    case QuantileInterpolation::Linear: return lerp_ref(lo, hi, r - std::floor(r));
  }
  return kNaN;
}

TEST(Quantile, MatchesTheLoopReference) {
  using Q = QuantileInterpolation;
  uint64_t seed = 10;
  const std::vector<double> qs = {0, 0.125, 0.25, 0.5, 0.7, 1};  // 0.125 * 4 = 0.5: nearest rounds half to even
  for (DType t : {DType::Float32, DType::Float64})
    for (const Shape& shape : {Shape{5}, Shape{3, 5}, Shape{2, 3, 4}, Shape{}, Shape{1, 9}})
      for (bool ignore_nan : {false, true}) {
        // Ties and NaN in some slices, continuous values in others.
        const Tensor x = with_layout(seed % 2 ? random_with_ties(shape, t, seed) : random(shape, t, seed),
                                     shape.size() > 1 ? Layout::Transposed : Layout::Offset);
        ++seed;
        const std::vector<double> xv = values(x);
        std::vector<std::optional<int64_t>> dims = {std::nullopt};
        for (int64_t d = 0; d < std::max<int64_t>(1, static_cast<int64_t>(shape.size())); ++d) dims.push_back(d);
        for (Q mode : {Q::Linear, Q::Lower, Q::Higher, Q::Midpoint, Q::Nearest})
          for (const auto& dim : dims)
            for (bool keepdim : {false, true}) {
              std::vector<std::vector<double>> slices;
              Shape out;
              if (dim && !shape.empty()) {
                for (const auto& row : rows_along(shape, *dim)) slices.push_back(row_values(xv, row));
                out = shape;
                if (keepdim) out[*dim] = 1;
                else out.erase(out.begin() + *dim);
              } else {
                slices.push_back(xv);
                if (keepdim) out = Shape(shape.size(), 1);
              }
              std::vector<double> expected;
              for (double q : qs)
                for (const auto& slice : slices)
                  expected.push_back(ref_quantile(slice, q, mode, ignore_nan, t == DType::Float32));
              Shape out_q = out;
              out_q.insert(out_q.begin(), static_cast<int64_t>(qs.size()));
              const Tensor qt = tensor<double>(qs).to(t);
              const Tensor got = ignore_nan ? nanquantile(x, qt, dim, keepdim, mode) : quantile(x, qt, dim, keepdim, mode);
              const std::string what = std::string(dtype_name(t)) + " " + shape_str(shape) + " mode " +
                                       std::to_string(static_cast<int>(mode)) + " dim " +
                                       (dim ? std::to_string(*dim) : "none") + (ignore_nan ? " nan" : "");
              EXPECT_TRUE(matches(got, out_q, t, expected)) << what;
              // A number q: no leading dim; the Variable form gives the same values.
              const Variable vx(x);
              const Tensor one = ignore_nan ? nanquantile(vx, 0.7, dim, keepdim, mode).data()
                                            : quantile(vx, 0.7, dim, keepdim, mode).data();
              const std::vector<double> at_07(expected.begin() + 4 * slices.size(), expected.begin() + 5 * slices.size());
              EXPECT_TRUE(matches(one, out, t, at_07)) << what << " q 0.7";
            }
      }
}

// The gradient of a quantile over tied values goes where PyTorch's goes: its ranks are
// q * (n - 1) computed in the input's dtype (rounded once to float32 for a float32 input),
// and the sorted order keeps tied elements in input order. A float64 rank (wick's before)
// moves the gradient to a neighbouring tied element, or splits it.
TEST(Quantile, TiedGradientsGoWhereTheRankInTheInputsDtypeLands) {
  using Q = QuantileInterpolation;
  // (x, q, mode, nan-ignoring, the gradient's nonzero entries as (index, value))
  struct Case {
    std::vector<float> x;
    double q;
    Q mode;
    bool ignore_nan;
    std::vector<std::pair<int64_t, double>> grad;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<Case> cases;
  // 0.7f * 1000 = 699.99998808 rounds to 700 in float32: no weight for element 699.
  cases.push_back({std::vector<float>(1001, 3.0f), 0.7, Q::Linear, false, {{700, 1}}});
  // 0.6f * 5 = 3.00000012 rounds to 3: sorted [1, 1, 5, 5, 5, 5] from inputs 1, 4, 0, 2, 3, 5.
  cases.push_back({{5, 1, 5, 5, 1, 5}, 0.6, Q::Linear, false, {{2, 1}}});
  // 0.3f * 15 = 4.50000018 rounds to 4.5, and half to even is 4 (a float64 rank rounds to 5).
  cases.push_back({std::vector<float>(16, 2.0f), 0.3, Q::Nearest, false, {{4, 1}}});
  // The same over the 16 numbers after a NaN: sorted position 4 is input 5.
  std::vector<float> with_nan(17, 2.0f);
  with_nan[0] = nan;
  cases.push_back({with_nan, 0.3, Q::Nearest, true, {{5, 1}}});
  // 0.7f * 15 = 10.4999998 rounds to 10.5: half to sorted positions 10 and 11 (inputs 11, 12).
  cases.push_back({with_nan, 0.7, Q::Linear, true, {{11, 0.5}, {12, 0.5}}});
  for (Device device : cpu_and_cuda())
    for (const Case& c : cases) {
      const int64_t n = static_cast<int64_t>(c.x.size());
      SCOPED_TRACE(device.str() + " n " + std::to_string(n) + " q " + std::to_string(c.q));
      Variable x(tensor<float>(c.x).to(device), true);
      Variable y = c.ignore_nan ? nanquantile(x, c.q, 0, false, c.mode) : quantile(x, c.q, 0, false, c.mode);
      y.backward();
      std::vector<double> g(static_cast<size_t>(n), 0.0);
      for (const auto& [i, v] : c.grad) g[static_cast<size_t>(i)] = v;
      EXPECT_TRUE(matches(x.grad().data().to(Device::cpu()), {n}, DType::Float32, g, 0, 0));
    }
}

TEST(Quantile, Refusals) {
  const Tensor x = random({3, 4}, DType::Float32, 1);
  expect_error([&] { quantile(x, 1.5); }, {"quantile", "[0, 1]", "1.5"});
  expect_error([&] { nanquantile(x, -0.1); }, {"nanquantile", "[0, 1]"});
  expect_error([&] { quantile(x, tensor<float>({0.5f, kNaN})); }, {"quantile", "[0, 1]"});
  expect_error([&] { quantile(x, tensor<double>({0.5})); }, {"quantile", "dtype", "float32", "float64"});
  expect_error([&] { quantile(x, tensor<float>({0.5f, 0.1f}, {1, 2})); }, {"quantile", "1-d", "[1, 2]"});
  expect_error([&] { quantile(x.to(DType::Int64), 0.5); }, {"quantile", "float32 or float64", "int64"});
  expect_error([&] { quantile(x.to(DType::Float16), 0.5); }, {"quantile", "float16"});
  expect_error([&] { quantile(zeros({0, 3}), 0.5, 1); }, {"quantile", "empty", "[0, 3]"});
  expect_error([&] { quantile(x, 0.5, 2); }, {"quantile", "dim 2"});
  // float32 ranks count exactly to 2^24 (PyTorch's limit).
  const Tensor long_row = zeros({1}).expand({(int64_t{1} << 24) + 1});
  expect_error([&] { nanquantile(long_row, 0.5); }, {"nanquantile", "16777217", "2^24", "[16777217]"});
}

}  // namespace
}  // namespace wick::test
