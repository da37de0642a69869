// Reductions on the CPU: sum, prod, mean, var, p-norms, logsumexp, all/any, max/min with and
// without indices. Each writes `=` into a fresh output. Floating sums accumulate in double,
// integer ones in int64 (wrapping around on overflow). Var and logsumexp make two passes: a per-output center (the mean,
// taken relative to the slice's first element, or the max) first, then the sum of (x - center)^2 or exp(x - center),
// which keeps them stable.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/convert.h"
#include "kernels/elementwise_math.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/reduce_loops.h"

namespace wick::cpu {

namespace {

template <class T>
inline constexpr bool kFloating = std::is_floating_point_v<compute_t<T>>;

using emath::is_nan;

// a + b and a * b; integers wrap around (two's complement) like PyTorch's.
template <class A>
A add(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) return a + b;
  else return emath::wrap_add(a, b);
}
template <class A>
A mul(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) return a * b;
  else return emath::wrap_mul(a, b);
}

// The value every other value beats for max (kMax) or min.
template <class C, bool kMax>
C worst() {
  using L = std::numeric_limits<C>;
  if constexpr (L::has_infinity) return kMax ? -L::infinity() : L::infinity();
  else return kMax ? L::lowest() : L::max();
}

// Whether v replaces the current best b: strictly better, or the first NaN.
template <bool kMax, class C>
bool beats(C v, C b) {
  if constexpr (kMax) return v > b || (is_nan(v) && !is_nan(b));
  else return v < b || (is_nan(v) && !is_nan(b));
}

// sum x (also the first pass of mean and var).
template <class T>
struct SumR {
  using Acc = std::conditional_t<kFloating<T>, double, int64_t>;
  static constexpr bool kCentered = false;
  Acc init() const { return 0; }
  Acc step(Acc a, T x, double, int64_t) const { return add(a, static_cast<Acc>(static_cast<compute_t<T>>(x))); }
  Acc combine(Acc a, Acc b) const { return add(a, b); }
};

// prod x.
template <class T>
struct ProdR {
  using Acc = std::conditional_t<kFloating<T>, double, int64_t>;
  static constexpr bool kCentered = false;
  Acc init() const { return 1; }
  Acc step(Acc a, T x, double, int64_t) const { return mul(a, static_cast<Acc>(static_cast<compute_t<T>>(x))); }
  Acc combine(Acc a, Acc b) const { return mul(a, b); }
};

// max (or min) x; NaN wins. Also |x| for the inf-norm. Bool is held as uint8 (a
// std::vector<bool> has no data()).
template <class T, bool kMax, bool kAbs = false>
struct ExtremumR {
  using Acc = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;
  static constexpr bool kCentered = false;
  Acc init() const { return kAbs ? Acc(0) : worst<Acc, kMax>(); }
  Acc step(Acc a, T x, double, int64_t) const {
    Acc v = static_cast<Acc>(x);
    if constexpr (kAbs) v = v < 0 ? -v : v;
    return combine(a, v);
  }
  Acc combine(Acc a, Acc b) const { return beats<kMax>(b, a) ? b : a; }
};

// max (or min) x with the index of its first occurrence; the first NaN wins.
template <class T, bool kMax>
struct ArgExtremumR {
  struct Acc {
    compute_t<T> v;
    int64_t i;  // -1: nothing seen yet
  };
  static constexpr bool kCentered = false;
  Acc init() const { return {worst<compute_t<T>, kMax>(), -1}; }
  Acc step(Acc a, T x, double, int64_t r) const { return combine(a, Acc{static_cast<compute_t<T>>(x), r}); }
  // A unit-stride run in two vectorisable passes: the extremum (NaNs noted apart), then the
  // first position holding it.
  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t first) const
    requires(!std::is_same_v<T, bool>)
  {
    using C = compute_t<T>;
    if (n == 0) return a;
    // kLanes running extremums seeded with worst(), which every value equals or beats, so the
    // result is always one of the elements. Not `omp simd reduction(max : best)`: clang seeds
    // that reduction's private copies with the lowest *finite* value, so a run of -inf gave
    // -DBL_MAX, which no element equals, and the scan below ran past the end of the run.
    C lane[kLanes];
    int lane_nan[kLanes];
    for (int k = 0; k < kLanes; ++k) {
      lane[k] = worst<C, kMax>();
      lane_nan[k] = 0;
    }
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
      for (int k = 0; k < kLanes; ++k) {
        const C v = static_cast<C>(p[i + k]);
        lane_nan[k] |= is_nan(v);
        lane[k] = (kMax ? lane[k] < v : v < lane[k]) ? v : lane[k];
      }
    }
    C best = worst<C, kMax>();
    int nan = 0;
    for (int k = 0; k < kLanes; ++k) {
      nan |= lane_nan[k];
      best = (kMax ? best < lane[k] : lane[k] < best) ? lane[k] : best;
    }
    for (; i < n; ++i) {
      const C v = static_cast<C>(p[i]);
      nan |= is_nan(v);
      best = (kMax ? best < v : v < best) ? v : best;
    }
    // The first i with hit(p[i]): blocks are tested with a vector reduction and only the
    // block that hits is scanned one by one.
    const auto hit = [&](int64_t i) { return nan ? is_nan(static_cast<C>(p[i])) : static_cast<C>(p[i]) == best; };
    i = 0;
    for (; i + 64 <= n; i += 64) {
      int any = 0;
#pragma omp simd reduction(| : any)
      for (int64_t k = i; k < i + 64; ++k) any |= hit(k);
      if (any) break;
    }
    while (i < n && !hit(i)) ++i;
    WICK_CHECK(i < n, "max/min with index: no element of a run of ", n, " equals its extremum ", best);
    return combine(a, Acc{static_cast<C>(p[i]), first + i});
  }
  // Order-free: ties (and two NaNs) go to the smaller index, so lanes and chunks may be
  // combined in any grouping.
  Acc combine(Acc a, Acc b) const {
    if (b.i < 0) return a;
    if (a.i < 0 || beats<kMax>(b.v, a.v)) return b;
    if (beats<kMax>(a.v, b.v)) return a;
    return b.i < a.i ? b : a;
  }
};

