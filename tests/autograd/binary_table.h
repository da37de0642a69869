#pragma once
// The binary ops as one declared table (issue 13, section 1): each row gives the Tensor op,
// its forms with a number and in place where they exist, the Variable op (when
// differentiable), a float64 reference, the dtypes it accepts (every other dtype must be
// refused, as PyTorch refuses it), the result dtype rule and the input domain. The rows
// drive tests/autograd/binary_table_test.cpp (references over dtypes, mixed dtypes, layouts,
// broadcast shapes, NaN/inf/±0, numbers, in place on views, gradients) and the CUDA
// comparison in tests/kernels/cuda_elementwise_test.cpp. Every binary kernel op
// (WICK_BINARY_OPS in wick/tensor/op_kinds.h) must have a row.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "tests/support/op_table.h"
#include "tests/support/row_params.h"
#include "tests/support/reference.h"

namespace wick::test {

// The result's dtype given the operands' promoted dtype P: P itself, the default float for
// integer and bool P (true division, atan2), or bool (comparisons; the logical ops, which
// also compute in bool).
enum class BinaryOut { Same, Float, Bool, Logical };

struct Domain {
  double lo, hi;
};

struct BinaryRow {
  const char* name;  // the kernel op's name (binary_op_name); rows may share one
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  std::vector<DType> dtypes;  // the promoted dtypes this row covers
  BinaryOut out = BinaryOut::Same;
  Domain a{-3, 3}, b{-3, 3};
  bool nonzero_b = false;           // divisors: a drawn 0 becomes 1
  bool integer_valued = false;      // drawn as integers, so that ties occur
  bool refuses_bool_operand = false;  // sub: a bool operand is refused whatever the promotion
  std::function<Tensor(const Tensor&, const Scalar&)> with_number = nullptr;
  std::function<Tensor(const Scalar&, const Tensor&)> number_first = nullptr;
  std::function<void(Tensor&, const Tensor&)> in_place = nullptr;
  std::function<void(Tensor&, const Scalar&)> in_place_number = nullptr;
  std::function<Variable(const Variable&, const Variable&)> grad = nullptr;  // null: not differentiable
  std::vector<std::function<Variable(const Variable&)>> grad_with_numbers = {};
  Domain grad_domain{-2, 2};
  std::vector<Shape> grad_shapes = {{2, 3}, {3}};
  DeviceMarks on = {};  // a row skipped or expected to fail on a device
};


// NaN propagates through minimum and maximum.
inline double min_ref(double a, double b) { return a != a || b != b ? kNaN : std::min(a, b); }
inline double max_ref(double a, double b) { return a != a || b != b ? kNaN : std::max(a, b); }
// Python's %: the result takes the divisor's sign.
inline double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// Python's //: a / b for b = 0 (inf or NaN), NaN for an infinite dividend, and for an
// infinite divisor 0 with the quotient's sign or -1 when the signs differ (-5 // inf = -1).
inline double py_floor_div(double a, double b) {
  if (b == 0 || a != a || b != b) return a / b;
  if (std::isinf(a)) return kNaN;
  if (std::isinf(b)) return a == 0 || (a < 0) == (b < 0) ? std::copysign(0.0, a / b) : -1.0;
  return std::floor(a / b);
}
inline double bit_and(double a, double b) { return double(int64_t(a) & int64_t(b)); }
inline double bit_or(double a, double b) { return double(int64_t(a) | int64_t(b)); }
inline double bit_xor(double a, double b) { return double(int64_t(a) ^ int64_t(b)); }

inline std::vector<DType> with_bool(std::vector<DType> v) {
  v.insert(v.begin(), DType::Bool);
  return v;
}

// The shifts' rows, one per integer dtype: the result of an amount beyond the width
// depends on the width and the signedness.
inline std::vector<BinaryRow> shift_rows() {
  std::vector<BinaryRow> rows;
  for (DType t : kIntTypes) {
    const double bits = t == DType::UInt8 ? 8 : t == DType::Int32 ? 32 : 64;
    const bool is_signed = t != DType::UInt8;
    const Domain values{-100, 100}, amounts{-3, 70};
    rows.push_back({.name = "bitwise_left_shift",
                    .op = [](const Tensor& a, const Tensor& b) { return a << b; },
                    .ref = [bits](double a, double b) { return b < 0 || b >= bits ? 0.0 : a * std::exp2(b); },
                    .dtypes = {t},
                    .a = values,
                    .b = amounts,
                    .with_number = [](const Tensor& a, const Scalar& n) { return a << n; },
                    .number_first = [](const Scalar& n, const Tensor& b) { return n << b; },
                    .in_place = [](Tensor& a, const Tensor& b) { a <<= b; },
                    .in_place_number = [](Tensor& a, const Scalar& n) { bitwise_left_shift_(a, n); }});
    rows.push_back({.name = "bitwise_right_shift",
                    .op = [](const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); },
                    .ref =
                        [bits, is_signed](double a, double b) {
                          if (b < 0 || b >= bits - is_signed) return a < 0 ? -1.0 : 0.0;
                          return std::floor(a / std::exp2(b));
                        },
                    .dtypes = {t},
                    .a = values,
                    .b = amounts,
                    .with_number = [](const Tensor& a, const Scalar& n) { return a >> n; },
                    .number_first = [](const Scalar& n, const Tensor& b) { return bitwise_right_shift(n, b); },
                    .in_place = [](Tensor& a, const Tensor& b) { bitwise_right_shift_(a, b); },
                    .in_place_number = [](Tensor& a, const Scalar& n) { a >>= n; }});
  }
  return rows;
}

