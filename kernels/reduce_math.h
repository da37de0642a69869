#pragma once
// The math of every ReduceOp, shared by the CPU and CUDA reduction kernels (and the CUDA
// softmax and cross-entropy, which fold rows with LseState): these functions ARE the
// semantics of sum, prod, max/min (with and without index), all/any, mean, var, the p-norms
// and logsumexp. The kernels own only the loops: which elements meet in which order, and
// the accumulation type A (the CPU folds floating inputs in double, CUDA in float for 16-
// and 32-bit floats, see kernels/cuda/reduce.cuh's acc_t; integers in int64).
//
//   State                      what a partial reduction carries
//   identity()                 the empty partial
//   add(s, x, r)               s with element x (its compute type, compute_t) at reduced index r
//   combine(a, b)              two partials of disjoint elements: associative and commutative,
//                              so lanes, threads and chunks may meet in any grouping
//   result(s)                  the output value (in A)
//
// Rules (PyTorch's): integer sums and products wrap around; max/min and the inf-norm let a
// NaN win; max/min with index take the first occurrence (a NaN over any number, the first
// NaN); all/any count NaN as nonzero; var is Welford's running (count, mean, M2) merged by
// Chan's formula, divided by max(0, n - correction), so a constant slice gives exactly 0 and
// n <= correction gives inf or NaN; logsumexp is the running (max, sum of exp(x - max)),
// with -inf adding nothing, +inf giving +inf and NaN giving NaN.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/dtype.h>

#include "kernels/elementwise_math.h"

namespace wick {

// The widest accumulator for elements of type T: double for floating types (16-bit ones
// included), int64 for integers and bool. The CPU's sums, products, norms, var and
// logsumexp and its scans' sums and products accumulate in it.
template <class T>
using widest_acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, int64_t>;

// A value and its index (max/min with index; cummax/cummin in kernels/scan_math.h).
template <class A>
struct ValueIndex {
  A v;
  int64_t i;
};

// Which end max/min (and all/any) take: fixed at compile time, as the CPU's loops need to
// vectorise, or chosen at run time, so that one CUDA kernel serves both ends.
template <bool kValue>
struct Fixed {
  WICK_HD constexpr bool get() const { return kValue; }
};
struct AtRunTime {
  bool value;
  WICK_HD bool get() const { return value; }
};

// The value every other value equals or beats for max (is_max) or min.
template <class A>
WICK_HD A reduce_worst(bool is_max) {
  using L = std::numeric_limits<A>;
  if constexpr (L::has_infinity) return is_max ? -L::infinity() : L::infinity();
  else return is_max ? L::lowest() : L::max();
}

// The larger (is_max) or smaller of a and b; a NaN wins, the first of two NaNs. Written as
// one select so that the CPU's loops vectorise it.
template <class A>
WICK_HD A reduce_pick(A a, A b, bool is_max) {
  return ((is_max ? b > a : b < a) || (emath::is_nan(b) && !emath::is_nan(a))) ? b : a;
}

// a + b and a * b; integers wrap around (two's complement), as PyTorch's do. The scans'
// sums and products (kernels/scan_math.h) use them too.
template <class A>
WICK_HD A reduce_add(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) return a + b;
  else return emath::wrap_add(a, b);
}
template <class A>
WICK_HD A reduce_mul(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) return a * b;
  else return emath::wrap_mul(a, b);
}

// sum x, divided by `divisor`: 1 for sum, n for mean (one functor, so one kernel serves
// both; x / 1 is x, integers included).
template <class A>
struct SumFn {
  using State = A;
  A divisor = A(1);
  WICK_HD State identity() const { return A(0); }
  template <class C>
  WICK_HD State add(State s, C x, int64_t) const { return reduce_add(s, static_cast<A>(x)); }
  WICK_HD State combine(State a, State b) const { return reduce_add(a, b); }
  WICK_HD A result(State s) const { return s / divisor; }
};

