#pragma once
// The range of each dtype, as doubles: what a number must fit to be written into a tensor
// (fill_), and nan_to_num's default replacements for the infinities.
#include <wick/tensor/dtype.h>

namespace wick {

// The largest and the most negative finite values of t (int64's round to +-2^63; bool: 1
// and 0).
double largest_finite(DType t);
double lowest_finite(DType t);

}  // namespace wick
