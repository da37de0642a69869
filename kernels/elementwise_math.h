#pragma once
// The per-element definition of every UnaryOp and BinaryOp, shared by the CPU and CUDA
// kernels: these functions ARE the semantics (NaN rules, integer behaviour, rounding, gelu
// forms, the *Grad derivatives). Kernels load an element, convert it to its compute type
// (compute_t: Half/BFloat16 -> float), call unary_fn / binary_fn, and convert back.
//
//   unary_fn<Op>(x, p)      T -> T (bool for LogicalNot), T a compute type
//   binary_fn<Op>(a, b)     (T, T) -> T (bool for comparisons and logical ops)
//   unary_supports<Op, T>() / binary_supports<Op, T>()   which (op, type) pairs exist; the
//                           rest must not be instantiated (kernels throw_unsupported_dtype)
//   visit_unary_op / visit_binary_op                     runtime op -> template argument
//
// Rules worth knowing:
// - NaN propagates through minimum, maximum, relu, clamp, sign and leaky_relu.
// - round is half to even (rint under the default rounding mode).
// - Integer add/sub/mul/neg/abs wrap around (two's complement) instead of being undefined.
// - Integer remainder / floor_divide follow Python (the result takes the divisor's sign,
//   the quotient rounds towards -inf). Division by zero is NOT handled here: the CPU kernel
//   throws before calling, and here it yields 0 so device code never traps. x / -1 does
//   not trap either (it wraps like neg).
// - pow on integers is exact by repeated squaring; a negative exponent gives 1/a truncated
//   (1 for a == 1, +-1 for a == -1, 0 otherwise).
// - Shifts (integers only), as PyTorch: a left shift by a negative amount or by the bit
//   width or more gives 0, and bits shifted out are lost (two's complement wrap); a right
//   shift by such an amount gives what shifting out every bit gives: 0, or -1 for a
//   negative signed value (the sign is kept).
// - clamp on integers clamps to the real interval [lo, hi] (lo rounded up, hi down,
//   saturated to the type); p.a = lo, p.b = hi, +-inf for a missing bound.
// - leaky_relu: p.a = negative slope. softplus: p.a = beta, p.b = threshold (linear above
//   beta * x > threshold).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/dtype.h>

// Every per-element function must inline into the kernels' loops, or those loops do not
// vectorise; on the host WICK_HD is a plain `inline`, which GCC drops in kernel files that
// instantiate every op, so it is forced here (nvcc's WICK_HD already forces it).
#if defined(__CUDACC__)
#define WICK_ELEMENTWISE_FN WICK_HD
#else
#define WICK_ELEMENTWISE_FN __attribute__((always_inline)) inline
#endif

namespace wick {

namespace emath {

// The C math library for float and double, on host and device alike. unary_fn takes the
// math provider as a template argument so that the CPU kernels can substitute vectorisable
// float versions (kernels/cpu/vec_math.h) while every formula is written once, here.
struct LibMath {
#define WICK_EMATH_UNARY(name)                                         \
  static WICK_ELEMENTWISE_FN float name(float x) { return ::name##f(x); }          \
  static WICK_ELEMENTWISE_FN double name(double x) { return ::name(x); }
  WICK_EMATH_UNARY(exp)
  WICK_EMATH_UNARY(expm1)
  WICK_EMATH_UNARY(log)
  WICK_EMATH_UNARY(log1p)
  WICK_EMATH_UNARY(sqrt)
  WICK_EMATH_UNARY(sin)
  WICK_EMATH_UNARY(cos)
  WICK_EMATH_UNARY(tanh)
  WICK_EMATH_UNARY(erf)
  WICK_EMATH_UNARY(erfc)
  WICK_EMATH_UNARY(tan)
  WICK_EMATH_UNARY(asin)
  WICK_EMATH_UNARY(acos)
  WICK_EMATH_UNARY(atan)
  WICK_EMATH_UNARY(sinh)
  WICK_EMATH_UNARY(cosh)
  WICK_EMATH_UNARY(asinh)
  WICK_EMATH_UNARY(acosh)
  WICK_EMATH_UNARY(atanh)
  WICK_EMATH_UNARY(log2)
  WICK_EMATH_UNARY(log10)
  WICK_EMATH_UNARY(exp2)
#undef WICK_EMATH_UNARY
};

// Exact or correctly rounded functions, not worth substituting.
#define WICK_EMATH_UNARY(name)                                  \
  WICK_ELEMENTWISE_FN float name(float x) { return ::name##f(x); }          \
  WICK_ELEMENTWISE_FN double name(double x) { return ::name(x); }
WICK_EMATH_UNARY(fabs)
WICK_EMATH_UNARY(floor)
WICK_EMATH_UNARY(ceil)
WICK_EMATH_UNARY(rint)
WICK_EMATH_UNARY(trunc)
#undef WICK_EMATH_UNARY
#define WICK_EMATH_BINARY(name)                                           \
  WICK_ELEMENTWISE_FN float name(float a, float b) { return ::name##f(a, b); }        \
  WICK_ELEMENTWISE_FN double name(double a, double b) { return ::name(a, b); }
WICK_EMATH_BINARY(pow)
WICK_EMATH_BINARY(fmod)
WICK_EMATH_BINARY(atan2)
WICK_EMATH_BINARY(copysign)
#undef WICK_EMATH_BINARY

template <class T>
WICK_ELEMENTWISE_FN bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// Two's complement wrap-around for integer arithmetic (signed overflow is undefined in C++).
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T> WICK_ELEMENTWISE_FN T wrap_add(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b)); }
template <class T> WICK_ELEMENTWISE_FN T wrap_sub(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b)); }
template <class T> WICK_ELEMENTWISE_FN T wrap_mul(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b)); }