// sum x with NaN counted as 0 (torch.nansum).
template <class A>
struct NanSumFn : SumFn<A> {
  template <class C>
  WICK_HD A add(A s, C x, int64_t) const {
    const A v = static_cast<A>(x);
    return reduce_add(s, emath::is_nan(v) ? A(0) : v);
  }
};

template <class A>
struct ProdFn {
  using State = A;
  WICK_HD State identity() const { return A(1); }
  template <class C>
  WICK_HD State add(State s, C x, int64_t) const { return combine(s, static_cast<A>(x)); }
  WICK_HD State combine(State a, State b) const { return reduce_mul(a, b); }
  WICK_HD A result(State s) const { return s; }
};

// max (is_max) or min; IsMax is Fixed<...> or AtRunTime.
template <class IsMax, class A>
struct ExtremumFn {
  using State = A;
  IsMax is_max;
  WICK_HD State identity() const { return reduce_worst<A>(is_max.get()); }
  template <class C>
  WICK_HD State add(State s, C x, int64_t) const { return reduce_pick(s, static_cast<A>(x), is_max.get()); }
  WICK_HD State combine(State a, State b) const { return reduce_pick(a, b, is_max.get()); }
  WICK_HD A result(State s) const { return s; }
};

// all (is_all) or any of x != 0. A is an integer (0 or 1).
template <class IsAll, class A>
struct LogicalFn {
  using State = A;
  IsAll is_all;
  WICK_HD State identity() const { return is_all.get() ? A(1) : A(0); }
  template <class C>
  WICK_HD State add(State s, C x, int64_t) const { return combine(s, x != C(0) ? A(1) : A(0)); }
  WICK_HD State combine(State a, State b) const { return is_all.get() ? (a & b) : (a | b); }
  WICK_HD bool result(State s) const { return s != 0; }
};

// Welford's running count, mean and sum of squared deviations.
template <class A>
struct Welford {
  int64_t n;
  A mean;
  A m2;
};

// var with `correction` (1: the sample variance, 0: the population's).
template <class A>
struct VarFn {
  using State = Welford<A>;
  A correction;
  WICK_HD State identity() const { return {0, A(0), A(0)}; }
  template <class C>
  WICK_HD State add(State s, C x, int64_t) const {
    const A v = static_cast<A>(x);
    s.n += 1;
    const A d = v - s.mean;
    s.mean += d / static_cast<A>(s.n);
    s.m2 += d * (v - s.mean);
    return s;
  }
  // Chan et al.: no sum of squares minus squared sum, whose cancellation would cost digits.
  WICK_HD State combine(State a, State b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const int64_t n = a.n + b.n;
    const A d = b.mean - a.mean;
    const A wb = static_cast<A>(b.n) / static_cast<A>(n);
    return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * static_cast<A>(a.n) * wb};
  }
  WICK_HD A result(State s) const {
    const A n = static_cast<A>(s.n);
    return s.m2 / (n > correction ? n - correction : A(0));
  }
};

// The p-norms (p > 0, checked by the entry point): 1 sums |x|, 2 is sqrt(sum x^2), inf is
// max |x| (a NaN wins), any other p is (sum |x|^p)^(1/p).
enum class NormKind : int { One, Two, Inf, General };

template <NormKind K, class A>
struct NormFn {
  using State = A;
  A p;  // General only
  WICK_HD State identity() const { return A(0); }
  template <class C>
  WICK_HD State add(State s, C x, int64_t) const {
    const A v = emath::fabs(static_cast<A>(x));
    if constexpr (K == NormKind::One) return s + v;
    else if constexpr (K == NormKind::Two) return s + v * v;
    else if constexpr (K == NormKind::Inf) return reduce_pick(s, v, true);
    else return s + emath::pow(v, p);
  }
  WICK_HD State combine(State a, State b) const {
    if constexpr (K == NormKind::Inf) return reduce_pick(a, b, true);
    else return a + b;
  }
  WICK_HD A result(State s) const {
    if constexpr (K == NormKind::Two) return emath::LibMath::sqrt(s);
    else if constexpr (K == NormKind::General) return emath::pow(s, A(1) / p);
    else return s;
  }
};

