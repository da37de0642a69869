// Softmax, log-softmax and the scans (cumsum, cumprod, cummax, cummin, logcumsumexp) along
// one dim on the CPU. Inputs and outputs are contiguous and seen as [outer, n, inner]
// around the dim; each kernel writes `=`.
// Rows (inner == 1) are processed one per task with a unit-stride inner loop; otherwise a
// block of inner columns is carried through the dim together, so every load is contiguous.
// exp is VecMath's (vectorisable for float, which 16-bit types compute in too).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/convert.h"
#include "kernels/around_dim.h"
#include "kernels/elementwise_math.h"
#include "kernels/reduce_math.h"
#include "kernels/scan_math.h"
#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/lane_sum.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"

namespace wick::cpu {

namespace {

inline constexpr int64_t kColumnBlock = 256;  // inner columns carried together through the dim

// Splits [outer) x [inner columns in blocks] over threads, calling f(o, j0, j1).
template <class F>
void for_each_column_block(const AroundDim& a, F&& f) {
  const int64_t blocks = (a.inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (a.n * std::min(a.inner, kColumnBlock)));
  parallel_for(0, a.outer * blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t o = w / blocks, j0 = (w % blocks) * kColumnBlock;
      f(o, j0, std::min(a.inner, j0 + kColumnBlock));
    }
  });
}

// softmax: y = exp(x - max) / sum exp(x - max); log-softmax: y = x - max - log(sum exp(x - max)).
// The sum accumulates in double. 16-bit outputs recompute exp in the last pass rather than
// round it to 16 bits and back.
template <class T>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  using C = compute_t<T>;
  constexpr bool kStoreExp = sizeof(T) >= 4;
  const T* x = static_cast<const T*>(in.data_ptr());
  T* y = out.data<T>();
  const AroundDim a = around_dim(in, dim);
  const C neg_inf = -std::numeric_limits<C>::infinity();
  if (a.inner == 1) {
    const int64_t n = a.n;
    // A row: the max (exact in any order, NaN skipped: a NaN makes the sum NaN) and the
    // sums in lane_sum's source-ordered lanes, so the AVX-512, AVX2 and baseline copies give
    // the same bits.
    auto row = [&](const T* xr, T* yr) {
      C m = neg_inf;
#pragma omp simd reduction(max : m)
      for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<C>(xr[i]));
      if (kStoreExp && !log) {
        const double s = lane_sum<double>(n, [&](int64_t i) {
          const C v = VecMath::exp(static_cast<C>(xr[i]) - m);
          yr[i] = static_cast<T>(v);
          return static_cast<double>(v);
        });
        const C scale = static_cast<C>(1.0 / s);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<T>(static_cast<C>(yr[i]) * scale);
        return;
      }
      const double s =
          lane_sum<double>(n, [&](int64_t i) { return static_cast<double>(VecMath::exp(static_cast<C>(xr[i]) - m)); });
      if (log) {
        const C shift = m + static_cast<C>(std::log(s));
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<T>(static_cast<C>(xr[i]) - shift);
      } else {
        const C scale = static_cast<C>(1.0 / s);
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<T>(VecMath::exp(static_cast<C>(xr[i]) - m) * scale);
      }
    };
    parallel_for(0, a.outer, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t b, int64_t e) {
      with_isa_clones<T>([&] {
        for (int64_t r = b; r < e; ++r) row(x + r * n, y + r * n);
      });
    });
    return;
  }
  const int64_t n = a.n, inner = a.inner;
  // Each column sums down the dim in order (the vectors run across columns): every ISA copy
  // gives the same bits.
  auto block = [&](int64_t o, int64_t j0, int64_t j1) {
    const int64_t w = j1 - j0;
    C m[kColumnBlock], f[kColumnBlock];
    double s[kColumnBlock];
    std::fill(m, m + w, neg_inf);
    std::fill(s, s + w, 0.0);
    const T* xb = x + o * n * inner + j0;
    T* yb = y + o * n * inner + j0;
    for (int64_t d = 0; d < n; ++d)
      for (int64_t j = 0; j < w; ++j) m[j] = std::max(m[j], static_cast<C>(xb[d * inner + j]));
    if (kStoreExp && !log) {
      for (int64_t d = 0; d < n; ++d) {
        for (int64_t j = 0; j < w; ++j) {
          C v = VecMath::exp(static_cast<C>(xb[d * inner + j]) - m[j]);
          yb[d * inner + j] = static_cast<T>(v);
          s[j] += v;
        }
      }
      for (int64_t j = 0; j < w; ++j) f[j] = static_cast<C>(1.0 / s[j]);
      for (int64_t d = 0; d < n; ++d)
        for (int64_t j = 0; j < w; ++j) yb[d * inner + j] = static_cast<T>(static_cast<C>(yb[d * inner + j]) * f[j]);
      return;
    }
    for (int64_t d = 0; d < n; ++d)
      for (int64_t j = 0; j < w; ++j) s[j] += VecMath::exp(static_cast<C>(xb[d * inner + j]) - m[j]);
    if (log) {
      for (int64_t j = 0; j < w; ++j) f[j] = m[j] + static_cast<C>(std::log(s[j]));
      for (int64_t d = 0; d < n; ++d)
        for (int64_t j = 0; j < w; ++j) yb[d * inner + j] = static_cast<T>(static_cast<C>(xb[d * inner + j]) - f[j]);
    } else {
      for (int64_t j = 0; j < w; ++j) f[j] = static_cast<C>(1.0 / s[j]);
      for (int64_t d = 0; d < n; ++d)
        for (int64_t j = 0; j < w; ++j)
          yb[d * inner + j] = static_cast<T>(VecMath::exp(static_cast<C>(xb[d * inner + j]) - m[j]) * f[j]);
    }
  };
  for_each_column_block(a, [&](int64_t o, int64_t j0, int64_t j1) { with_isa_clones<T>([&] { block(o, j0, j1); }); });
}