// all (kAll) or any of x != 0.
template <class T, bool kAll>
struct LogicalR {
  using Acc = uint8_t;
  static constexpr bool kCentered = false;
  Acc init() const { return kAll ? 1 : 0; }
  Acc step(Acc a, T x, double, int64_t) const { return combine(a, static_cast<compute_t<T>>(x) != 0); }
  Acc combine(Acc a, Acc b) const { return kAll ? (a & b) : (a | b); }
};

// sum (x - center)^2: the second pass of var.
template <class T>
struct SquaredDeviationR {
  using Acc = double;
  static constexpr bool kCentered = true;
  Acc init() const { return 0; }
  Acc step(Acc a, T x, double c, int64_t) const {
    double d = static_cast<double>(static_cast<compute_t<T>>(x)) - c;
    return a + d * d;
  }
  Acc combine(Acc a, Acc b) const { return a + b; }
};

// sum (x - center): var's first pass, centred on each slice's first element.
template <class T>
struct DeviationSumR {
  using Acc = double;
  static constexpr bool kCentered = true;
  Acc init() const { return 0; }
  Acc step(Acc a, T x, double c, int64_t) const { return a + (static_cast<double>(static_cast<compute_t<T>>(x)) - c); }
  Acc combine(Acc a, Acc b) const { return a + b; }
};

// sum exp(x - center): the second pass of logsumexp.
template <class T>
struct ShiftedExpR {
  using Acc = double;
  static constexpr bool kCentered = true;
  Acc init() const { return 0; }
  Acc step(Acc a, T x, double c, int64_t) const {
    return a + std::exp(static_cast<double>(static_cast<compute_t<T>>(x)) - c);
  }
  Acc combine(Acc a, Acc b) const { return a + b; }
};

// sum |x|^p for p = 1, 2 (kP) or any p (kP == 0, p given).
template <class T, int kP>
struct PowerSumR {
  using Acc = double;
  static constexpr bool kCentered = false;
  double p = 0;
  Acc init() const { return 0; }
  Acc step(Acc a, T x, double, int64_t) const {
    double v = static_cast<double>(static_cast<compute_t<T>>(x));
    if constexpr (kP == 1) return a + std::fabs(v);
    else if constexpr (kP == 2) return a + v * v;
    else return a + std::pow(std::fabs(v), p);
  }
  Acc combine(Acc a, Acc b) const { return a + b; }
};

