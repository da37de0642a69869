// kernels/reduce_math.h on its own: the CPU and CUDA kernels fold elements in lanes, chunks
// and trees of any shape, which is right only if every op's combine is associative and
// commutative and its identity neutral. Each case folds the same values serially and in
// random trees with random operand order, and checks the result against a float64
// reference of the op's definition (NaN, infinities, ties, wrap-around included).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reduce_math.h"
#include "tests/support/reference.h"

namespace wick {
namespace {

using test::kInf;
using test::kNaN;

// The fold of xs[b, e) as a random binary tree whose leaves are runs added one by one.
template <class Fn, class X>
typename Fn::State tree_fold(const Fn& fn, const std::vector<X>& xs, size_t b, size_t e, std::mt19937& rng) {
  if (e - b <= 2 || rng() % 4 == 0) {
    typename Fn::State s = fn.identity();
    for (size_t i = b; i < e; ++i) s = fn.add(s, xs[i], static_cast<int64_t>(i));
    return s;
  }
  const size_t m = b + 1 + rng() % (e - b - 1);
  const auto l = tree_fold(fn, xs, b, m, rng), r = tree_fold(fn, xs, m, e, rng);
  // Sometimes an extra identity on either side: it must change nothing.
  const auto left = rng() % 5 == 0 ? fn.combine(fn.identity(), l) : l;
  return rng() % 2 ? fn.combine(left, r) : fn.combine(r, left);
}

template <class Fn, class X>
typename Fn::State serial_fold(const Fn& fn, const std::vector<X>& xs) {
  typename Fn::State s = fn.identity();
  for (size_t i = 0; i < xs.size(); ++i) s = fn.add(s, xs[i], static_cast<int64_t>(i));
  return s;
}

// Values with the cases that matter mixed in: ties, infinities, NaN (each by chance).
std::vector<double> values(std::mt19937& rng, size_t n, bool specials) {
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<double> xs(n);
  for (double& x : xs) {
    x = std::round(u(rng) * 4) / 4;  // few distinct values: ties
    if (specials) {
      const unsigned k = rng() % 40;
      if (k == 0) x = kNaN;
      if (k == 1) x = kInf;
      if (k == 2) x = -kInf;
    }
  }
  return xs;
}

bool same(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b));
}

// Every grouping of the fold gives `want` (within tol) for value sets of several sizes.
template <class Fn, class Want>
void expect_any_grouping(const char* what, const Fn& fn, bool specials, double tol, Want want) {
  std::mt19937 rng(7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{301}}) {
    for (int round = 0; round < 20; ++round) {
      const std::vector<double> xs = values(rng, n, specials);
      const double expected = want(xs);
      EXPECT_TRUE(same(fn.result(serial_fold(fn, xs)), expected, tol))
          << what << ", n = " << n << ": serial " << fn.result(serial_fold(fn, xs)) << ", want " << expected;
      const double tree = fn.result(tree_fold(fn, xs, 0, xs.size(), rng));
      EXPECT_TRUE(same(tree, expected, tol)) << what << ", n = " << n << ": a tree gave " << tree << ", want " << expected;
    }
  }
}

bool any_nan(const std::vector<double>& xs) {
  for (double x : xs)
    if (std::isnan(x)) return true;
  return false;
}

TEST(ReduceMath, SumProdMeanInAnyGrouping) {
  expect_any_grouping("sum", SumFn<double>{}, true, 1e-12, [](const std::vector<double>& xs) {
    long double s = 0;
    for (double x : xs) s += x;
    return static_cast<double>(s);
  });
  const SumFn<double> mean{64};  // mean: the sum divided by n
  std::mt19937 rng(1);
  const std::vector<double> xs = values(rng, 64, false);
  double s = 0;
  for (double x : xs) s += x;
  EXPECT_NEAR(mean.result(tree_fold(mean, xs, 0, xs.size(), rng)), s / 64, 1e-12);
  expect_any_grouping("prod", ProdFn<double>{}, false, 1e-9, [](const std::vector<double>& xs) {
    long double p = 1;
    for (double x : xs) p *= x;
    return static_cast<double>(p);
  });
}

