// Reductions on the CPU: sum, prod, mean, var, p-norms, logsumexp, all/any, max/min with and
// without indices. Each writes `=` into a fresh output. The math of each op is
// kernels/reduce_math.h, shared with the CUDA kernels; here are the accumulation types and
// the loops (kernels/cpu/reduce_loops.h). Floating inputs accumulate in double, integers in
// int64 (wrapping around on overflow).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/convert.h"
#include "kernels/reduce_math.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lane_sum.h"
#include "kernels/cpu/reduce_loops.h"
#include "kernels/cpu/vec_math.h"

namespace wick::cpu {

namespace {

// What max and min of T accumulate in: T's compute type (bool as uint8: a std::vector<bool>
// has no data()).
template <class T>
using extremum_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;

// var: a run's count, mean and M2 come from two vectorisable passes, centred on the run's
// first element (a constant run has deviations of exactly 0, as Welford's per-element update
// gives), and merge with the running state by the shared formula. Along a row that is one
// unit-stride run; across columns (the accumulate order) it is blocks of kVarRows rows, each
// pass vectorised over the columns: the per-element update, a division and a 24-byte state
// per column, was 2.7x slower there than the kernel before the shared math.
inline constexpr int64_t kVarRows = 32;

template <class T>
struct VarReducer : Reducer<VarFn<double>, T> {
  using Acc = typename VarFn<double>::State;
  static double at(const T* p, int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(p[i])); }

  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t) const {
    if (n == 0) return a;
    const double c = at(p, 0);
    const double mean = c + lane_sum<double>(n, [&](int64_t i) { return at(p, i) - c; }) / static_cast<double>(n);
    const double m2 = lane_sum<double>(n, [&](int64_t i) {
      const double d = at(p, i) - mean;
      return d * d;
    });
    return this->fn.combine(a, Acc{n, mean, m2});
  }

  void accumulate_run(Acc* a, const T* p, int64_t rs, int64_t m, int64_t ks, int64_t n, int64_t) const {
    // Neighbouring outputs one element apart (the usual case) get loops the compiler can
    // vectorise with plain loads.
    if (ks == 1) accumulate_blocks(a, p, rs, m, std::integral_constant<int64_t, 1>{}, n);
    else accumulate_blocks(a, p, rs, m, ks, n);
  }

  template <class Stride>
  void accumulate_blocks(Acc* a, const T* p, int64_t rs, int64_t m, Stride ks, int64_t n) const {
    std::vector<double> centre(static_cast<size_t>(m)), mean(static_cast<size_t>(m)), m2(static_cast<size_t>(m));
    for (int64_t i0 = 0; i0 < n; i0 += kVarRows) {
      const int64_t rows = std::min(kVarRows, n - i0);
      const T* block = p + i0 * rs;
      for (int64_t j = 0; j < m; ++j) {
        centre[j] = at(block, j * ks);
        mean[j] = 0;
        m2[j] = 0;
      }
      // Four rows per pass over the columns: each partial sum is loaded and stored once per
      // four elements.
      int64_t k = 0;
      for (; k + 4 <= rows; k += 4) {
        const T *r0 = block + k * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;
#pragma omp simd
        for (int64_t j = 0; j < m; ++j) {
          const double c = centre[j];
          mean[j] += ((at(r0, j * ks) - c) + (at(r1, j * ks) - c)) + ((at(r2, j * ks) - c) + (at(r3, j * ks) - c));
        }
      }
      for (; k < rows; ++k) {
        const T* row = block + k * rs;
#pragma omp simd
        for (int64_t j = 0; j < m; ++j) mean[j] += at(row, j * ks) - centre[j];
      }
      const double count = static_cast<double>(rows);
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) mean[j] = centre[j] + mean[j] / count;
      for (k = 0; k + 4 <= rows; k += 4) {
        const T *r0 = block + k * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;
#pragma omp simd
        for (int64_t j = 0; j < m; ++j) {
          const double mu = mean[j];
          const double d0 = at(r0, j * ks) - mu, d1 = at(r1, j * ks) - mu, d2 = at(r2, j * ks) - mu,
                       d3 = at(r3, j * ks) - mu;
          m2[j] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
        }
      }
      for (; k < rows; ++k) {
        const T* row = block + k * rs;
#pragma omp simd
        for (int64_t j = 0; j < m; ++j) {
          const double d = at(row, j * ks) - mean[j];
          m2[j] += d * d;
        }
      }
      for (int64_t j = 0; j < m; ++j) a[j] = this->fn.combine(a[j], Acc{rows, mean[j], m2[j]});
    }
  }
};

// logsumexp: a unit-stride run's (max, sum of exp(x - max)) in two vectorisable passes (exp
// is VecMath's, float for float and 16-bit inputs, summed in double), merged with the running
// state by the shared formula; the per-element update would take an exp and two branches
// per element, 8x slower on 4096-wide float32 rows.
template <class T>
struct LogSumExpReducer : Reducer<LogSumExpFn<double>, T> {
  using Acc = LseState<double>;
  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t) const {
    using C = compute_t<T>;
    C m = -std::numeric_limits<C>::infinity();
    int nan = 0;
#pragma omp simd reduction(max : m) reduction(| : nan)
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(p[i]);
      nan |= emath::is_nan(v);
      m = std::max(m, v);  // skips NaN
    }
    if (nan) return {a.m, std::numeric_limits<double>::quiet_NaN()};
    constexpr C kInf = std::numeric_limits<C>::infinity();
    if (m == kInf) return this->fn.combine(a, Acc{kInf, 1.0});
    if (m == -kInf) return a;  // empty or nothing but -inf: adds nothing
    const double s =
        lane_sum<double>(n, [&](int64_t i) { return static_cast<double>(VecMath::exp(static_cast<C>(p[i]) - m)); });
    // Nothing but -inf under clang, whose max reduction starts from -FLT_MAX, not -inf.
    if (s == 0) return a;
    return this->fn.combine(a, Acc{static_cast<double>(m), s});
  }
};

