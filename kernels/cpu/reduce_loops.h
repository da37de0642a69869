#pragma once
// The loop engine behind the CPU reduction kernels. A reduction maps `in` (any strides) onto
// its outputs: the kept dims index the (contiguous) output, the reduced dims are folded by a
// Reducer into one accumulator per output. Size-1 dims are dropped and neighbouring dims that
// are contiguous with each other are merged, so the usual cases collapse to two dims.
//
// Two loop orders, picked by which side has the smaller innermost stride:
// - fold: per output, walk its reduced elements; the unit-stride inner loop keeps kLanes
//   independent accumulators so the compiler vectorises it (rows of a contiguous tensor);
// - accumulate: per block of outputs along the innermost kept dim, walk the reduced elements
//   a few rows at a time, acc[j] = step(acc[j], row[j]), so loads follow memory order
//   (reducing outer dims of a contiguous tensor).
// Work is split over outputs; when there are few outputs, the reduced range is cut into
// fixed-size chunks whose partial accumulators are combined in order, so the result does
// not depend on the number of threads.
//
// A Reducer (kernels/cpu/reduce.cpp wraps the shared math of kernels/reduce_math.h) provides:
//   using Acc;                         the accumulator type
//   Acc init() const;                  the identity
//   Acc step(Acc a, T x, int64_t r) const;  r: x's index in the reduced space
//   Acc combine(Acc a, Acc b) const;   merges partials of disjoint element sets, in any grouping
//   optionally Acc fold_contiguous(Acc a, const T* p, int64_t n, int64_t first) const;
//                                      its own loop for unit-stride runs
//   optionally static constexpr bool kMapLanes;  true: the unit-stride lanes step as a map
//   optionally void accumulate_run(Acc* a, const T* p, int64_t rs, int64_t m, int64_t ks,
//                                  int64_t n, int64_t first) const;
//                                      its own loop for the accumulate order: a[j] takes
//                                      p[i * rs + j * ks] for i < n, j < m
#include <algorithm>
#include <cstdint>
#include <vector>

#include <wick/tensor/tensor.h>

#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/parallel.h"
#include "kernels/reduce_math.h"

