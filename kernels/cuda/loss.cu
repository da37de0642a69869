// Fused log-softmax + cross-entropy on CUDA; the math is that of kernels/cpu/loss.cpp.
//
// cross_entropy_rows_kernel: one group of threads per position (n, s) (a warp for up to
// 1024 classes, eight positions to a block; else a block of 128-512 threads), in two passes
// over the position's logits:
// 1. one read of the logits for the max and the sum of exponentials, in float32 for 16-bit
//    logits (float64 for float64): 16-byte packs, kUnroll of them loaded per step before
//    any is used, around a scalar head and tail so that every vocabulary width and row
//    offset is vectorised (a GPT-2 row of 50257 bfloat16 logits starts anywhere). The
//    running sum is rescaled only when a pack raises the thread's max (rarely after the
//    first packs), so one exponential per element; also the sums that label smoothing and
//    probability targets need. Then the group's states are merged (warp shuffles, shared
//    memory across warps) into lse.
// 2. with the gradient wanted, a second read of the same logits (the group has just read
//    them: from L2, not memory) and the write of d loss / d logits, scaled as the slot says
//    (for a loss gradient of 1, Mean's divisor included). The forward writes the gradient
//    so that backward is a scale (cross_entropy_scale_kernel), which leaves positions whose
//    incoming gradient is 1 alone: loss.backward() of a Mean or Sum loss reads and writes
//    nothing more.
// Positions whose target is ignored get loss 0 and gradient 0 without the second read.
// Logits whose classes are strided (S > 1, classes at stride S; a template flag, so that
// contiguous rows have no division) are read one element at a time. The backward from a
// saved lse (the cross_entropy_backward slot) is pass 2 alone for index targets; with class
// weights and smoothing, or probabilities, pass 1 also runs for the sums it needs.
//
// An out-of-range target is recorded on the device (device_error.cuh) and raised by the
// host at its next wait: no launch waits for the kernel, so a training step never drains
// the GPU's queue here and can be captured in a CUDA graph.
//
// Every output is written with `=`; the scale kernel multiplies in place.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_error.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/optional_data.h"
#include "kernels/visit_floating.h"