// max (or min) with the index of its first occurrence.
template <class T, bool kMax>
struct ArgExtremumReducer : Reducer<ArgExtremumFn<Fixed<kMax>, compute_t<T>>, T> {
  using Acc = typename ArgExtremumFn<Fixed<kMax>, compute_t<T>>::State;
  // A unit-stride run in two vectorisable passes: the extremum (NaNs noted apart), then the
  // first position holding it.
  Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t first) const requires(!std::is_same_v<T, bool>) {
    using C = compute_t<T>;
    using emath::is_nan;
    if (n == 0) return a;
    // kLanes running extremums seeded with the worst value, which every value equals or
    // beats, so the result is always one of the elements. Not `omp simd reduction(max :
    // best)`: clang seeds that reduction's private copies with the lowest *finite* value, so
    // a run of -inf gave -DBL_MAX, which no element equals, and the scan below ran past the
    // end of the run.
    C lane[kLanes];
    int lane_nan[kLanes];
    for (int k = 0; k < kLanes; ++k) {
      lane[k] = reduce_worst<C>(kMax);
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
    C best = reduce_worst<C>(kMax);
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
    return this->fn.combine(a, Acc{static_cast<C>(p[i]), first + i});
  }
};

// out[o] = finish(acc[o], o), converted to Out.
template <class Out, class Acc, class F>
void write_out(const Tensor& out, const std::vector<Acc>& acc, F&& finish) {
  Out* o = out.data<Out>();
  parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = convert<Out>(finish(acc[i], i));
  });
}

// out = red's result for every output, converted to Out.
template <class Out, class R, class T>
void write_reduction(const Tensor& out, const R& red, const ReducePlan& plan, const T* p) {
  write_out<Out>(out, reduce_to_acc(red, plan, p), [&](auto a, int64_t) { return red.fn.result(a); });
}

// The CPU's accumulators (kernels/reduce_math.h's reduce_fn): double for floating inputs,
// int64 for integers, max/min in the element's own type, and which end is fixed at compile
// time so that the loops vectorise.
using CpuReduce = ReducePolicy<widest_acc_t, extremum_t, uint8_t, /*kEndAtRunTime=*/false>;

// out = op Op over the plan's reduced elements of p. Var, the norms and logsumexp have loops
// of their own (VarReducer, one instantiation per norm kind, LogSumExpReducer); every other op
// folds its shared functor.
template <ReduceOp Op, class T>
void reduce_op(const Tensor& out, const ReducePlan& plan, const T* p, double param) {
  using Out = reduce_out_t<Op, T>;
  if constexpr (Op == ReduceOp::Var) {
    write_reduction<Out>(out, VarReducer<T>{{reduce_fn<Op, CpuReduce, T>(param, plan.reduce_numel)}}, plan, p);
  } else if constexpr (Op == ReduceOp::NormP) {
    if (std::isinf(param)) write_reduction<Out>(out, Reducer<NormFn<NormKind::Inf, double>, T>{}, plan, p);
    else if (param == 1) write_reduction<Out>(out, Reducer<NormFn<NormKind::One, double>, T>{}, plan, p);
    else if (param == 2) write_reduction<Out>(out, Reducer<NormFn<NormKind::Two, double>, T>{}, plan, p);
    else write_reduction<Out>(out, Reducer<NormFn<NormKind::General, double>, T>{{param}}, plan, p);
  } else if constexpr (Op == ReduceOp::LogSumExp) {
    write_reduction<Out>(out, LogSumExpReducer<T>{}, plan, p);
  } else {
    auto fn = reduce_fn<Op, CpuReduce, T>(param, plan.reduce_numel);
    write_reduction<Out>(out, Reducer<decltype(fn), T>{fn}, plan, p);
  }
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& in, const ReducePlan& plan, double param) {
  const T* p = static_cast<const T*>(in.data_ptr());
  switch (op) {
#define WICK_REDUCE_CASE(e, ...)                                                                         \
  case ReduceOp::e:                                                                                      \
    if constexpr (reduce_accepts<ReduceOp::e, T>) return reduce_op<ReduceOp::e, T>(out, plan, p, param); \
    break;
    WICK_REDUCE_OPS(WICK_REDUCE_CASE)
#undef WICK_REDUCE_CASE
  }
  throw_unsupported_dtype(reduce_op_name(op), Device::cpu(), in.dtype());
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
    if (op == ReduceOp::Max) write(reduce_to_acc(ArgExtremumReducer<T, true>{}, plan, p));
    else write(reduce_to_acc(ArgExtremumReducer<T, false>{}, plan, p));
  });
}

}  // namespace

void register_reduce(KernelTable& t) {
  t.reduce = &reduce;
  t.reduce_with_index = &reduce_with_index;
}

}  // namespace wick::cpu