// out[o] = finish(acc[o], o), converted to Out.
template <class Out, class Acc, class F>
void write_out(const Tensor& out, const std::vector<Acc>& acc, F&& finish) {
  Out* o = out.data<Out>();
  parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = convert<Out>(finish(acc[i], i));
  });
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& in, const ReducePlan& plan, double param) {
  const T* p = static_cast<const T*>(in.data_ptr());
  const auto same = [](auto a, int64_t) { return a; };
  using SumOut = std::conditional_t<kFloating<T>, T, int64_t>;
  switch (op) {
    case ReduceOp::Sum: return write_out<SumOut>(out, reduce_to_acc(SumR<T>{}, plan, p), same);
    case ReduceOp::Prod: return write_out<SumOut>(out, reduce_to_acc(ProdR<T>{}, plan, p), same);
    case ReduceOp::Max: return write_out<T>(out, reduce_to_acc(ExtremumR<T, true>{}, plan, p), same);
    case ReduceOp::Min: return write_out<T>(out, reduce_to_acc(ExtremumR<T, false>{}, plan, p), same);
    case ReduceOp::All: return write_out<bool>(out, reduce_to_acc(LogicalR<T, true>{}, plan, p), same);
    case ReduceOp::Any: return write_out<bool>(out, reduce_to_acc(LogicalR<T, false>{}, plan, p), same);
    default: break;
  }
  if constexpr (!kFloating<T>) {
    throw_unsupported_dtype(reduce_op_name(op), Device::cpu(), in.dtype());
  } else {
    const double n = static_cast<double>(plan.reduce_numel);
    switch (op) {
      case ReduceOp::Mean:
        return write_out<T>(out, reduce_to_acc(SumR<T>{}, plan, p), [&](double s, int64_t) { return s / n; });
      case ReduceOp::Var: {
        // The mean as first + mean(x - first): a constant slice then has deviations of
        // exactly 0 however sum / n would round, so its var is 0 (or 0/0 = NaN past the
        // correction), as PyTorch's Welford kernel gives, and std's gradient there is 0.
        std::vector<double> mean(static_cast<size_t>(plan.out_numel), 0.0);
        if (plan.reduce_numel > 0)
          for (int64_t o = 0; o < plan.out_numel; ++o)
            mean[o] = static_cast<double>(static_cast<compute_t<T>>(p[offset_of(plan.kept, o)]));
        const std::vector<double> shifted = reduce_to_acc(DeviationSumR<T>{}, plan, p, mean.data());
        for (size_t o = 0; o < mean.size(); ++o) mean[o] += shifted[o] / n;
        const double dof = std::max(0.0, n - param);  // param: the correction
        return write_out<T>(out, reduce_to_acc(SquaredDeviationR<T>{}, plan, p, mean.data()),
                            [&](double s, int64_t) { return s / dof; });
      }
      case ReduceOp::NormP: {
        const auto root = [&](double s, int64_t) { return std::pow(s, 1.0 / param); };
        if (std::isinf(param)) return write_out<T>(out, reduce_to_acc(ExtremumR<T, true, true>{}, plan, p), same);
        if (param == 1) return write_out<T>(out, reduce_to_acc(PowerSumR<T, 1>{}, plan, p), same);
        if (param == 2)
          return write_out<T>(out, reduce_to_acc(PowerSumR<T, 2>{}, plan, p),
                              [](double s, int64_t) { return std::sqrt(s); });
        return write_out<T>(out, reduce_to_acc(PowerSumR<T, 0>{param}, plan, p), root);
      }
      case ReduceOp::LogSumExp: {
        std::vector<compute_t<T>> mx = reduce_to_acc(ExtremumR<T, true>{}, plan, p);
        std::vector<double> shift(mx.begin(), mx.end());
        // An infinite or NaN max is the answer (and would make x - max NaN).
        return write_out<T>(out, reduce_to_acc(ShiftedExpR<T>{}, plan, p, shift.data()), [&](double s, int64_t o) {
          return std::isfinite(shift[o]) ? shift[o] + std::log(s) : shift[o];
        });
      }
      default: break;
    }
    throw_unsupported_dtype(reduce_op_name(op), Device::cpu(), in.dtype());
  }
}

// out = op over the dims in dims_mask of in (see KernelTable::reduce).
void reduce(ReduceOp op, const Tensor& out, const Tensor& in, uint64_t dims_mask, double param) {
  if (out.numel() == 0) return;
  ReducePlan plan = make_reduce_plan(in, dims_mask);
  visit_dtype(in.dtype(), [&]<class T>() { reduce_typed<T>(op, out, in, plan, param); });
}

// values, indices = max (or min) of in along dim, first index on ties, NaN wins.
void reduce_with_index(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim) {
  WICK_CHECK(op == ReduceOp::Max || op == ReduceOp::Min, "reduce_with_index: ", reduce_op_name(op),
             " has no index form");
  if (values.numel() == 0) return;
  ReducePlan plan = make_reduce_plan(in, uint64_t{1} << dim);
  visit_dtype(in.dtype(), [&]<class T>() {
    const T* p = static_cast<const T*>(in.data_ptr());
    auto write = [&](const auto& acc) {
      write_out<T>(values, acc, [](auto a, int64_t) { return a.v; });
      write_out<int64_t>(indices, acc, [](auto a, int64_t) { return a.i; });
    };
    if (op == ReduceOp::Max) write(reduce_to_acc(ArgExtremumR<T, true>{}, plan, p));
    else write(reduce_to_acc(ArgExtremumR<T, false>{}, plan, p));
  });
}

}  // namespace

void register_reduce(KernelTable& t) {
  t.reduce = &reduce;
  t.reduce_with_index = &reduce_with_index;
}

}  // namespace wick::cpu