namespace wick::cuda_kernels {

namespace {

constexpr int kRowThreads = 512;  // the largest group: one position per block
constexpr int kUnroll = 4;        // packs loaded per thread per step

// The kernel's specialisation for the target and options.
enum class CeKind : int {
  Index = 0,          // class indices; no class weights, or weights without label smoothing
  IndexWeighted = 1,  // class indices, class weights and label smoothing
  Probs = 2,          // class probabilities
};

template <class T>
struct CeParams {
  T* loss;                      // [N * S], forward
  stats_t<T>* lse;              // [N * S], forward
  T* tw;                        // [N * S], forward with index targets (may be null)
  T* dx;                        // [N, C, S], or null
  const T* x;                   // [N, C, S]
  const int64_t* ti;            // [N * S] class indices, or null
  const T* tq;                  // [N, C, S] probabilities, or null
  const T* w;                   // [C] class weights, or null
  const T* total;               // divides the gradient (0 where 0), or null
  const T* grad;                // backward: the incoming gradient; null in the forward
  bool reduced;                 // grad has one element
  const stats_t<T>* lse_in;     // backward: the saved lse
  int64_t rows, C, S, ignore_index;
  double eps, scale;
  DeviceErrorSlot error;
};

template <class A, class T>
__device__ __forceinline__ A value(T v) {
  return static_cast<A>(static_cast<compute_t<T>>(v));
}

// exp(x - r) reference point for a running max m: 0 while every element seen is -inf (so
// that exp(-inf - r) is 0, not NaN).
template <class A>
__device__ __forceinline__ A reference(A m) {
  return m == -A(INFINITY) ? A(0) : m;
}

// A thread's (and, merged, a position's) pass-1 state: the running max m and sum s of
// exp(x - reference(m)), and two sums for the kind: Index: a = sum x; IndexWeighted:
// a = sum w x, b = sum w; Probs: a = sum w q', b = sum w q' x (q' the smoothed target).
template <class A>
struct RowSums {
  A m, s, a, b;
};

template <class A>
struct RowSumsMerge {
  __device__ RowSums<A> operator()(const RowSums<A>& u, const RowSums<A>& v) const {
    const A m = fmax(u.m, v.m), r = reference(m);
    // A NaN in s stays NaN; a +inf max makes s NaN too, but then lse is m (lse_of).
    return {m, u.s * exp(u.m - r) + v.s * exp(v.m - r), u.a + v.a, u.b + v.b};
  }
};

// log sum exp: the max itself when it is infinite (as the CPU), NaN when a logit is NaN.
template <class A>
__device__ __forceinline__ A lse_of(const RowSums<A>& st) {
  return st.m == A(INFINITY) || st.m == -A(INFINITY) ? st.m : st.m + log(st.s);
}

// The group's merged state in every thread of it: a warp (G == 32, blockDim.y positions per
// block) or the whole block.
template <class A>
__device__ __forceinline__ RowSums<A> group_allreduce(RowSums<A> st, RowSums<A>* smem) {
  if (blockDim.x == kWarp) return warp_allreduce(st, RowSumsMerge<A>{});
  return block_allreduce(st, smem, RowSumsMerge<A>{});
}

// Elements before the first 16-byte boundary of `row` (all of them when there is none).
template <class T>
__device__ __forceinline__ int head_of(const T* row, int n) {
  const int misalign = static_cast<int>(reinterpret_cast<uintptr_t>(row) % 16) / static_cast<int>(sizeof(T));
  return min(n, misalign == 0 ? 0 : kVec<T> - misalign);
}

// Calls one(c, v) for a single element or pack(v[V], c0) for the V = kVec<T> elements of
// classes c0 .. c0 + V - 1, over this thread's share (thread t of G) of row[c * S], c < C,
// every element once: contiguous rows (S == 1) as a scalar head and tail and 16-byte packs
// between, kUnroll packs loaded per step before any is used; strided ones element by
// element. Class indices are ints (C < 2^31, checked by the host).
template <bool kStrided, class T, class One, class PackFn>
__device__ __forceinline__ void read_row(const T* row, int C, int64_t S, int t, int G, One&& one, PackFn&& pack) {
  using A = stats_t<T>;
  constexpr int V = kVec<T>;
  if constexpr (kStrided) {
#pragma unroll 1
    for (int c = t; c < C; c += G) one(c, value<A>(row[c * S]));
  } else {
    const int head = head_of(row, C), count = (C - head) / V, tail = head + count * V;
    if (t < head) one(t, value<A>(row[t]));
    if (t < C - tail) one(tail + t, value<A>(row[tail + t]));
    const Pack<T, V>* vp = reinterpret_cast<const Pack<T, V>*>(row + head);
    auto use = [&](const Pack<T, V>& r, int j) {
      A v[V];
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = value<A>(r.v[k]);
      pack(v, head + j * V);
    };
    int j = t;
#pragma unroll 1
    for (; j + (kUnroll - 1) * G < count; j += kUnroll * G) {
      Pack<T, V> r[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) r[u] = vp[j + u * G];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) use(r[u], j + u * G);
    }
#pragma unroll 1
    for (; j < count; j += G) use(vp[j], j);
  }
}

// y[c * S] = f(c, x[c * S]) for this thread's share of the row, as read_row; packs when x
// and y are equally misaligned.
template <bool kStrided, class T, class F>
__device__ __forceinline__ void map_row(const T* x, T* y, int C, int64_t S, int t, int G, F&& f) {
  using A = stats_t<T>;
  constexpr int V = kVec<T>;
  if (kStrided || reinterpret_cast<uintptr_t>(x) % 16 != reinterpret_cast<uintptr_t>(y) % 16) {
#pragma unroll 1
    for (int c = t; c < C; c += G) y[c * S] = convert<T>(f(c, value<A>(x[c * S])));
    return;
  }
  const int head = head_of(x, C), count = (C - head) / V, tail = head + count * V;
  if (t < head) y[t] = convert<T>(f(t, value<A>(x[t])));
  if (t < C - tail) y[tail + t] = convert<T>(f(tail + t, value<A>(x[tail + t])));
  const Pack<T, V>* xp = reinterpret_cast<const Pack<T, V>*>(x + head);
  Pack<T, V>* yp = reinterpret_cast<Pack<T, V>*>(y + head);
  int j = t;
#pragma unroll 1
  for (; j + (kUnroll - 1) * G < count; j += kUnroll * G) {
    Pack<T, V> r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = xp[j + u * G];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c0 = head + (j + u * G) * V;
#pragma unroll
      for (int k = 0; k < V; ++k) r[u].v[k] = convert<T>(f(c0 + k, value<A>(r[u].v[k])));
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) yp[j + u * G] = r[u];
  }
#pragma unroll 1
  for (; j < count; j += G) {
    Pack<T, V> r = xp[j];
    const int c0 = head + j * V;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = convert<T>(f(c0 + k, value<A>(r.v[k])));
    yp[j] = r;
  }
}