void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  if (out.numel() == 0) return;
  visit_dtype(in.dtype(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<compute_t<T>>) softmax_typed<T>(out, in, dim, log);
    else throw_unsupported_dtype(log ? "log_softmax" : "softmax", Device::cpu(), in.dtype());
  });
}

// The scans (kernels/scan_math.h) walk each line serially; floats accumulate in double,
// integers and bool in int64 (cummax/cummin compare in the compute type).
template <ScanOp Op, class T>
void scan_typed(const Tensor& out, const Tensor& indices, const Tensor& in, int64_t dim) {
  using Out = scan_out_t<Op, T>;
  using A = std::conditional_t<Op == ScanOp::Max || Op == ScanOp::Min, compute_t<T>, widest_acc_t<T>>;
  using Fn = ScanFn<Op, A>;
  using State = typename Fn::State;
  const T* x = static_cast<const T*>(in.data_ptr());
  Out* y = out.data<Out>();
  int64_t* idx = Fn::kHasIndex ? indices.data<int64_t>() : nullptr;
  const AroundDim a = around_dim(in, dim);
  const int64_t n = a.n, inner = a.inner;
  auto store = [&](int64_t at, State s) {
    y[at] = convert<Out>(Fn::value(s));
    if constexpr (Fn::kHasIndex) idx[at] = Fn::index(s);
  };
  auto load = [&](int64_t at, int64_t i) { return Fn::leaf(static_cast<A>(static_cast<compute_t<T>>(x[at])), i); };
  if (inner == 1) {
    parallel_for(0, a.outer, std::max<int64_t>(1, kElementwiseGrain / n), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        State s = Fn::identity();
        for (int64_t i = 0; i < n; ++i) {
          s = Fn::combine(s, load(r * n + i, i));
          store(r * n + i, s);
        }
      }
    });
    return;
  }
  for_each_column_block(a, [&](int64_t o, int64_t j0, int64_t j1) {
    State s[kColumnBlock];
    std::fill(s, s + (j1 - j0), Fn::identity());
    const int64_t base = o * n * inner + j0;
    for (int64_t d = 0; d < n; ++d) {
      for (int64_t j = 0; j < j1 - j0; ++j) {
        s[j] = Fn::combine(s[j], load(base + d * inner + j, d));
        store(base + d * inner + j, s[j]);
      }
    }
  });
}

void scan(ScanOp op, const Tensor& out, const Tensor& indices, const Tensor& in, int64_t dim) {
  if (out.numel() == 0) return;
  visit_scan_op(op, [&]<ScanOp Op>() {
    visit_dtype(in.dtype(), [&]<class T>() {
      if constexpr (Op == ScanOp::LogSumExp && !std::is_floating_point_v<compute_t<T>>)
        throw_unsupported_dtype(scan_op_name(op), Device::cpu(), in.dtype());
      else scan_typed<Op, T>(out, indices, in, dim);
    });
  });
}

}  // namespace

void register_softmax(KernelTable& t) {
  t.softmax = &softmax;
  t.scan = &scan;
}

}  // namespace wick::cpu
