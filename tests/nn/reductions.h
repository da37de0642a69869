#pragma once
// The reduction check shared by the loss tests (loss_test.cpp, loss_huber_ranking_ctc_test.cpp).
#include <functional>
#include <string>
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {

inline double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

// Checks reduction None against `pointwise` (of `shape`), Sum against its sum and Mean
// against its mean.
inline void expect_reductions(const std::function<Variable(Reduction)>& loss, const Shape& shape,
                              const std::vector<double>& pointwise, DType dt, const std::string& what) {
  const double rtol = dt == DType::Float32 ? 1e-5 : 1e-10, atol = dt == DType::Float32 ? 1e-6 : 1e-12;
  EXPECT_TRUE(matches(loss(Reduction::None).data(), shape, dt, pointwise, rtol, atol)) << what;
  EXPECT_TRUE(matches(loss(Reduction::Sum).data(), {}, dt, {ref_sum(pointwise)}, rtol, atol)) << what;
  EXPECT_TRUE(matches(loss(Reduction::Mean).data(), {}, dt,
                      {ref_sum(pointwise) / static_cast<double>(pointwise.size())}, rtol, atol))
      << what;
}

}  // namespace wick::test