// y[c * S] = 0 for this thread's share of the row.
template <bool kStrided, class T>
__device__ __forceinline__ void zero_row(T* y, int C, int64_t S, int t, int G) {
  constexpr int V = kVec<T>;
  if constexpr (kStrided) {
#pragma unroll 1
    for (int c = t; c < C; c += G) y[c * S] = convert<T>(0.0);
  } else {
    const int head = head_of(y, C), count = (C - head) / V, tail = head + count * V;
    if (t < head) y[t] = convert<T>(0.0);
    if (t < C - tail) y[tail + t] = convert<T>(0.0);
    Pack<T, V> zero;
#pragma unroll
    for (int k = 0; k < V; ++k) zero.v[k] = convert<T>(0.0);
    Pack<T, V>* yp = reinterpret_cast<Pack<T, V>*>(y + head);
#pragma unroll 1
    for (int j = t; j < count; j += G) yp[j] = zero;
  }
}

// Blocks of kRowThreads per multiprocessor that ptxas must fit: for index targets, three
// with 16-bit logits (40 registers), two with float32 (64: at 40 it spilled); the rest
// (float64, the weighted and probability kinds, whose class weights and targets are loaded
// element by element) take the registers they need.
template <class T, CeKind K>
inline constexpr int kRowBlocksPerSm = sizeof(T) == 8 || K != CeKind::Index ? 1 : sizeof(T) == 2 ? 3 : 2;