inline std::vector<BinaryRow> binary_rows() {
  using T = const Tensor&;
  using V = const Variable&;
  using S = const Scalar&;
  std::vector<BinaryRow> rows = {
      {.name = "add",
       .op = [](T a, T b) { return a + b; },
       .ref = [](double a, double b) { return a + b; },
       .dtypes = kAllDTypes,
       .with_number = [](T a, S n) { return a + n; },
       .number_first = [](S n, T b) { return n + b; },
       .in_place = [](Tensor& a, T b) { a += b; },
       .in_place_number = [](Tensor& a, S n) { a.add_(n); },
       .grad = [](V a, V b) { return add(a, b); },
       .grad_with_numbers = {[](V x) { return add(x, 1.5); }, [](V x) { return 2.0 + x; }}},
      {.name = "sub",
       .op = [](T a, T b) { return a - b; },
       .ref = [](double a, double b) { return a - b; },
       .dtypes = kNumericTypes,
       .refuses_bool_operand = true,
       .with_number = [](T a, S n) { return a - n; },
       .number_first = [](S n, T b) { return n - b; },
       .in_place = [](Tensor& a, T b) { a.sub_(b); },
       .in_place_number = [](Tensor& a, S n) { a -= n; },
       .grad = [](V a, V b) { return sub(a, b); },
       .grad_with_numbers = {[](V x) { return sub(x, 1.5); }, [](V x) { return x - 1.0; },
                             [](V x) { return 3.0 - x; }}},
      {.name = "mul",
       .op = [](T a, T b) { return a * b; },
       .ref = [](double a, double b) { return a * b; },
       .dtypes = kAllDTypes,
       .with_number = [](T a, S n) { return a * n; },
       .number_first = [](S n, T b) { return n * b; },
       .in_place = [](Tensor& a, T b) { a.mul_(b); },
       .in_place_number = [](Tensor& a, S n) { a *= n; },
       .grad = [](V a, V b) { return mul(a, b); },
       .grad_with_numbers = {[](V x) { return 2.0 * x; }, [](V x) { return mul(x, -0.5); }}},
      {.name = "div",
       .op = [](T a, T b) { return a / b; },
       .ref = [](double a, double b) { return a / b; },
       .dtypes = kAllDTypes,
       .out = BinaryOut::Float,
       .nonzero_b = true,
       .with_number = [](T a, S n) { return a / n; },
       .number_first = [](S n, T b) { return n / b; },
       .in_place = [](Tensor& a, T b) { a /= b; },
       .in_place_number = [](Tensor& a, S n) { a.div_(n); },
       .grad = [](V a, V b) { return div(a, b); },
       .grad_with_numbers = {[](V x) { return x / 4.0; }, [](V x) { return 2.0 / x; }},
       .grad_domain = {0.5, 2}},
      {.name = "pow",
       .op = [](T a, T b) { return pow(a, b); },
       .ref = [](double a, double b) { return std::pow(a, b); },
       .dtypes = kFloatTypes,
       .a = {0.5, 2},
       .b = {-2, 2},
       .with_number = [](T a, S n) { return pow(a, n); },
       .number_first = [](S n, T b) { return pow(n, b); },
       .grad = [](V a, V b) { return pow(a, b); },
       .grad_with_numbers = {[](V x) { return pow(x, 2.5); }, [](V x) { return pow(Scalar(2.5), x); }},
       .grad_domain = {0.5, 2}},
      // Integer powers by squaring; the exponents stay where int32 does not overflow.
      {.name = "pow",
       .op = [](T a, T b) { return pow(a, b); },
       .ref = [](double a, double b) { return std::pow(a, b); },
       .dtypes = kIntTypes,
       .b = {0, 4},
       .with_number = [](T a, S n) { return pow(a, n); },
       .number_first = [](S n, T b) { return pow(n, b); }},
      {.name = "minimum",
       .op = [](T a, T b) { return minimum(a, b); },
       .ref = min_ref,
       .dtypes = kAllDTypes,
       .integer_valued = true,
       .with_number = [](T a, S n) { return minimum(a, n); },
       .grad = [](V a, V b) { return minimum(a, b); }},
      {.name = "maximum",
       .op = [](T a, T b) { return maximum(a, b); },
       .ref = max_ref,
       .dtypes = kAllDTypes,
       .integer_valued = true,
       .with_number = [](T a, S n) { return maximum(a, n); },
       .grad = [](V a, V b) { return maximum(a, b); },
       .grad_shapes = {{2, 1}, {1, 3}}},
      // The gradient cases keep a / b inside (0.6, 1.5): the steps of floor/trunc are not
      // where finite differences look.
      {.name = "remainder",
       .op = [](T a, T b) { return remainder(a, b); },
       .ref = py_mod,
       .dtypes = kNumericTypes,
       .a = {-9, 9},
       .b = {-4, 4},
       .nonzero_b = true,
       .grad = [](V a, V b) { return remainder(a, b); },
       .grad_domain = {0.6, 0.9},
       .grad_shapes = {{2, 3}, {2, 3}}},
      {.name = "floor_divide",
       .op = [](T a, T b) { return floor_divide(a, b); },
       .ref = py_floor_div,
       .dtypes = kNumericTypes,
       .a = {-9, 9},
       .b = {-4, 4},
       .nonzero_b = true,
       .grad = [](V a, V b) { return floor_divide(a, b); },
       .grad_domain = {0.6, 0.9},
       .grad_shapes = {{3}, {3}}},
      {.name = "atan2",
       .op = [](T a, T b) { return atan2(a, b); },
       .ref = [](double a, double b) { return std::atan2(a, b); },
       .dtypes = kAllDTypes,
       .out = BinaryOut::Float,
       .grad = [](V a, V b) { return atan2(a, b); },
       .grad_domain = {0.5, 2}},
      {.name = "fmod",
       .op = [](T a, T b) { return fmod(a, b); },
       .ref = [](double a, double b) { return std::fmod(a, b); },
       .dtypes = kNumericTypes,
       .a = {-9, 9},
       .b = {-4, 4},
       .nonzero_b = true,
       .with_number = [](T a, S n) { return fmod(a, n); },
       .grad = [](V a, V b) { return fmod(a, b); },
       .grad_domain = {0.6, 0.9}},
      {.name = "bitwise_and",
       .op = [](T a, T b) { return a & b; },
       .ref = bit_and,
       .dtypes = with_bool(kIntTypes),
       .a = {-9, 9},
       .b = {-9, 9},
       .with_number = [](T a, S n) { return bitwise_and(a, n); }},
      {.name = "bitwise_or",
       .op = [](T a, T b) { return a | b; },
       .ref = bit_or,
       .dtypes = with_bool(kIntTypes),
       .a = {-9, 9},
       .b = {-9, 9},
       .with_number = [](T a, S n) { return bitwise_or(a, n); }},
      {.name = "bitwise_xor",
       .op = [](T a, T b) { return a ^ b; },
       .ref = bit_xor,
       .dtypes = with_bool(kIntTypes),
       .a = {-9, 9},
       .b = {-9, 9},
       .with_number = [](T a, S n) { return bitwise_xor(a, n); }},
  };
  const auto comparison = [](const char* name, Tensor (*tt)(T, T), Tensor (*ts)(T, S), double (*ref)(double, double)) {
    return BinaryRow{.name = name,
                     .op = tt,
                     .ref = ref,
                     .dtypes = kAllDTypes,
                     .out = BinaryOut::Bool,
                     .a = {-2, 2},
                     .b = {-2, 2},
                     .integer_valued = true,
                     .with_number = ts};
  };
  rows.push_back(comparison("eq", &eq, &eq, [](double a, double b) { return double(a == b); }));
  rows.push_back(comparison("ne", &ne, &ne, [](double a, double b) { return double(a != b); }));
  rows.push_back(comparison("lt", &lt, &lt, [](double a, double b) { return double(a < b); }));
  rows.push_back(comparison("le", &le, &le, [](double a, double b) { return double(a <= b); }));
  rows.push_back(comparison("gt", &gt, &gt, [](double a, double b) { return double(a > b); }));
  rows.push_back(comparison("ge", &ge, &ge, [](double a, double b) { return double(a >= b); }));
  const auto logical = [](const char* name, std::function<Tensor(T, T)> op, double (*ref)(double, double)) {
    return BinaryRow{.name = name,
                     .op = std::move(op),
                     .ref = ref,
                     .dtypes = kAllDTypes,
                     .out = BinaryOut::Logical,
                     .a = {-1, 1},
                     .b = {-1, 1},
                     .integer_valued = true};
  };
  // NaN is true, as any nonzero value.
  rows.push_back(logical("logical_and", [](T a, T b) { return a && b; },
                         [](double a, double b) { return double(a != 0 && b != 0); }));
  rows.push_back(logical("logical_or", [](T a, T b) { return a || b; },
                         [](double a, double b) { return double(a != 0 || b != 0); }));
  for (BinaryRow& r : shift_rows()) rows.push_back(std::move(r));
  return rows;
}

