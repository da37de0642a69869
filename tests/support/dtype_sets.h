#pragma once
// The dtype sets and scalar references the op tests share.
#include <cmath>
#include <vector>

#include <wick/tensor/dtype.h>

namespace wick::test {

inline const std::vector<DType> kFloatTypes = {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
inline const std::vector<DType> kIntTypes = {DType::UInt8, DType::Int32, DType::Int64};
inline const std::vector<DType> kNumericTypes = {DType::UInt8,    DType::Int32,   DType::Int64,  DType::Float16,
                                                 DType::BFloat16, DType::Float32, DType::Float64};
inline const std::vector<DType> kAllDTypes = {DType::Bool,    DType::UInt8,    DType::Int32,   DType::Int64,
                                              DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

// An exact integer result as the dtype stores it: two's complement wrap-around (uint8
// modulo 256, int32 and int64 into their signed ranges); bool is v != 0.
inline double wrap_to(double v, DType t) {
  if (t == DType::Bool) return v != 0;
  if (t != DType::UInt8 && t != DType::Int32 && t != DType::Int64) return v;
  const double range = t == DType::UInt8 ? 256.0 : t == DType::Int32 ? 4294967296.0 : 18446744073709551616.0;
  v = std::fmod(v, range);  // exact, in (-range, range); the steps below are exact too (Sterbenz)
  if (t == DType::UInt8) return v < 0 ? v + range : v;
  return v >= range / 2 ? v - range : v < -range / 2 ? v + range : v;
}

// Half to even, independent of the rounding mode.
inline double round_half_even(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

inline double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double gelu_tanh_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
inline double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

}  // namespace wick::test