// v converted to integer type T, saturating at T's limits (NaN -> 0).
template <class T>
WICK_ELEMENTWISE_FN T saturate_to(double v) {
  if (!(v == v)) return T(0);
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  // max() as a double may round up past max (int64), so compare with >=.
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// 1 / (1 + e^-x), from e^-|x| so that neither tail cancels or overflows.
template <class M, class T>
WICK_ELEMENTWISE_FN T sigmoid(T x) {
  const T e = M::exp(-fabs(x));
  const T r = T(1) / (T(1) + e);
  return x >= T(0) ? r : e * r;
}
// sigmoid'(x) = s (1 - s) = e / (1 + e)^2 with e = e^-|x| (even in x, no cancellation).
template <class M, class T>
WICK_ELEMENTWISE_FN T sigmoid_grad(T x) {
  const T e = M::exp(-fabs(x));
  const T r = T(1) / (T(1) + e);
  return e * r * r;
}

// Constants of the gelu forms.
template <class T> WICK_ELEMENTWISE_FN T kSqrt1_2() { return T(0.70710678118654752440); }       // 1/sqrt(2)
template <class T> WICK_ELEMENTWISE_FN T kInvSqrt2Pi() { return T(0.39894228040143267794); }    // 1/sqrt(2 pi)
template <class T> WICK_ELEMENTWISE_FN T kSqrt2OverPi() { return T(0.79788456080286535588); }   // sqrt(2/pi)
template <class T> WICK_ELEMENTWISE_FN T kGeluCubic() { return T(0.044715); }

}  // namespace emath

// --- unary ------------------------------------------------------------------------------

template <UnaryOp Op, class T>
constexpr bool unary_supports() {
  if constexpr (Op == UnaryOp::LogicalNot) return true;
  else if constexpr (Op == UnaryOp::BitwiseNot) return !std::is_floating_point_v<T>;
  else if constexpr (unary_op_is_floating(Op)) return std::is_floating_point_v<T>;
  else if constexpr (std::is_same_v<T, bool>) return Op != UnaryOp::Neg && Op != UnaryOp::Clamp;
  else return true;
}

template <UnaryOp Op, class T>
using unary_out_t = std::conditional_t<Op == UnaryOp::LogicalNot, bool, T>;