template <class T, CeKind K, bool kStrided>
__global__ void __launch_bounds__(kRowThreads, (kRowBlocksPerSm<T, K>)) cross_entropy_rows_kernel(CeParams<T> p) {
  using A = stats_t<T>;
  constexpr int V = kVec<T>;
  __shared__ RowSums<A> smem[kRowThreads / kWarp];
  const int G = blockDim.x, t = threadIdx.x, C = static_cast<int>(p.C);
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (i >= p.rows) return;  // whole warps leave (blocks of several positions are made of warps)
  // Position i is (n, s) of [N, S]; contiguous rows (S == 1) need no division.
  int64_t base = i * C;
  if constexpr (kStrided) {
    const int64_t n = i / p.S;
    base = n * C * p.S + (i - n * p.S);
  }
  const int64_t S = kStrided ? p.S : 1;
  const T* x = p.x + base;
  const bool forward = p.grad == nullptr;
  int target = -1;
  bool kept = true, valid = true;
  int64_t wide_target = 0;
  if constexpr (K != CeKind::Probs) {
    wide_target = p.ti[i];
    const bool ignored = wide_target == p.ignore_index;
    valid = ignored || (wide_target >= 0 && wide_target < C);
    kept = valid && !ignored;
    if (kept) target = static_cast<int>(wide_target);
  }
  const A keep = static_cast<A>(1 - p.eps), smooth = static_cast<A>(p.eps / static_cast<double>(C));
  const T* q = K == CeKind::Probs ? p.tq + base : nullptr;
  auto wc = [&](int c) { return p.w ? value<A>(p.w[c]) : A(1); };
  auto qs = [&](int c) { return keep * value<A>(q[c * S]) + smooth; };  // the smoothed target

  // Pass 1 (the forward; in backward only for the sums of the weighted kinds).
  RowSums<A> st{-A(INFINITY), A(0), A(0), A(0)};
  if (forward || K != CeKind::Index) {
    auto sums = [&](int c, A v) {
      if constexpr (K == CeKind::Index) {
        st.a += v;
      } else if constexpr (K == CeKind::IndexWeighted) {
        const A wv = wc(c);
        st.a += wv * v;
        st.b += wv;
      } else {
        const A wq = wc(c) * qs(c);
        st.a += wq;
        st.b += wq * v;
      }
    };
    // The running sum is rescaled when the max grows (rarely, after the first elements):
    // one exponential per element.
    auto one = [&](int c, A v) {
      if (v > st.m) {
        st.s *= exp(st.m - v);
        st.m = v;
      }
      st.s += exp(v - reference(st.m));
      sums(c, v);
    };
    auto pack = [&](const A(&v)[V], int c0) {
      A top = v[0];
#pragma unroll
      for (int k = 1; k < V; ++k) top = fmax(top, v[k]);
      if (top > st.m) {
        st.s *= exp(st.m - top);
        st.m = top;
      }
      const A r = reference(st.m);
#pragma unroll
      for (int k = 0; k < V; ++k) st.s += exp(v[k] - r);
#pragma unroll
      for (int k = 0; k < V; ++k) sums(c0 + k, v[k]);
    };
    read_row<kStrided>(x, C, S, t, G, one, pack);
    st = group_allreduce(st, smem);
  }
  const A lse = forward ? lse_of(st) : p.lse_in[i];

  if (forward && t == 0) {
    p.lse[i] = lse;
    if constexpr (K == CeKind::Probs) {
      p.loss[i] = convert<T>(lse * st.a - st.b);
    } else {
      if (!valid) p.error.report(DeviceErrorKind::CrossEntropyTarget, wide_target, i, C, p.ignore_index);
      A l = 0, wt = 0;
      if (kept) {
        wt = wc(target);
        l = keep * wt * (lse - value<A>(x[target * S]));
        if (p.eps != 0) l += smooth * (K == CeKind::IndexWeighted ? lse * st.b - st.a : static_cast<A>(C) * lse - st.a);
      }
      p.loss[i] = convert<T>(l);
      if (p.tw) p.tw[i] = convert<T>(wt);
    }
  }

  // Pass 2: the gradient.
  if (!p.dx) return;
  T* dx = p.dx + base;
  if (!kept) {
    zero_row<kStrided>(dx, C, S, t, G);
    return;
  }
  A sc = static_cast<A>(p.scale);
  if (p.total) {
    const A total = value<A>(*p.total);
    sc = total == 0 ? A(0) : sc / total;
  }
  if (p.grad) sc *= value<A>(p.grad[p.reduced ? 0 : i]);
  if constexpr (K == CeKind::Probs) {
    const A ca = sc * st.a;
    map_row<kStrided>(x, dx, C, S, t, G, [&](int c, A v) { return ca * exp(v - lse) - sc * wc(c) * qs(c); });
  } else {
    const A wt = wc(target), cb1 = sc * keep * wt;
    if constexpr (K == CeKind::Index) {
      // Without weights W = C and w_c = 1; with them eps is 0.
      const A ca = sc * (keep * wt + static_cast<A>(p.eps)), cb0 = sc * smooth;
      map_row<kStrided>(x, dx, C, S, t, G,
                        [&](int c, A v) { return ca * exp(v - lse) - cb0 - (c == target ? cb1 : A(0)); });
    } else {
      const A ca = sc * (keep * wt + smooth * st.b), cbw = sc * smooth;
      map_row<kStrided>(x, dx, C, S, t, G,
                        [&](int c, A v) { return ca * exp(v - lse) - cbw * wc(c) - (c == target ? cb1 : A(0)); });
    }
  }
}

// target_weight[i] = weight[target[i]] (1 without weights), 0 where ignored or out of range.
template <class T>
__global__ void cross_entropy_target_weight_kernel(T* tw, const int64_t* target, const T* w, int64_t positions,
                                                   int64_t classes, int64_t ignore_index) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < positions; i += step) {
    const int64_t t = target[i];
    const bool kept = t != ignore_index && t >= 0 && t < classes;
    tw[i] = kept ? (w ? w[t] : convert<T>(1.0)) : convert<T>(0.0);
  }
}