// The dtype the kernel computes in for promoted dtype p, and the result's dtype.
inline DType compute_dtype_of(const BinaryRow& r, DType p) {
  if (r.out == BinaryOut::Logical) return DType::Bool;
  return r.out == BinaryOut::Float && !is_floating(p) ? kDefaultFloat : p;
}
inline DType out_dtype_of(const BinaryRow& r, DType p) {
  return r.out == BinaryOut::Bool ? DType::Bool : compute_dtype_of(r, p);
}

// The rows, built once per binary (the gtest instances index into them).
inline const std::vector<BinaryRow>& binary_table() {
  static const std::vector<BinaryRow> rows = binary_rows();
  return rows;
}

// Inputs of dtype t in the row's domain: integer-valued where ties matter, divisors
// without zeros.
inline Tensor row_input(const BinaryRow& r, bool second, const Shape& shape, DType t, uint64_t seed) {
  const Domain d = second ? r.b : r.a;
  Tensor x = r.integer_valued && is_floating(t) ? random(shape, DType::Int32, seed, d.lo, d.hi).to(t)
                                                : random(shape, t, seed, d.lo, d.hi);
  if (!(second && r.nonzero_b)) return x;
  std::vector<double> v = values(x);
  for (double& e : v)
    if (e == 0) e = 1;
  return tensor<double>(v, shape).to(t);
}

// NaN, infinities, signed zeros, halves, a value float16 flushes to 0, and large ones.
inline Tensor special_values(DType t) {
  return tensor<double>({kNaN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 1e-30, 30.0, -30.0, 88.0})
      .to(t);
}

}  // namespace wick::test
