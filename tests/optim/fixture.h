#pragma once
// The parameter and gradients every optimizer test steps (optimizer_test.cpp,
// adadelta_and_maximize_test.cpp).
#include <vector>

#include "tests/support/reference.h"

namespace wick::test {

using Vec = std::vector<double>;
inline const Vec kP0 = {0.5, -1.0, 2.0, 0.0, -0.25, 1.5};
inline const std::vector<Vec> kGrads = {{0.1, -0.2, 0.3, -0.4, 0.5, 0.0},
                                        {-0.3, 0.1, 0.2, 0.6, -0.1, 0.05},
                                        {0.2, 0.2, -0.5, 0.1, 0.3, -0.2}};
inline const Shape kShape = {2, 3};

inline Variable param(const Vec& v = kP0) { return Variable(tensor<double>(v, kShape), true); }

}  // namespace wick::test