TEST(ReduceMath, IntegerSumsAndProductsWrapAround) {
  const SumFn<int64_t> sum;
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(sum.combine(sum.add(sum.identity(), big, 0), sum.add(sum.identity(), int64_t{1}, 1)),
            std::numeric_limits<int64_t>::min());
  const ProdFn<int64_t> prod;
  EXPECT_EQ(prod.add(prod.add(prod.identity(), int64_t{1} << 40, 0), int64_t{1} << 30, 1), 0);  // 2^70 mod 2^64
}

TEST(ReduceMath, ExtremumLetsNaNWin) {
  expect_any_grouping("max", ExtremumFn<Fixed<true>, double>{}, true, 0, [](const std::vector<double>& xs) {
    double m = -kInf;
    for (double x : xs) m = std::max(m, x);
    return any_nan(xs) ? kNaN : m;
  });
  expect_any_grouping("min", ExtremumFn<AtRunTime, double>{{false}}, true, 0, [](const std::vector<double>& xs) {
    double m = kInf;
    for (double x : xs) m = std::min(m, x);
    return any_nan(xs) ? kNaN : m;
  });
  expect_any_grouping("norm inf", NormFn<NormKind::Inf, double>{}, true, 0, [](const std::vector<double>& xs) {
    double m = 0;
    for (double x : xs) m = std::max(m, std::fabs(x));
    return any_nan(xs) ? kNaN : m;
  });
  // Integers: the identity is the type's far end.
  const ExtremumFn<AtRunTime, int64_t> imax{{true}};
  EXPECT_EQ(imax.result(imax.add(imax.identity(), std::numeric_limits<int64_t>::min(), 0)),
            std::numeric_limits<int64_t>::min());
}

TEST(ReduceMath, LogicalCountsNaNAsNonzero) {
  expect_any_grouping("all", LogicalFn<Fixed<true>, int>{}, true, 0, [](const std::vector<double>& xs) {
    for (double x : xs)
      if (x == 0) return 0.0;
    return 1.0;
  });
  expect_any_grouping("any", LogicalFn<AtRunTime, int>{{false}}, true, 0, [](const std::vector<double>& xs) {
    for (double x : xs)
      if (x != 0) return 1.0;  // NaN != 0
    return 0.0;
  });
}

TEST(ReduceMath, NormsMatchTheirDefinition) {
  const auto power_sum = [](const std::vector<double>& xs, double p) {
    long double s = 0;
    for (double x : xs) s += std::pow(std::fabs(x), p);
    return s;
  };
  expect_any_grouping("norm 1", NormFn<NormKind::One, double>{}, true, 1e-12,
                      [&](const std::vector<double>& xs) { return static_cast<double>(power_sum(xs, 1)); });
  expect_any_grouping("norm 2", NormFn<NormKind::Two, double>{}, true, 1e-12,
                      [&](const std::vector<double>& xs) { return std::sqrt(static_cast<double>(power_sum(xs, 2))); });
  expect_any_grouping("norm 3", NormFn<NormKind::General, double>{3.0}, true, 1e-12, [&](const std::vector<double>& xs) {
    return std::pow(static_cast<double>(power_sum(xs, 3)), 1.0 / 3);
  });
}