// dx[n, c, s] *= grad[n * S + s] (grad[0] when reduced): one group per position, as the rows
// kernel; positions whose gradient is 1 are left alone.
template <class T, bool kStrided>
__global__ void __launch_bounds__(kRowThreads) cross_entropy_scale_kernel(T* dx, const T* grad, bool reduced,
                                                                          int64_t rows, int64_t classes,
                                                                          int64_t S) {
  using A = stats_t<T>;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (i >= rows) return;
  const A g = value<A>(grad[reduced ? 0 : i]);
  if (g == A(1)) return;
  const int C = static_cast<int>(classes);
  int64_t base = i * C;
  if constexpr (kStrided) {
    const int64_t n = i / S;
    base = n * C * S + (i - n * S);
  }
  T* row = dx + base;
  map_row<kStrided>(row, row, C, kStrided ? S : 1, threadIdx.x, blockDim.x, [&](int, A v) { return g * v; });
}

void check_positions(const char* op, int64_t positions, int64_t classes) {
  WICK_CHECK(positions < (int64_t{1} << 31), op, ": too many positions (", positions, ")");
  WICK_CHECK(classes < (int64_t{1} << 31), op, ": too many classes (", classes, ")");
}

// Threads per position for C classes: a warp up to 1024 (eight positions per block), then
// one block per position of up to kRowThreads threads.
int group_threads(int64_t C) { return C <= 1024 ? kWarp : C <= 4096 ? 128 : C <= 16384 ? 256 : kRowThreads; }

struct RowLaunch {
  dim3 grid, block;
};
RowLaunch row_launch(int64_t rows, int64_t C) {
  const int G = group_threads(C);
  const int per_block = G == kWarp ? 8 : 1;
  return {dim3(static_cast<unsigned>((rows + per_block - 1) / per_block)),
          dim3(static_cast<unsigned>(G), static_cast<unsigned>(per_block))};
}

CeKind kind_of(bool by_index, bool weighted, double eps) {
  if (!by_index) return CeKind::Probs;
  return weighted && eps != 0 ? CeKind::IndexWeighted : CeKind::Index;
}

template <class T, CeKind K>
void launch_rows_of(const CeParams<T>& p, const RowLaunch& l, cudaStream_t stream) {
  if (p.S == 1) {
    launch_kernel("cross_entropy_rows_kernel", &cross_entropy_rows_kernel<T, K, false>, l.grid, l.block, 0, stream, p);
  } else {
    launch_kernel("cross_entropy_rows_kernel", &cross_entropy_rows_kernel<T, K, true>, l.grid, l.block, 0, stream, p);
  }
}

template <class T>
void launch_rows(const char* op, const CeParams<T>& p, CeKind kind, cudaStream_t stream) {
  const RowLaunch l = row_launch(p.rows, p.C);
  switch (kind) {
    case CeKind::Index: launch_rows_of<T, CeKind::Index>(p, l, stream); break;
    case CeKind::IndexWeighted: launch_rows_of<T, CeKind::IndexWeighted>(p, l, stream); break;
    case CeKind::Probs: launch_rows_of<T, CeKind::Probs>(p, l, stream); break;
  }
  WICK_CUDA_CHECK_LAUNCH(op);
}

void cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& tw, const Tensor& dlogits, const Tensor& logits,
                   const Tensor& target, const Tensor& weight, int64_t ignore_index, double eps,
                   const Tensor& total_weight, double scale) {
  const int64_t N = logits.size(0), C = logits.size(1), S = logits.size(2);
  if (N * S == 0) return;
  check_positions("cross_entropy", N * S, C);
  TensorDeviceGuard guard(logits);
  const bool by_index = target.dtype() == DType::Int64;
  const DeviceErrorSlot error = by_index ? device_error_slot(logits.device().index) : DeviceErrorSlot{};
  visit_floating("cross_entropy", logits.device(), logits.dtype(), [&]<class T>() {
    CeParams<T> p{};
    p.loss = loss.data<T>();
    p.lse = lse.data<stats_t<T>>();
    p.tw = by_index ? optional_mutable_data<T>(tw) : nullptr;
    p.dx = optional_mutable_data<T>(dlogits);
    p.x = optional_data<T>(logits);
    p.ti = by_index ? optional_data<int64_t>(target) : nullptr;
    p.tq = by_index ? nullptr : optional_data<T>(target);
    p.w = optional_data<T>(weight);
    p.total = optional_data<T>(total_weight);
    p.rows = N * S;
    p.C = C;
    p.S = S;
    p.ignore_index = ignore_index;
    p.eps = eps;
    p.scale = scale;
    p.error = error;
    launch_rows("cross_entropy", p, kind_of(by_index, weight.defined(), eps), stream_for(logits));
  });
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& grad, const Tensor& logits, const Tensor& lse,
                            const Tensor& target, const Tensor& weight, int64_t ignore_index, double eps) {
  const int64_t N = logits.size(0), C = logits.size(1), S = logits.size(2);
  if (dlogits.numel() == 0) return;
  check_positions("cross_entropy_backward", N * S, C);
  TensorDeviceGuard guard(logits);
  const bool by_index = target.dtype() == DType::Int64;
  visit_floating("cross_entropy_backward", logits.device(), logits.dtype(), [&]<class T>() {
    CeParams<T> p{};
    p.dx = dlogits.data<T>();
    p.x = optional_data<T>(logits);
    p.ti = by_index ? optional_data<int64_t>(target) : nullptr;
    p.tq = by_index ? nullptr : optional_data<T>(target);
    p.w = optional_data<T>(weight);
    p.grad = optional_data<T>(grad);
    p.reduced = grad.numel() == 1;
    p.lse_in = optional_data<stats_t<T>>(lse);
    p.rows = N * S;
    p.C = C;
    p.S = S;
    p.ignore_index = ignore_index;
    p.eps = eps;
    p.scale = 1.0;
    launch_rows("cross_entropy_backward", p, kind_of(by_index, weight.defined(), eps), stream_for(logits));
  });
}

void cross_entropy_target_weight(const Tensor& tw, const Tensor& target, const Tensor& weight, int64_t classes,
                                 int64_t ignore_index) {
  const int64_t positions = tw.numel();
  if (positions == 0) return;
  TensorDeviceGuard guard(tw);
  visit_floating("cross_entropy", tw.device(), tw.dtype(), [&]<class T>() {
    launch_kernel("cross_entropy_target_weight_kernel", &cross_entropy_target_weight_kernel<T>, blocks_for(positions),
                  256, 0, stream_for(tw), tw.data<T>(), optional_data<int64_t>(target), optional_data<T>(weight),
                  positions, classes, ignore_index);
    WICK_CUDA_CHECK_LAUNCH("cross_entropy");
  });
}

void cross_entropy_scale(const Tensor& dlogits, const Tensor& grad) {
  const int64_t N = dlogits.size(0), C = dlogits.size(1), S = dlogits.size(2);
  if (dlogits.numel() == 0) return;
  check_positions("cross_entropy_backward", N * S, C);
  TensorDeviceGuard guard(dlogits);
  const RowLaunch l = row_launch(N * S, C);
  visit_floating("cross_entropy_backward", dlogits.device(), dlogits.dtype(), [&]<class T>() {
    if (S == 1) {
      launch_kernel("cross_entropy_scale_kernel", &cross_entropy_scale_kernel<T, false>, l.grid, l.block, 0,
                    stream_for(dlogits), dlogits.data<T>(), optional_data<T>(grad), grad.numel() == 1, N * S, C, S);
    } else {
      launch_kernel("cross_entropy_scale_kernel", &cross_entropy_scale_kernel<T, true>, l.grid, l.block, 0,
                    stream_for(dlogits), dlogits.data<T>(), optional_data<T>(grad), grad.numel() == 1, N * S, C, S);
    }
    WICK_CUDA_CHECK_LAUNCH("cross_entropy_backward");
  });
}

}  // namespace

void register_loss(KernelTable& t) {
  t.cross_entropy = &cross_entropy;
  t.cross_entropy_target_weight = &cross_entropy_target_weight;
  t.cross_entropy_scale = &cross_entropy_scale;
  t.cross_entropy_backward = &cross_entropy_backward;
}

}  // namespace wick::cuda_kernels