namespace wick::cpu {

// Reductions whose step is a select (floating max/min and the inf-norm: the NaN rule): their
// lanes fold as a map (reduce_loops.h's fold_run), 3-5x faster than as reductions. Integer
// max/min is a plain reduction to gcc.
template <class Fn>
inline constexpr bool kSelects = false;
template <class End, class A>
inline constexpr bool kSelects<ExtremumFn<End, A>> = std::is_floating_point_v<A>;
template <class A>
inline constexpr bool kSelects<NormFn<NormKind::Inf, A>> = true;

// A shared reduction (kernels/reduce_math.h) as a Reducer of reduce_loops.h over T.
template <class Fn, class T>
struct Reducer {
  using Acc = typename Fn::State;
  static constexpr bool kMapLanes = kSelects<Fn>;
  Fn fn;
  Acc init() const { return fn.identity(); }
  Acc step(Acc a, T x, int64_t r) const { return fn.add(a, static_cast<compute_t<T>>(x), r); }
  Acc combine(Acc a, Acc b) const { return fn.combine(a, b); }
};

struct ReduceDim {
  int64_t size;
  int64_t stride;  // in elements of `in`
};

struct ReducePlan {
  std::vector<ReduceDim> kept;     // outer to inner; outputs are row-major over these
  std::vector<ReduceDim> reduced;  // outer to inner, ordered by stride
  int64_t out_numel = 1;
  int64_t reduce_numel = 1;
  bool accumulate = false;  // the loop order (see above)
};

// The element offset of row-major index i of the space `dims`.
inline int64_t offset_of(const std::vector<ReduceDim>& dims, int64_t i) {
  int64_t off = 0;
  for (size_t k = dims.size(); k-- > 0;) {
    off += (i % dims[k].size) * dims[k].stride;
    i /= dims[k].size;
  }
  return off;
}

// Calls f(offset, first, n) for the runs of indices [begin, end) of `dims` that lie along its
// innermost dim: indices first..first+n-1 sit at offset + k * dims.back().stride.
template <class F>
void for_each_run(const std::vector<ReduceDim>& dims, int64_t begin, int64_t end, F&& f) {
  if (dims.empty()) {
    if (begin < end) f(int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  const int64_t inner = dims.back().size;
  for (int64_t i = begin; i < end;) {
    int64_t n = std::min(inner - i % inner, end - i);
    f(offset_of(dims, i), i, n);
    i += n;
  }
}

// Merges neighbouring dims (outer to inner) that are contiguous with each other.
inline std::vector<ReduceDim> merge_dims(const std::vector<ReduceDim>& dims) {
  std::vector<ReduceDim> out;
  for (const ReduceDim& d : dims) {
    if (!out.empty() && out.back().stride == d.stride * d.size) {
      out.back().size *= d.size;
      out.back().stride = d.stride;
    } else {
      out.push_back(d);
    }
  }
  return out;
}

// The plan for reducing the dims of `in` set in `mask`.
inline ReducePlan make_reduce_plan(const Tensor& in, uint64_t mask) {
  ReducePlan p;
  std::vector<ReduceDim> kept, reduced;
  for (int64_t d = 0; d < in.dim(); ++d) {
    ReduceDim rd{in.shape()[d], in.strides()[d]};
    bool is_reduced = (mask >> d) & 1;
    (is_reduced ? p.reduce_numel : p.out_numel) *= rd.size;
    if (rd.size != 1) (is_reduced ? reduced : kept).push_back(rd);
  }
  // The reduction order is free, so walk the reduced elements in memory order.
  std::stable_sort(reduced.begin(), reduced.end(),
                   [](const ReduceDim& a, const ReduceDim& b) { return a.stride > b.stride; });
  p.kept = merge_dims(kept);
  p.reduced = merge_dims(reduced);
  if (!p.kept.empty() && !p.reduced.empty())
    p.accumulate = p.reduced.back().stride != 1 && p.kept.back().stride < p.reduced.back().stride;
  return p;
}

inline constexpr int kLanes = 16;                  // independent accumulators in a unit-stride fold
inline constexpr int64_t kReduceChunk = 1 << 16;   // reduced elements per partial when splitting
inline constexpr int64_t kFewOutputs = 64;         // below this, split the reduced range instead
inline constexpr int64_t kAccumulateBlock = 4096;  // outputs per block in the accumulate order

// Whether reducer R folds a unit-stride run's lanes as a map (R::kMapLanes, see fold_run).
template <class R>
inline constexpr bool kMapsLanes = requires {
  requires R::kMapLanes;
};

// Folds n elements p[0], p[s], ... (reduced indices first..first+n-1) into acc.
template <class R, class T>
typename R::Acc fold_run(const R& red, typename R::Acc acc, const T* p, int64_t n, int64_t s, int64_t first) {
  using Acc = typename R::Acc;
  if constexpr (requires { red.fold_contiguous(acc, p, n, first); })
    if (s == 1) return red.fold_contiguous(acc, p, n, first);
  int64_t i = 0;
  if (s == 1 && n >= 2 * kLanes) {
    Acc lanes[kLanes];
    for (int k = 0; k < kLanes; ++k) lanes[k] = red.init();
    if constexpr (kMapsLanes<R>) {
      // An elementwise map over the lanes, which gcc vectorises for a step it does not see as
      // a reduction (a select: max/min's NaN rule); for sums and products it was 1.4-1.6x
      // slower than 16 reductions, whose outer loop gcc vectorises.
      for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
        for (int k = 0; k < kLanes; ++k) lanes[k] = red.step(lanes[k], p[i + k], first + i + k);  // [simd]
      }
    } else {
      for (; i + kLanes <= n; i += kLanes)
        for (int k = 0; k < kLanes; ++k) lanes[k] = red.step(lanes[k], p[i + k], first + i + k);
    }
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int k = 0; k < w; ++k) lanes[k] = red.combine(lanes[k], lanes[k + w]);
    acc = red.combine(acc, lanes[0]);
  }
  for (; i < n; ++i) acc = red.step(acc, p[i * s], first + i);
  return acc;
}

// Steps a[j] through K rows (row, row + rs, ...; reduced indices r, r+1, ...) at once,
// so each accumulator is loaded and stored once per K rows.
template <int K, class R, class T>
void accumulate_rows(const R& red, typename R::Acc* a, const T* row, int64_t rs, int64_t m, int64_t ks, int64_t r) {
  auto column = [&](int64_t j, int64_t at) {
    typename R::Acc v = a[j];
    for (int k = 0; k < K; ++k) v = red.step(v, row[k * rs + at], r + k);
    a[j] = v;
  };
  if (ks == 1) {
    for (int64_t j = 0; j < m; ++j) column(j, j);
  } else {
    for (int64_t j = 0; j < m; ++j) column(j, j * ks);
  }
}

// acc[o - ob] = fold of the reduced indices [rb, re) for outputs [ob, oe).
template <class R, class T>
void reduce_range(const R& red, const ReducePlan& plan, const T* p, int64_t ob, int64_t oe, int64_t rb, int64_t re,
                  typename R::Acc* acc) {
  const int64_t rs = plan.reduced.empty() ? 0 : plan.reduced.back().stride;
  if (!plan.accumulate) {
    for (int64_t o = ob; o < oe; ++o) {
      const T* base = p + offset_of(plan.kept, o);
      typename R::Acc a = red.init();
      for_each_run(plan.reduced, rb, re,
                   [&](int64_t off, int64_t first, int64_t n) { a = fold_run(red, a, base + off, n, rs, first); });
      acc[o - ob] = a;
    }
    return;
  }
  const int64_t inner = plan.kept.back().size, ks = plan.kept.back().stride;
  for (int64_t o = ob; o < oe;) {
    const int64_t m = std::min({inner - o % inner, oe - o, kAccumulateBlock});
    const T* base = p + offset_of(plan.kept, o);
    typename R::Acc* a = acc + (o - ob);
    for (int64_t j = 0; j < m; ++j) a[j] = red.init();
    for_each_run(plan.reduced, rb, re, [&](int64_t off, int64_t first, int64_t n) {
      if constexpr (requires { red.accumulate_run(a, base, rs, m, ks, n, first); }) {
        red.accumulate_run(a, base + off, rs, m, ks, n, first);
      } else {
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) accumulate_rows<4>(red, a, base + off + i * rs, rs, m, ks, first + i);
        for (; i < n; ++i) accumulate_rows<1>(red, a, base + off + i * rs, rs, m, ks, first + i);
      }
    });
    o += m;
  }
}