// Running max m and sum s of exp(x - m): log(sum exp(x)) = m + log(s). -inf elements add
// nothing, +inf makes the result +inf, a NaN makes s NaN for good (it survives every merge).
template <class A>
struct LseState {
  A m;
  A s;
};

template <class A>
WICK_HD LseState<A> lse_identity() {
  return {-std::numeric_limits<A>::infinity(), A(0)};
}

template <class A>
WICK_HD LseState<A> lse_merge(LseState<A> a, LseState<A> b) {
  if (b.m > a.m) {
    const LseState<A> t = a;
    a = b;
    b = t;
  }
  // a.m >= b.m now. Skip the exponential where it would be exp(nan) (both -inf or both +inf).
  constexpr A kInf = std::numeric_limits<A>::infinity();
  const A w = (b.m == -kInf || a.m == kInf) ? A(0) : emath::LibMath::exp(b.m - a.m);
  return {a.m, a.s + b.s * w};
}

template <class A>
WICK_HD LseState<A> lse_add(LseState<A> a, A x) {
  if (emath::is_nan(x)) return {a.m, std::numeric_limits<A>::quiet_NaN()};
  if (x == -std::numeric_limits<A>::infinity()) return a;
  return lse_merge(a, LseState<A>{x, A(1)});
}

template <class A>
WICK_HD A lse_result(LseState<A> a) {
  if (emath::is_nan(a.s)) return a.s;
  if (a.m == std::numeric_limits<A>::infinity() || a.m == -std::numeric_limits<A>::infinity()) return a.m;
  return a.m + emath::LibMath::log(a.s);
}

template <class A>
struct LogSumExpFn {
  using State = LseState<A>;
  WICK_HD State identity() const { return lse_identity<A>(); }
  template <class C>
  WICK_HD State add(State s, C x, int64_t) const { return lse_add(s, static_cast<A>(x)); }
  WICK_HD State combine(State a, State b) const { return lse_merge(a, b); }
  WICK_HD A result(State s) const { return lse_result(s); }
};

// max (is_max) or min with the index of its first occurrence. The identity's index is the
// largest possible, so it loses every tie.
template <class IsMax, class A>
struct ArgExtremumFn {
  using State = ValueIndex<A>;
  IsMax is_max;
  WICK_HD State identity() const { return {reduce_worst<A>(is_max.get()), std::numeric_limits<int64_t>::max()}; }
  template <class C>
  WICK_HD State add(State s, C x, int64_t r) const { return combine(s, State{static_cast<A>(x), r}); }
  // Ties (and two NaNs) go to the smaller index, so any grouping gives the first occurrence.
  WICK_HD State combine(State a, State b) const {
    const bool an = emath::is_nan(a.v), bn = emath::is_nan(b.v);
    if (an != bn) return an ? a : b;
    if (an || a.v == b.v) return a.i <= b.i ? a : b;
    return (is_max.get() ? a.v > b.v : a.v < b.v) ? a : b;
  }
};

// One of two reductions with the same state, chosen at run time (the p-norms' kinds): one
// kernel serves all; the choice is uniform across a launch, so it never diverges on a GPU.
template <class F, class G>
struct EitherFn {
  using State = typename F::State;
  static_assert(std::is_same_v<State, typename G::State>, "EitherFn: one state for both");
  bool use_f;
  F f;
  G g;
  WICK_HD State identity() const { return use_f ? f.identity() : g.identity(); }
  template <class C>
  WICK_HD State add(State s, C x, int64_t r) const { return use_f ? f.add(s, x, r) : g.add(s, x, r); }
  WICK_HD State combine(State a, State b) const { return use_f ? f.combine(a, b) : g.combine(a, b); }
  WICK_HD auto result(State s) const { return use_f ? f.result(s) : g.result(s); }
};

