// The vectorisable float32 exp, expm1, tanh and erf (kernels/cpu/vec_math.h) against the
// double-precision C library, over their whole range, the extremes, NaN and infinities.
#include <cmath>
#include <limits>

#include "kernels/cpu/vec_math.h"
#include "tests/support/reference.h"

namespace wick::test {
namespace {

// |got - want| in units of the float32 spacing at want (subnormal spacing near 0).
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double spacing = std::max<double>(std::nextafter(std::fabs(w), INFINITY) - std::fabs(w),
                                          std::numeric_limits<float>::denorm_min());
  return std::fabs(static_cast<double>(got) - want) / spacing;
}

struct Fn {
  const char* name;
  float (*f)(float);
  double (*ref)(double);
  double lo, hi, max_ulps;
};

TEST(VecMath, AccurateOverTheWholeRange) {
  const Fn fns[] = {
      {"exp", cpu::vec_math::exp, [](double x) { return std::exp(x); }, -105, 90, 2},
      {"expm1", cpu::vec_math::expm1, [](double x) { return std::expm1(x); }, -105, 90, 2},
      {"tanh", cpu::vec_math::tanh, [](double x) { return std::tanh(x); }, -12, 12, 3},
      {"erf", cpu::vec_math::erf, [](double x) { return std::erf(x); }, -6, 6, 6},
  };
  for (const Fn& fn : fns) {
    double worst = 0, worst_x = 0;
    auto check = [&](float x) {
      const double e = ulps(fn.f(x), fn.ref(x));
      if (e > worst) worst = e, worst_x = x;
    };
    const int n = 200000;
    for (int i = 0; i <= n; ++i) check(static_cast<float>(fn.lo + (fn.hi - fn.lo) * i / n));
    // Tiny arguments, where relative accuracy is easy to lose.
    for (int k = -130; k < 0; ++k)
      for (float m : {1.0f, -1.0f, 1.37f, -1.91f}) check(std::ldexp(m, k));
    EXPECT_LE(worst, fn.max_ulps) << fn.name << " worst at x = " << worst_x;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(std::isnan(fn.f(nan))) << fn.name;
    EXPECT_EQ(fn.f(inf), static_cast<float>(fn.ref(inf))) << fn.name;
    EXPECT_EQ(fn.f(-inf), static_cast<float>(fn.ref(-inf))) << fn.name;
  }
  // Overflow and underflow land where the float32 results do.
  EXPECT_EQ(cpu::vec_math::exp(88.8f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(cpu::vec_math::exp(-104.f), 0.0f);
  EXPECT_EQ(cpu::vec_math::exp(-103.f), static_cast<float>(std::exp(-103.0)));
  EXPECT_EQ(cpu::vec_math::exp(88.7f), static_cast<float>(std::exp(double(88.7f))));
}

}  // namespace
}  // namespace wick::test
