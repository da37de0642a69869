#pragma once
// The unary ops as one declared table (issue 13, section 1): each row gives the Tensor op,
// the Variable op (when differentiable), a float64 reference, the dtypes, the input domain
// and the per-device marks. tests/autograd/unary_table_test.cpp checks them;
// bench/op_table_bench.cpp times them on the CPU and CUDA.
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#include "tests/support/op_table.h"
#include "tests/support/row_params.h"

namespace wick::test {

struct UnaryRow {
  const char* name;  // the kernel's name (unary_op_name) for the ops that have one
  std::function<Tensor(const Tensor&)> op;
  std::function<Variable(const Variable&)> grad_op;  // null: not differentiable
  std::function<double(double)> ref;
  std::vector<DType> dtypes;
  double lo = -3, hi = 3;
  bool floating = false;  // integer inputs give the default float type
  bool bool_out = false;
  DeviceMarks on = {};  // a row skipped or expected to fail on a device
};

using V = const Variable&;

inline std::vector<UnaryRow> unary_rows() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, [](V x) { return neg(x); }, [](double x) { return -x; },
       {DType::Int32, DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}},
      {"abs", [](const Tensor& x) { return x.abs(); }, [](V x) { return abs(x); }, [](double x) { return std::fabs(x); },
       kNumericTypes},
      {"sign", [](const Tensor& x) { return sign(x); }, [](V x) { return sign(x); },
       [](double x) { return double((x > 0) - (x < 0)); }, kAllDTypes},
      {"floor", [](const Tensor& x) { return floor(x); }, [](V x) { return floor(x); },
       [](double x) { return std::floor(x); }, kNumericTypes},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](V x) { return ceil(x); }, [](double x) { return std::ceil(x); },
       kNumericTypes},
      // Values on the half grid probe the ties.
      {"round", [](const Tensor& x) { return round(floor(x * 2) / 2); }, [](V x) { return round(x); },
       [](double x) { return round_half_even(std::floor(x * 2) / 2); }, kFloatTypes},
      {"round int", [](const Tensor& x) { return round(x); }, nullptr, [](double x) { return x; }, kIntTypes},
      {"trunc", [](const Tensor& x) { return trunc(x); }, [](V x) { return trunc(x); },
       [](double x) { return std::trunc(x); }, kNumericTypes},
      {"relu", [](const Tensor& x) { return relu(x); }, [](V x) { return relu(x); },
       [](double x) { return x < 0 ? 0 : x; }, kNumericTypes},
      {"square", [](const Tensor& x) { return square(x); }, [](V x) { return square(x); },
       [](double x) { return x * x; }, kNumericTypes},
      {"clamp", [](const Tensor& x) { return clamp(x, -1.5, 2.0); }, [](V x) { return clamp(x, -1.5, 2.0); },
       [](double x) { return std::min(std::max(x, -1.5), 2.0); }, kFloatTypes},
      {"clamp int_bounds", [](const Tensor& x) { return clamp(x, -1, 1); }, nullptr,
       [](double x) { return std::min(std::max(x, -1.0), 1.0); }, kIntTypes},
      {"clamp max_only", [](const Tensor& x) { return clamp(x, std::nullopt, 0.5); },
       [](V x) { return clamp(x, std::nullopt, 0.5); }, [](double x) { return std::min(x, 0.5); }, kFloatTypes},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }, [](V x) { return leaky_relu(x, 0.1); },
       [](double x) { return x > 0 ? x : 0.1 * x; }, kFloatTypes, -3, 3, true},
      {"exp", [](const Tensor& x) { return x.exp(); }, [](V x) { return exp(x); }, [](double x) { return std::exp(x); },
       kAllDTypes, -8, 8, true},
      {"log", [](const Tensor& x) { return x.log(); }, [](V x) { return log(x); }, [](double x) { return std::log(x); },
       kNumericTypes, 0.1, 4, true},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](V x) { return log1p(x); },
       [](double x) { return std::log1p(x); }, kNumericTypes, -0.9, 4, true},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](V x) { return expm1(x); },
       [](double x) { return std::expm1(x); }, kNumericTypes, -3, 3, true},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }, [](V x) { return sqrt(x); },
       [](double x) { return std::sqrt(x); }, kNumericTypes, 0.2, 9, true},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](V x) { return rsqrt(x); },
       [](double x) { return 1 / std::sqrt(x); }, kNumericTypes, 0.2, 9, true},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](V x) { return reciprocal(x); },
       [](double x) { return 1 / x; }, kNumericTypes, 0.5, 4, true},
      {"sin", [](const Tensor& x) { return sin(x); }, [](V x) { return sin(x); }, [](double x) { return std::sin(x); },
       kNumericTypes, -3, 3, true},
      {"cos", [](const Tensor& x) { return cos(x); }, [](V x) { return cos(x); }, [](double x) { return std::cos(x); },
       kNumericTypes, -3, 3, true},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](V x) { return tanh(x); },
       [](double x) { return std::tanh(x); }, kNumericTypes, -5, 5, true},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](V x) { return sigmoid(x); }, sigmoid_ref,
       kNumericTypes, -8, 8, true},
      {"erf", [](const Tensor& x) { return erf(x); }, [](V x) { return erf(x); }, [](double x) { return std::erf(x); },
       kNumericTypes, -3, 3, true},
      {"erfc", [](const Tensor& x) { return erfc(x); }, [](V x) { return erfc(x); },
       [](double x) { return std::erfc(x); }, kNumericTypes, -3, 5, true},
      {"tan", [](const Tensor& x) { return tan(x); }, [](V x) { return tan(x); }, [](double x) { return std::tan(x); },
       kNumericTypes, -1.2, 1.2, true},
      {"asin", [](const Tensor& x) { return asin(x); }, [](V x) { return asin(x); },
       [](double x) { return std::asin(x); }, kFloatTypes, -0.9, 0.9, true},
      {"acos", [](const Tensor& x) { return acos(x); }, [](V x) { return acos(x); },
       [](double x) { return std::acos(x); }, kFloatTypes, -0.9, 0.9, true},
      {"atan", [](const Tensor& x) { return atan(x); }, [](V x) { return atan(x); },
       [](double x) { return std::atan(x); }, kNumericTypes, -4, 4, true},
      {"sinh", [](const Tensor& x) { return sinh(x); }, [](V x) { return sinh(x); },
       [](double x) { return std::sinh(x); }, kNumericTypes, -4, 4, true},
      {"cosh", [](const Tensor& x) { return cosh(x); }, [](V x) { return cosh(x); },
       [](double x) { return std::cosh(x); }, kNumericTypes, -4, 4, true},
      {"asinh", [](const Tensor& x) { return asinh(x); }, [](V x) { return asinh(x); },
       [](double x) { return std::asinh(x); }, kNumericTypes, -4, 4, true},
      {"acosh", [](const Tensor& x) { return acosh(x); }, [](V x) { return acosh(x); },
       [](double x) { return std::acosh(x); }, kNumericTypes, 1.2, 5, true},
      {"atanh", [](const Tensor& x) { return atanh(x); }, [](V x) { return atanh(x); },
       [](double x) { return std::atanh(x); }, kFloatTypes, -0.9, 0.9, true},
      {"log2", [](const Tensor& x) { return log2(x); }, [](V x) { return log2(x); },
       [](double x) { return std::log2(x); }, kNumericTypes, 0.2, 8, true},
      {"log10", [](const Tensor& x) { return log10(x); }, [](V x) { return log10(x); },
       [](double x) { return std::log10(x); }, kNumericTypes, 0.2, 8, true},
      {"exp2", [](const Tensor& x) { return exp2(x); }, [](V x) { return exp2(x); },
       [](double x) { return std::exp2(x); }, kNumericTypes, -6, 6, true},
      {"gelu", [](const Tensor& x) { return gelu(x); }, [](V x) { return gelu(x); }, gelu_erf_ref, kFloatTypes, -4, 4,
       true},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApproximation::Tanh); },
       [](V x) { return gelu(x, GeluApproximation::Tanh); }, gelu_tanh_ref, kFloatTypes, -4, 4, true},
      {"silu", [](const Tensor& x) { return silu(x); }, [](V x) { return silu(x); },
       [](double x) { return x * sigmoid_ref(x); }, kFloatTypes, -6, 6, true},
      // beta * x spans both sides of the threshold.
      {"softplus", [](const Tensor& x) { return softplus(x, 2.0, 5.0); }, [](V x) { return softplus(x, 2.0, 5.0); },
       [](double x) { return 2 * x > 5 ? x : std::log1p(std::exp(2 * x)) / 2; }, kFloatTypes, -4, 4, true},
      {"logical_not", [](const Tensor& x) { return logical_not(x); }, nullptr, [](double x) { return double(x == 0); },
       kAllDTypes, -2, 2, false, true},
      {"bitwise_not", [](const Tensor& x) { return ~x; }, nullptr, [](double x) { return -x - 1; }, kIntTypes, -9, 9},
      {"bitwise_not bool", [](const Tensor& x) { return bitwise_not(x); }, nullptr,
       [](double x) { return double(x == 0); }, {DType::Bool}},
  };
}

// The rows, built once per binary (the gtest instances index into them).
inline const std::vector<UnaryRow>& unary_table() {
  static const std::vector<UnaryRow> rows = unary_rows();
  return rows;
}

}  // namespace wick::test