template <class A>
using NormEither = EitherFn<EitherFn<NormFn<NormKind::One, A>, NormFn<NormKind::Two, A>>,
                            EitherFn<NormFn<NormKind::Inf, A>, NormFn<NormKind::General, A>>>;

// The p-norm of p > 0 (checked by the entry point), its kind chosen at run time.
template <class A>
NormEither<A> norm_fn(double p) {
  const bool low = p == 1 || p == 2;
  return {low, {p == 1, {}, {}}, {std::isinf(p), {}, {static_cast<A>(p)}}};
}

// The kernels' view of the table's rules (WICK_REDUCE_TABLE, wick/tensor/op_kinds.h): the
// element types an op's kernels take, and the type they write.
template <ReduceOp Op, class T>
inline constexpr bool reduce_accepts = reduce_op_input(Op) == ReduceInput::Any || std::is_floating_point_v<compute_t<T>>;

template <ReduceOp Op, class T>
using reduce_out_t = std::conditional_t<
    reduce_op_output(Op) == ReduceOutput::Truth, bool,
    std::conditional_t<reduce_op_output(Op) == ReduceOutput::Widened && !std::is_floating_point_v<compute_t<T>>,
                       int64_t, T>>;

// A device's choices for reduce_fn: the accumulator of sums, products, means, norms and
// logsumexp (Wide<T>), of max and min (Exact<T>: they round nothing), of all and any (Flag, a
// 0/1 integer), and whether max/min and all/any choose their end at run time (AtRunTime: one
// kernel serves both ends) or at compile time (Fixed: loops that vectorise).
template <template <class> class Wide, template <class> class Exact, class Flag, bool kEndAtRunTime>
struct ReducePolicy {
  template <class T>
  using wide = Wide<T>;
  template <class T>
  using exact = Exact<T>;
  using flag = Flag;
  template <bool kValue>
  static auto end() {
    if constexpr (kEndAtRunTime) return AtRunTime{kValue};
    else return Fixed<kValue>{};
  }
};

// Every op's functor, for a device's ReducePolicy P: the device files dispatch each ReduceOp
// through reduce_fn, so an op needs a line here and no case in them (a device may still run
// an op with loops of its own: the CPU's var, norms and logsumexp). `param` is var's
// correction or the norm's p, `n` how many elements each output folds.
template <ReduceOp Op, class P, class T>
auto reduce_fn(double param, int64_t n) {
  using W = typename P::template wide<T>;
  if constexpr (Op == ReduceOp::Sum) return SumFn<W>{};
  else if constexpr (Op == ReduceOp::Mean) return SumFn<W>{static_cast<W>(n)};
  else if constexpr (Op == ReduceOp::Prod) return ProdFn<W>{};
  else if constexpr (Op == ReduceOp::Max || Op == ReduceOp::Min) {
    auto end = P::template end<Op == ReduceOp::Max>();
    return ExtremumFn<decltype(end), typename P::template exact<T>>{end};
  } else if constexpr (Op == ReduceOp::All || Op == ReduceOp::Any) {
    auto end = P::template end<Op == ReduceOp::All>();
    return LogicalFn<decltype(end), typename P::flag>{end};
  }
  // Welford in double on every device: a float running mean is rounded to ulp(mean)/2, 3e-3
  // relative error on float32 columns of 64 values around 1e4 with spread 1.
  else if constexpr (Op == ReduceOp::Var) return VarFn<double>{static_cast<double>(param)};
  else if constexpr (Op == ReduceOp::NormP) return norm_fn<W>(param);
  else if constexpr (Op == ReduceOp::LogSumExp) return LogSumExpFn<W>{};
  // An integer is never NaN: its nansum is its sum, and shares that kernel.
  else if constexpr (Op == ReduceOp::NanSum && std::is_floating_point_v<compute_t<T>>) return NanSumFn<W>{};
  else if constexpr (Op == ReduceOp::NanSum) return SumFn<W>{};
  else static_assert(Op != Op, "reduce_fn: a ReduceOp without a functor");
}

}  // namespace wick