// One accumulator per output: the fold of all its reduced elements.
template <class R, class T>
std::vector<typename R::Acc> reduce_to_acc(const R& red, const ReducePlan& plan, const T* p) {
  using Acc = typename R::Acc;
  const int64_t outs = plan.out_numel, total = plan.reduce_numel;
  std::vector<Acc> acc(static_cast<size_t>(outs));
  // In the CPU's widest copy (isa_clones.h): every sum's lanes are the source's (fold_run's
  // kLanes, lane_sum in a fold_contiguous), so every copy adds in the same order.
  auto range = [&](int64_t ob, int64_t oe, int64_t rb, int64_t re, Acc* out) {
    with_isa_clones<T>([&] { reduce_range(red, plan, p, ob, oe, rb, re, out); });
  };
  if (outs < kFewOutputs && total >= 2 * kReduceChunk) {
    const int64_t chunks = (total + kReduceChunk - 1) / kReduceChunk;
    std::vector<Acc> part(static_cast<size_t>(chunks * outs));
    parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c)
        range(0, outs, c * kReduceChunk, std::min(total, (c + 1) * kReduceChunk), part.data() + c * outs);
    });
    for (int64_t o = 0; o < outs; ++o) {
      Acc a = part[o];
      for (int64_t c = 1; c < chunks; ++c) a = red.combine(a, part[c * outs + o]);
      acc[o] = a;
    }
    return acc;
  }
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(total, 1));
  parallel_for(0, outs, grain, [&](int64_t ob, int64_t oe) { range(ob, oe, 0, total, acc.data() + ob); });
  return acc;
}

}  // namespace wick::cpu