// Inside emath so that exp, floor... name the float/double overloads above, never ::exp.
namespace emath {
template <UnaryOp Op, class T, class M = LibMath>
WICK_ELEMENTWISE_FN unary_out_t<Op, T> unary_fn(T x, const UnaryParams& p) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  if constexpr (Op == UnaryOp::Neg) {
    if constexpr (kFloat) return -x;
    else return wrap_sub(T(0), x);
  } else if constexpr (Op == UnaryOp::Abs) {
    if constexpr (kFloat) return fabs(x);
    else if constexpr (std::is_signed_v<T>) return x < T(0) ? wrap_sub(T(0), x) : x;
    else return x;
  } else if constexpr (Op == UnaryOp::Sign) {
    if constexpr (kBool) return x;
    else if constexpr (kFloat) return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);  // NaN -> 0, as PyTorch
    else if constexpr (std::is_signed_v<T>) return static_cast<T>((T(0) < x) - (x < T(0)));
    else return static_cast<T>(x != T(0));
  } else if constexpr (Op == UnaryOp::Floor) {
    if constexpr (kFloat) return floor(x);
    else return x;
  } else if constexpr (Op == UnaryOp::Ceil) {
    if constexpr (kFloat) return ceil(x);
    else return x;
  } else if constexpr (Op == UnaryOp::Round) {
    if constexpr (kFloat) return rint(x);
    else return x;
  } else if constexpr (Op == UnaryOp::Trunc) {
    if constexpr (kFloat) return trunc(x);
    else return x;
  } else if constexpr (Op == UnaryOp::Relu) {
    if constexpr (std::is_signed_v<T> || kFloat) return x < T(0) ? T(0) : x;  // NaN < 0 is false: NaN stays
    else return x;
  } else if constexpr (Op == UnaryOp::Square) {
    if constexpr (kBool) return x;
    else if constexpr (kFloat) return x * x;
    else return wrap_mul(x, x);
  } else if constexpr (Op == UnaryOp::Clamp) {
    if constexpr (kFloat) {
      // min(max(x, lo), hi) as PyTorch: lo > hi gives hi; a NaN x stays NaN.
      const T lo = static_cast<T>(p.a), hi = static_cast<T>(p.b);
      const T y = x < lo ? lo : x;
      return y > hi ? hi : y;
    } else {
      const T lo = saturate_to<T>(::ceil(p.a)), hi = saturate_to<T>(::floor(p.b));
      const T y = x < lo ? lo : x;
      return y > hi ? hi : y;
    }
  } else if constexpr (Op == UnaryOp::LeakyRelu) {
    return x > T(0) ? x : x * static_cast<T>(p.a);
  } else if constexpr (Op == UnaryOp::BitwiseNot) {
    if constexpr (kBool) return !x;
    else return static_cast<T>(~x);
  } else if constexpr (Op == UnaryOp::Exp) {
    return M::exp(x);
  } else if constexpr (Op == UnaryOp::Log) {
    return M::log(x);
  } else if constexpr (Op == UnaryOp::Log1p) {
    return M::log1p(x);
  } else if constexpr (Op == UnaryOp::Expm1) {
    return M::expm1(x);
  } else if constexpr (Op == UnaryOp::Sqrt) {
    return M::sqrt(x);
  } else if constexpr (Op == UnaryOp::Rsqrt) {
    return T(1) / M::sqrt(x);
  } else if constexpr (Op == UnaryOp::Reciprocal) {
    return T(1) / x;
  } else if constexpr (Op == UnaryOp::Sin) {
    return M::sin(x);
  } else if constexpr (Op == UnaryOp::Cos) {
    return M::cos(x);
  } else if constexpr (Op == UnaryOp::Tanh) {
    return M::tanh(x);
  } else if constexpr (Op == UnaryOp::Sigmoid) {
    return sigmoid<M>(x);
  } else if constexpr (Op == UnaryOp::Erf) {
    return M::erf(x);
  } else if constexpr (Op == UnaryOp::Tan) {
    return M::tan(x);
  } else if constexpr (Op == UnaryOp::Asin) {
    return M::asin(x);
  } else if constexpr (Op == UnaryOp::Acos) {
    return M::acos(x);
  } else if constexpr (Op == UnaryOp::Atan) {
    return M::atan(x);
  } else if constexpr (Op == UnaryOp::Sinh) {
    return M::sinh(x);
  } else if constexpr (Op == UnaryOp::Cosh) {
    return M::cosh(x);
  } else if constexpr (Op == UnaryOp::Asinh) {
    return M::asinh(x);
  } else if constexpr (Op == UnaryOp::Acosh) {
    return M::acosh(x);
  } else if constexpr (Op == UnaryOp::Atanh) {
    return M::atanh(x);
  } else if constexpr (Op == UnaryOp::Log2) {
    return M::log2(x);
  } else if constexpr (Op == UnaryOp::Log10) {
    return M::log10(x);
  } else if constexpr (Op == UnaryOp::Exp2) {
    return M::exp2(x);
  } else if constexpr (Op == UnaryOp::GeluTanh) {
    // 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as x sigmoid(2u)
    // (the same value) so the negative tail does not cancel.
    const T u = kSqrt2OverPi<T>() * (x + kGeluCubic<T>() * x * x * x);
    return x * sigmoid<M>(T(2) * u);
  } else if constexpr (Op == UnaryOp::GeluErf) {
    // x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
    return T(0.5) * x * (T(1) + M::erf(x * kSqrt1_2<T>()));
  } else if constexpr (Op == UnaryOp::Silu) {
    return x * sigmoid<M>(x);
  } else if constexpr (Op == UnaryOp::Softplus) {
    const T beta = static_cast<T>(p.a);
    const T bx = x * beta;
    return bx > static_cast<T>(p.b) ? x : M::log1p(M::exp(bx)) / beta;
  } else if constexpr (Op == UnaryOp::Erfc) {
    return M::erfc(x);  // 1 - erf(x) without the cancellation for large x
  } else if constexpr (Op == UnaryOp::LogicalNot) {
    return x == T(0);
  } else if constexpr (Op == UnaryOp::SigmoidGrad) {
    return sigmoid_grad<M>(x);
  } else if constexpr (Op == UnaryOp::TanhGrad) {
    // 1 - tanh(x)^2 = 4 sigmoid'(2x), which does not cancel for large |x|.
    return T(4) * sigmoid_grad<M>(T(2) * x);
  } else if constexpr (Op == UnaryOp::GeluTanhGrad) {
    // d/dx [x sigmoid(2u)] = sigmoid(2u) + x sigmoid'(2u) 2u'(x)
    const T k = kSqrt2OverPi<T>(), c = kGeluCubic<T>();
    const T u2 = T(2) * k * (x + c * x * x * x);
    return sigmoid<M>(u2) + x * sigmoid_grad<M>(u2) * T(2) * k * (T(1) + T(3) * c * x * x);
  } else if constexpr (Op == UnaryOp::GeluErfGrad) {
    // Phi(x) + x phi(x)
    return T(0.5) * (T(1) + M::erf(x * kSqrt1_2<T>())) + x * kInvSqrt2Pi<T>() * M::exp(T(-0.5) * x * x);
  } else {
    static_assert(Op == UnaryOp::SiluGrad, "every UnaryOp is handled above");
    // sigmoid(x) (1 + x (1 - sigmoid(x))), with 1 - sigmoid(x) = sigmoid(-x)
    return sigmoid<M>(x) * (T(1) + x * sigmoid<M>(-x));
  }
}
}  // namespace emath
using emath::unary_fn;

