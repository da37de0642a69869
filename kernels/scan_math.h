#pragma once
// The combining step of every ScanOp, shared by the CPU and CUDA scan kernels: these
// functions ARE the semantics of cumsum, cumprod, cummax, cummin and logcumsumexp.
//
//   ScanFn<Op, A>::State           what a prefix carries (A = the accumulation type)
//   identity()                     the empty prefix
//   leaf(x, i)                     element i, x already converted to A
//   combine(earlier, later)        associative (not commutative): the parallel CUDA scan
//                                  combines partial prefixes in any grouping, in order
//   value(s), index(s)             what is stored (index: Max and Min only)
//
// Rules (PyTorch's): integer sums and products wrap around; cummax/cummin take the last
// of equal values (>= / <=), and a NaN, once seen, stays, with the index of the latest
// NaN; logcumsumexp adds in log space as max + log1p(exp(min - max)), so it never
// overflows, with -inf + -inf = -inf, +inf + anything = +inf and NaN propagating.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <wick/tensor/dispatch.h>

#include "kernels/elementwise_math.h"
#include "kernels/reduce_math.h"

namespace wick {

template <ScanOp Op, class A>
struct ScanFn;

template <class A>
struct ScanFn<ScanOp::Sum, A> {
  using State = A;
  static constexpr bool kHasIndex = false;
  static WICK_HD State identity() { return A(0); }
  static WICK_HD State leaf(A x, int64_t) { return x; }
  static WICK_HD State combine(State a, State b) { return reduce_add(a, b); }
  static WICK_HD A value(State s) { return s; }
};

template <class A>
struct ScanFn<ScanOp::Prod, A> {
  using State = A;
  static constexpr bool kHasIndex = false;
  static WICK_HD State identity() { return A(1); }
  static WICK_HD State leaf(A x, int64_t) { return x; }
  static WICK_HD State combine(State a, State b) { return reduce_mul(a, b); }
  static WICK_HD A value(State s) { return s; }
};

template <class A>
struct ScanFn<ScanOp::LogSumExp, A> {
  using State = A;
  static constexpr bool kHasIndex = false;
  static WICK_HD State identity() { return -INFINITY; }
  static WICK_HD State leaf(A x, int64_t) { return x; }
  static WICK_HD State combine(State a, State b) {
    if (emath::is_nan(a) || emath::is_nan(b)) return a + b;  // NaN
    const A lo = a < b ? a : b, hi = a < b ? b : a;
    // Equal infinities: exp(lo - hi) would be exp(nan).
    if (lo == hi && (lo == A(INFINITY) || lo == A(-INFINITY))) return lo;
    return hi + emath::LibMath::log1p(emath::LibMath::exp(lo - hi));
  }
  static WICK_HD A value(State s) { return s; }
};

// index < 0 marks the empty prefix, so that no value (not even -inf or the type's lowest)
// has to stand for it.
template <bool IsMax, class A>
struct ScanExtremumFn {
  using State = ValueIndex<A>;
  static constexpr bool kHasIndex = true;
  static WICK_HD State identity() { return {A(0), -1}; }
  static WICK_HD State leaf(A x, int64_t i) { return {x, i}; }
  static WICK_HD State combine(State a, State b) {
    if (b.i < 0) return a;
    if (a.i < 0 || emath::is_nan(b.v)) return b;
    if (emath::is_nan(a.v)) return a;
    if constexpr (IsMax) return b.v >= a.v ? b : a;
    else return b.v <= a.v ? b : a;
  }
  static WICK_HD A value(State s) { return s.v; }
  static WICK_HD int64_t index(State s) { return s.i; }
};

template <class A>
struct ScanFn<ScanOp::Max, A> : ScanExtremumFn<true, A> {};
template <class A>
struct ScanFn<ScanOp::Min, A> : ScanExtremumFn<false, A> {};

// Calls f.template operator()<Op>() with the ScanOp `op` as a template argument.
template <class F>
decltype(auto) visit_scan_op(ScanOp op, F&& f) {
  switch (op) {
    case ScanOp::Sum: return f.template operator()<ScanOp::Sum>();
    case ScanOp::Prod: return f.template operator()<ScanOp::Prod>();
    case ScanOp::Max: return f.template operator()<ScanOp::Max>();
    case ScanOp::Min: return f.template operator()<ScanOp::Min>();
    case ScanOp::LogSumExp: break;
  }
  return f.template operator()<ScanOp::LogSumExp>();
}

// The output element type of a scan of T: int64 for sums and products of bool and integers.
template <ScanOp Op, class T>
using scan_out_t = std::conditional_t<(Op == ScanOp::Sum || Op == ScanOp::Prod) && !std::is_floating_point_v<compute_t<T>>,
                                      int64_t, T>;

}  // namespace wick