TEST(ReduceMath, VarIsWelfordMergedByChan) {
  for (double correction : {0.0, 1.0}) {
    expect_any_grouping("var", VarFn<double>{correction}, false, 1e-12, [&](const std::vector<double>& xs) {
      const double n = static_cast<double>(xs.size());
      long double s = 0;
      for (double x : xs) s += x;
      const double mean = static_cast<double>(s / n);
      long double m2 = 0;
      for (double x : xs) m2 += (x - mean) * (x - mean);
      return static_cast<double>(m2) / std::max(0.0, n - correction);  // 0/0 -> NaN, x/0 -> inf
    });
  }
  // A constant slice (here one whose mean no sum would round to exactly) has a variance of
  // exactly 0 in every grouping: std's gradient there is 0, not NaN.
  std::mt19937 rng(3);
  const VarFn<double> var{1.0};
  const std::vector<double> constant(301, 0.1);
  for (int round = 0; round < 50; ++round) EXPECT_EQ(var.result(tree_fold(var, constant, 0, 301, rng)), 0.0);
  // Far from zero with little spread, where a sum of squares minus a squared sum would lose
  // every digit (a naive formula is off by hundreds here): the reference centres on the
  // known offset; Welford keeps all but the digits ulp(1e9) costs each deviation.
  std::vector<double> far(200);
  for (size_t i = 0; i < far.size(); ++i) far[i] = 1e9 + static_cast<double>(i % 3);
  double mean = 0, m2 = 0;
  for (double x : far) mean += x - 1e9;
  mean /= 200;
  for (double x : far) m2 += (x - 1e9 - mean) * (x - 1e9 - mean);
  for (int round = 0; round < 20; ++round)
    EXPECT_NEAR(var.result(tree_fold(var, far, 0, far.size(), rng)), m2 / 199, 1e-7 * m2 / 199);
}

TEST(ReduceMath, LogSumExpHandlesInfinitiesAndNaN) {
  expect_any_grouping("logsumexp", LogSumExpFn<double>{}, true, 1e-12, [](const std::vector<double>& xs) {
    if (any_nan(xs)) return kNaN;
    double m = -kInf;
    for (double x : xs) m = std::max(m, x);
    if (std::isinf(m)) return m;  // +inf, or -inf for an empty or all -inf slice
    long double s = 0;
    for (double x : xs) s += std::exp(x - m);
    return m + std::log(static_cast<double>(s));
  });
  // Large values do not overflow.
  const LogSumExpFn<double> lse;
  auto s = lse.add(lse.add(lse.identity(), 1000.0, 0), 1000.0, 1);
  EXPECT_NEAR(lse.result(s), 1000.0 + std::log(2.0), 1e-12);
}

TEST(ReduceMath, ArgExtremumTakesTheFirstOccurrence) {
  for (bool is_max : {true, false}) {
    std::mt19937 rng(11);
    for (int round = 0; round < 200; ++round) {
      const std::vector<double> xs = values(rng, 1 + rng() % 80, round % 2 == 0);
      // The reference: the first NaN, else the first index of the extremum.
      int64_t want = -1;
      for (size_t i = 0; i < xs.size() && want < 0; ++i)
        if (std::isnan(xs[i])) want = static_cast<int64_t>(i);
      if (want < 0) {
        want = 0;
        for (size_t i = 1; i < xs.size(); ++i)
          if (is_max ? xs[i] > xs[want] : xs[i] < xs[want]) want = static_cast<int64_t>(i);
      }
      const auto check = [&](const auto& fn) {
        const auto serial = serial_fold(fn, xs), tree = tree_fold(fn, xs, 0, xs.size(), rng);
        EXPECT_EQ(serial.i, want) << (is_max ? "max" : "min") << " round " << round;
        EXPECT_EQ(tree.i, want) << (is_max ? "max" : "min") << " round " << round;
      };
      if (is_max) check(ArgExtremumFn<Fixed<true>, double>{});
      else check(ArgExtremumFn<AtRunTime, double>{{false}});
    }
  }
  // The identity loses every tie, even with the worst value itself.
  const ArgExtremumFn<Fixed<true>, double> argmax;
  EXPECT_EQ(argmax.add(argmax.identity(), -kInf, 5).i, 5);
}

}  // namespace
}  // namespace wick