// Calls f.template operator()<Op>() with the runtime op as a template argument (host code).
template <class F>
decltype(auto) visit_unary_op(UnaryOp op, F&& f) {
  switch (op) {
#define WICK_CASE(e, ...) \
  case UnaryOp::e: return f.template operator()<UnaryOp::e>();
    WICK_UNARY_OPS(WICK_CASE)
#undef WICK_CASE
  }
  return f.template operator()<UnaryOp::Neg>();  // unreachable: every enumerator is handled above
}

// --- binary -----------------------------------------------------------------------------

template <BinaryOp Op, class T>
constexpr bool binary_supports() {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  if constexpr (binary_op_is_floating(Op)) return kFloat;
  else if constexpr (binary_op_is_bitwise(Op)) return !kFloat;
  else if constexpr (binary_op_is_shift(Op)) return !kFloat && !std::is_same_v<T, bool>;
  else if constexpr (Op == BinaryOp::LogicalAnd || Op == BinaryOp::LogicalOr) return std::is_same_v<T, bool>;
  else if constexpr (std::is_same_v<T, bool>)
    return Op != BinaryOp::Sub && Op != BinaryOp::Pow && Op != BinaryOp::Remainder && Op != BinaryOp::FloorDivide &&
           Op != BinaryOp::Fmod;
  else return true;
}

template <BinaryOp Op, class T>
using binary_out_t = std::conditional_t<(Op >= BinaryOp::Eq), bool, T>;

namespace emath {
template <BinaryOp Op, class T>
WICK_ELEMENTWISE_FN binary_out_t<Op, T> binary_fn(T a, T b) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  if constexpr (Op == BinaryOp::Add) {
    if constexpr (kBool) return a || b;
    else if constexpr (kFloat) return a + b;
    else return wrap_add(a, b);
  } else if constexpr (Op == BinaryOp::Sub) {
    if constexpr (kFloat) return a - b;
    else return wrap_sub(a, b);
  } else if constexpr (Op == BinaryOp::Mul) {
    if constexpr (kBool) return a && b;
    else if constexpr (kFloat) return a * b;
    else return wrap_mul(a, b);
  } else if constexpr (Op == BinaryOp::Div) {
    return a / b;
  } else if constexpr (Op == BinaryOp::Pow) {
    if constexpr (kFloat) {
      return pow(a, b);
    } else {
      if constexpr (std::is_signed_v<T>) {
        if (b < T(0)) return a == T(1) ? T(1) : a == T(-1) ? ((b & T(1)) ? T(-1) : T(1)) : T(0);
      }
      T result = T(1), base = a;
      for (T e = b; e != T(0); e = static_cast<T>(e >> 1)) {
        if (e & T(1)) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
      }
      return result;
    }
  } else if constexpr (Op == BinaryOp::Minimum) {
    if constexpr (kBool) return a && b;
    else return (is_nan(a) || a < b) ? a : b;  // a NaN b falls to b
  } else if constexpr (Op == BinaryOp::Maximum) {
    if constexpr (kBool) return a || b;
    else return (is_nan(a) || a > b) ? a : b;
  } else if constexpr (Op == BinaryOp::Remainder) {
    if constexpr (kFloat) {
      T r = fmod(a, b);
      if (r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
      return r;
    } else {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);  // INT_MIN % -1 traps on x86
      }
      T r = static_cast<T>(a % b);
      if constexpr (std::is_signed_v<T>) {
        if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
      }
      return r;
    }
  } else if constexpr (Op == BinaryOp::FloorDivide) {
    if constexpr (kFloat) {
      // Python's float floor division: exact quotient from fmod, then rounded to the
      // nearest integer, which floor(a / b) alone gets wrong when a / b rounds up.
      if (b == T(0)) return a / b;
      const T mod = fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
      if (div == T(0)) return copysign(T(0), a / b);
      T fl = floor(div);
      if (div - fl > T(0.5)) fl += T(1);
      return fl;
    } else {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return wrap_sub(T(0), a);  // INT_MIN / -1 traps on x86
      }
      T q = static_cast<T>(a / b);
      if constexpr (std::is_signed_v<T>) {
        if (a % b != T(0) && ((a < T(0)) != (b < T(0)))) q = static_cast<T>(q - 1);
      }
      return q;
    }
  } else if constexpr (Op == BinaryOp::Atan2) {
    return atan2(a, b);
  } else if constexpr (Op == BinaryOp::Fmod) {
    // C's fmod: the result takes the dividend's sign. Integers by 0 give 0 where no error can
    // be raised (CUDA); the CPU kernel refuses them first, as PyTorch's CPU does.
    if constexpr (kFloat) {
      return fmod(a, b);
    } else {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);  // INT_MIN % -1 traps on x86
      }
      return static_cast<T>(a % b);
    }
  } else if constexpr (Op == BinaryOp::BitwiseAnd) {
    if constexpr (kBool) return a && b;
    else return static_cast<T>(a & b);
  } else if constexpr (Op == BinaryOp::BitwiseOr) {
    if constexpr (kBool) return a || b;
    else return static_cast<T>(a | b);
  } else if constexpr (Op == BinaryOp::BitwiseXor) {
    if constexpr (kBool) return a != b;
    else return static_cast<T>(a ^ b);
  } else if constexpr (Op == BinaryOp::LeftShift) {
    // Through the unsigned type: shifting a negative signed value left is undefined in C++.
    if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= T(sizeof(T) * 8)) return T(0);
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << b);
  } else if constexpr (Op == BinaryOp::RightShift) {
    if (static_cast<std::make_signed_t<T>>(b) < 0 || b >= T(sizeof(T) * 8 - std::is_signed_v<T>)) {
      if constexpr (std::is_signed_v<T>) return a < T(0) ? T(-1) : T(0);
      else return T(0);
    }
    return static_cast<T>(a >> b);  // arithmetic for signed types (C++20)
  } else if constexpr (Op == BinaryOp::Eq) {
    return a == b;
  } else if constexpr (Op == BinaryOp::Ne) {
    return a != b;
  } else if constexpr (Op == BinaryOp::Lt) {
    return a < b;
  } else if constexpr (Op == BinaryOp::Le) {
    return a <= b;
  } else if constexpr (Op == BinaryOp::Gt) {
    return a > b;
  } else if constexpr (Op == BinaryOp::Ge) {
    return a >= b;
  } else if constexpr (Op == BinaryOp::LogicalAnd) {
    return a && b;
  } else {
    static_assert(Op == BinaryOp::LogicalOr, "every BinaryOp is handled above");
    return a || b;
  }
}
}  // namespace emath
using emath::binary_fn;

// Calls f.template operator()<Op>() with the runtime op as a template argument (host code).
template <class F>
decltype(auto) visit_binary_op(BinaryOp op, F&& f) {
  switch (op) {
#define WICK_CASE(e, ...) \
  case BinaryOp::e: return f.template operator()<BinaryOp::e>();
    WICK_BINARY_OPS(WICK_CASE)
#undef WICK_CASE
  }
  return f.template operator()<BinaryOp::Add>();  // unreachable: every enumerator is handled above
}

}  // namespace wick
