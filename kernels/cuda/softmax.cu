// Softmax, log-softmax and the scans along one dim on CUDA. Inputs and outputs are
// contiguous and seen as [outer, n, inner] around the dim; each kernel writes `=`.
//
// softmax:     y = exp(x - m) * (1 / s),  log-softmax: y = (x - m) - log s,
// with m the row max and s = sum exp(x - m), in float (double for float64). A +inf or NaN
// in a row makes the whole row NaN, as on the CPU.
// - inner == 1, rows up to 1024 x 4 16-byte packs (16384 float32, 32768 16-bit floats, 8192
//   float64; 8 packs per thread made ptxas spill): the row is read once into
//   registers (a warp per row up to 1024 elements, else a block), then max, then exp and
//   sum (one exp per element, kept for the write), then the write (softmax_rows_kernel).
//   Rows whose start is 16-byte aligned with a length a multiple of 16 bytes move in packs;
//   others (any length up to 8192) element by element.
//   Rows of a group wider than a warp share a block, up to 512 threads (4096 bfloat16
//   elements: 2 rows of 256 threads), so a block is not one row's load-reduce-write.
// - inner == 1, packed 16-bit rows of 16392 to 32768 elements (the 32768-wide case):
//   blocks of 512 threads holding the row as loaded (8 packs per thread, 16-bit values, 4
//   in registers and 4 in shared memory), two blocks per multiprocessor so one's
//   reductions overlap the other's loads (softmax_long_kernel).
// - inner == 1, packed rows too long for registers but within one block's shared memory
//   (58,000 float32 or 16-bit elements on an H100): a single read, the row kept in shared
//   memory, the running (max, sum of exp) folded as the packs arrive (softmax_smem_kernel).
// - inner == 1, longer rows, or cuda::KernelTuning::softmax_in_registers off: one online
//   pass (running max and rescaled sum, see LseState), then a write pass that reads the row
//   again (from L2: the block has just read it); a warp per row up to 1024 elements.
// - inner > 1: one thread per (outer, inner) column walking the dim; neighbouring threads
//   read neighbouring columns, so loads are coalesced.
//
// The scans (cumsum, cumprod, cummax, cummin, logcumsumexp; the combining step of each in
// kernels/scan_math.h): sums, products and log-sum-exps accumulate in double for
// float32/64, float for 16-bit floats (a scan's error grows with the row length, hence the
// wider type for float32), int64 for integers and bool.
// - inner == 1: a row is scanned in tiles by a warp (short rows) or a block (long rows):
//   each thread scans 4 consecutive elements, the group scans the thread totals with warp
//   shuffles (and shared memory across warps), and a carry moves from tile to tile. The
//   combining steps are associative but not commutative, so partial prefixes are always
//   combined earlier-first.
// - inner > 1: one thread per column, a serial scan down the dim.
#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/around_dim.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/scan_math.h"

namespace wick::cuda_kernels {

namespace {

// Calls f(i, x) for this thread's share (i = t, t + threads, ...) of row[0, n); 16-byte
// loads from the first aligned element on, every element exactly once.
template <class T, class F>
__device__ __forceinline__ void for_row_elements(const T* row, int64_t n, int t, int threads, F&& f) {
  constexpr int V = kVec<T>;
  const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(row) % 16) / sizeof(T);
  const int64_t head = min(n, misalign == 0 ? int64_t{0} : V - misalign);
  for (int64_t i = t; i < head; i += threads) f(i, row[i]);
  const int64_t packs = (n - head) / V;
  const Pack<T, V>* vp = reinterpret_cast<const Pack<T, V>*>(row + head);
  for (int64_t j = t; j < packs; j += threads) {
    const Pack<T, V> v = vp[j];
#pragma unroll
    for (int k = 0; k < V; ++k) f(head + j * V + k, v.v[k]);
  }
  for (int64_t i = head + packs * V + t; i < n; i += threads) f(i, row[i]);
}

// The softmax statistics as the write pass uses them: y = exp(x - m) * scale, or
// y = (x - m) - log_s for log-softmax (x - m is exact where y is near 0).
template <class A>
struct SoftmaxCoef {
  A m, scale, log_s;
};

template <class A>
__device__ __forceinline__ SoftmaxCoef<A> softmax_coef(LseState<A> st) {
  // +inf max: exp(x - m) is NaN for the inf itself and the CPU returns NaN for the row.
  if (st.m == A(INFINITY)) st.s = A(NAN);
  return {st.m, A(1) / st.s, log(st.s)};
}

// Writes row y from row x with the coefficients; this thread's share as in for_row_elements.
// Packs are used when x and y are equally misaligned (true unless `in` has an odd offset).
template <class T, class A>
__device__ __forceinline__ void softmax_write_row(const T* x, T* y, int64_t n, int t, int threads, SoftmaxCoef<A> c,
                                                  bool log) {
  const auto f = [&](A v) { return log ? (v - c.m) - c.log_s : exp(v - c.m) * c.scale; };
  constexpr int V = kVec<T>;
  const uintptr_t mx = reinterpret_cast<uintptr_t>(x) % 16, my = reinterpret_cast<uintptr_t>(y) % 16;
  if (mx != my) {
    for (int64_t i = t; i < n; i += threads) y[i] = convert<T>(f(static_cast<A>(static_cast<compute_t<T>>(x[i]))));
    return;
  }
  const int64_t misalign = static_cast<int64_t>(mx) / sizeof(T);
  const int64_t head = min(n, misalign == 0 ? int64_t{0} : V - misalign);
  for (int64_t i = t; i < head; i += threads) y[i] = convert<T>(f(static_cast<A>(static_cast<compute_t<T>>(x[i]))));
  const int64_t packs = (n - head) / V;
  const Pack<T, V>* xp = reinterpret_cast<const Pack<T, V>*>(x + head);
  Pack<T, V>* yp = reinterpret_cast<Pack<T, V>*>(y + head);
  for (int64_t j = t; j < packs; j += threads) {
    const Pack<T, V> v = xp[j];
    Pack<T, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = convert<T>(f(static_cast<A>(static_cast<compute_t<T>>(v.v[k]))));
    yp[j] = r;
  }
  for (int64_t i = head + packs * V + t; i < n; i += threads)
    y[i] = convert<T>(f(static_cast<A>(static_cast<compute_t<T>>(x[i]))));
}

template <class A>
struct LseCombine {
  __device__ LseState<A> operator()(const LseState<A>& a, const LseState<A>& b) const { return lse_merge(a, b); }
};

// lse_merge, with a NaN sum kept whatever the maxima (lse_merge drops the sum of a state
// whose max is -inf: a thread that met only NaN and -inf).
template <class A>
struct LseKeepNan {
  __device__ LseState<A> operator()(const LseState<A>& a, const LseState<A>& b) const {
    LseState<A> r = lse_merge(a, b);
    if (a.s != a.s || b.s != b.s) r.s = A(NAN);
    return r;
  }
};

// One warp per row; blockDim = (32, rows per block).
template <class T>
__global__ void softmax_warp_kernel(const T* in, T* out, int64_t rows, int64_t n, bool log) {
  using A = acc_t<T>;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (r >= rows) return;  // whole warps leave together
  const T* x = in + r * n;
  LseState<A> st = lse_identity<A>();
  for_row_elements(x, n, threadIdx.x, kWarp,
                   [&](int64_t, T v) { st = lse_add(st, static_cast<A>(static_cast<compute_t<T>>(v))); });
  st = warp_allreduce(st, LseCombine<A>{});
  softmax_write_row(x, out + r * n, n, threadIdx.x, kWarp, softmax_coef(st), log);
}

// One block per row (blockDim.x a multiple of 32).
template <class T>
__global__ void softmax_block_kernel(const T* in, T* out, int64_t n, bool log) {
  using A = acc_t<T>;
  __shared__ LseState<A> smem[32];
  const int64_t r = blockIdx.x;
  const T* x = in + r * n;
  LseState<A> st = lse_identity<A>();
  for_row_elements(x, n, threadIdx.x, blockDim.x,
                   [&](int64_t, T v) { st = lse_add(st, static_cast<A>(static_cast<compute_t<T>>(v))); });
  st = block_allreduce(st, smem, LseCombine<A>{});
  softmax_write_row(x, out + r * n, n, threadIdx.x, blockDim.x, softmax_coef(st), log);
}

// One thread per (outer, inner) column of [outer, n, inner].
template <class T>
__global__ void softmax_columns_kernel(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, bool log) {
  using A = acc_t<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < outer * inner; c += step) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    LseState<A> st = lse_identity<A>();
    for (int64_t d = 0; d < n; ++d) st = lse_add(st, static_cast<A>(static_cast<compute_t<T>>(in[base + d * inner])));
    const SoftmaxCoef<A> k = softmax_coef(st);
    for (int64_t d = 0; d < n; ++d) {
      const A v = static_cast<A>(static_cast<compute_t<T>>(in[base + d * inner]));
      out[base + d * inner] = convert<T>(log ? (v - k.m) - k.log_s : exp(v - k.m) * k.scale);
    }
  }
}

// --- rows held in registers --------------------------------------------------------------

template <class A>
struct MaxOf {
  __device__ A operator()(A a, A b) const { return fmax(a, b); }  // NaN is dropped here; exp(NaN) brings it back
};
template <class A>
struct SumOf {
  __device__ A operator()(A a, A b) const { return a + b; }
};

// The row's result in every thread of its group: a warp (G == 32) or G / 32 warps (G ==
// blockDim.x), blockDim.y rows per block either way. smem holds one value per warp of the
// block. With G > 32 every thread of the block calls it (those of rows past the end too).
template <class A, class Op>
__device__ __forceinline__ A group_allreduce(A v, Op op, int G, A* smem) {
  v = warp_allreduce(v, op);
  if (G == kWarp) return v;
  const int warps = G / kWarp;
  A* row = smem + threadIdx.y * warps;
  if (threadIdx.x % kWarp == 0) row[threadIdx.x / kWarp] = v;
  __syncthreads();
  // Every thread folds its row's warps in the same order, so all agree bit for bit.
  A r = row[0];
  for (int w = 1; w < warps; ++w) r = op(r, row[w]);
  __syncthreads();  // smem is written again by the next call
  return r;
}

// Softmax of one row per group of G threads (blockDim = (G, rows per block)), the row in
// registers: thread t holds slots p = 0..P-1, slot p being elements (p * G + t) * W .. + W-1
// (W = kVec<T> when kPacked: one 16-byte pack per slot, else W = 1). Rows have n <= P * G * W
// elements.
template <class T, int P, bool kPacked>
__global__ void __launch_bounds__(1024) softmax_rows_kernel(const T* in, T* out, int64_t rows, int64_t n, bool log_out) {
  using A = acc_t<T>;
  constexpr int W = kPacked ? kVec<T> : 1;
  __shared__ A smem[kWarp];
  const int G = blockDim.x, t = threadIdx.x;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  // A warp past the last row leaves; a wider group's threads stay for the block's barriers
  // with nothing to read or write.
  if (r >= rows && G == kWarp) return;
  const bool row_live = r < rows;
  const T* x = in + r * n;
  T* y = out + r * n;
  A v[P][W];
  bool live[P];
  // One read of the row: every slot's load is issued before any value is used.
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int64_t first = (static_cast<int64_t>(p) * G + t) * W;
    live[p] = row_live && first < n;
    if constexpr (kPacked) {
      Pack<T, W> pk{};
      if (live[p]) pk = reinterpret_cast<const Pack<T, W>*>(x)[first / W];
#pragma unroll
      for (int k = 0; k < W; ++k) v[p][k] = static_cast<A>(static_cast<compute_t<T>>(pk.v[k]));
    } else {
      v[p][0] = live[p] ? static_cast<A>(static_cast<compute_t<T>>(x[first])) : A(0);
    }
  }
  A m = A(-INFINITY);
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (live[p]) m = fmax(m, v[p][k]);
  m = group_allreduce(m, MaxOf<A>{}, G, smem);
  // Each slot keeps x - m (log-softmax: y = (x - m) - log s, exact near y = 0) or its exp.
  A s = A(0);
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const A d = v[p][k] - m;  // NaN for a NaN, and for x = m = +inf or -inf
      const A e = exp(d);
      if (live[p]) s += e;
      v[p][k] = log_out ? d : e;
    }
  s = group_allreduce(s, SumOf<A>{}, G, smem);
  const A scale = A(1) / s, log_s = log(s);
#pragma unroll
  for (int p = 0; p < P; ++p) {
    if (!live[p]) continue;
    const int64_t first = (static_cast<int64_t>(p) * G + t) * W;
    if constexpr (kPacked) {
      Pack<T, W> pk;
#pragma unroll
      for (int k = 0; k < W; ++k) pk.v[k] = convert<T>(log_out ? v[p][k] - log_s : v[p][k] * scale);
      reinterpret_cast<Pack<T, W>*>(y)[first / W] = pk;
    } else {
      y[first] = convert<T>(log_out ? v[p][0] - log_s : v[p][0] * scale);
    }
  }
}

// The most slots a thread holds: its values take at most 32 registers (with launch bounds of
// 1024 threads a thread has 64), and at most 8 loads are in flight. Packed slots stop at 4:
// 8 float32 packs (32 values) or 8 float64 packs made ptxas spill (28 and 12 bytes, the
// compiler gates); 4 bfloat16 or half packs are 32 values in 64 registers without a spill.
template <class T, bool kPacked>
constexpr int max_register_slots() {
  const int w = kPacked ? kVec<T> : 1;
  const int by_registers = 128 / (w * static_cast<int>(sizeof(acc_t<T>)));
  const int most = kPacked ? 4 : 8;
  return by_registers < most ? by_registers : most;
}

// Launches softmax_rows_kernel when the row fits in registers; false otherwise.
template <class T, bool kPacked>
bool launch_softmax_rows(const T* x, T* y, int64_t rows, int64_t n, bool log, cudaStream_t stream) {
  constexpr int64_t W = kPacked ? kVec<T> : 1;
  constexpr int kMaxSlots = max_register_slots<T, kPacked>();
  const int64_t slots = (n + W - 1) / W;  // per row
  if (slots > int64_t{1024} * kMaxSlots) return false;
  // A warp per row while kMaxSlots slots per lane suffice, else a block of 128-1024 threads;
  // P is the smallest power of two that covers the row with 256 threads (with up to 1024
  // when P would pass kMaxSlots).
  int G = kWarp;
  int64_t P = 1;
  while (P * G < slots && P < kMaxSlots) P *= 2;
  if (P * G < slots) {
    G = 128;
    P = 1;
    while (P * 256 < slots && P < kMaxSlots) P *= 2;
    while (int64_t{G} * P < slots) G *= 2;
  }
  // Several rows per block (up to 512 threads): a block's rows are reduced and written while
  // its other rows' loads, and other blocks', are in flight.
  const int rows_per_block = G == kWarp ? 8 : std::max(1, 512 / G);
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  WICK_CHECK(blocks < (int64_t{1} << 31), log ? "log_softmax" : "softmax", ": too many rows (", rows, ")");
  const dim3 grid(static_cast<unsigned>(blocks)), block(static_cast<unsigned>(G), static_cast<unsigned>(rows_per_block));
  const auto go = [&](auto kernel) { launch_kernel("softmax_rows_kernel", kernel, grid, block, 0, stream, x, y, rows, n, log); };
  if (P == 1) go(&softmax_rows_kernel<T, 1, kPacked>);
  else if (P == 2) go(&softmax_rows_kernel<T, 2, kPacked>);
  else if (P == 4 || kMaxSlots == 4) go(&softmax_rows_kernel<T, 4, kPacked>);
  else if constexpr (kMaxSlots >= 8) go(&softmax_rows_kernel<T, 8, kPacked>);
  return true;
}

// Softmax of one long 16-bit row per block of 512 threads (packed rows of 2049 to 4096
// packs: 16392 to 32768 elements), the row kept as loaded: P 16-byte packs per thread, all
// loaded before any is used, the first kLongInRegisters in registers (4 registers each) and
// the rest in shared memory (32 KiB per block). At most 64 registers, so two blocks share a
// multiprocessor and one block's reductions and writes overlap the other's loads (a
// 1024-thread block holding the row as float had the multiprocessor to itself). exp is
// taken twice per element (for the sum and for the write), where memory, not exp, bounds
// 2-byte elements. (All 8 packs in registers made ptxas spill 60-84 bytes for bfloat16.)
inline constexpr int kLongThreads = 512;
inline constexpr int kLongPacks = 8;
inline constexpr int kLongInRegisters = 4;

template <class T, int P>
__global__ void __launch_bounds__(kLongThreads, 2) softmax_long_kernel(const T* in, T* out, int64_t n, bool log_out) {
  using A = acc_t<T>;
  constexpr int W = kVec<T>, R = kLongInRegisters;
  __shared__ A smem[kWarp];
  __shared__ Pack<T, W> spilled[P - R][kLongThreads];
  const int t = threadIdx.x;
  const int64_t packs = n / W;
  const Pack<T, W>* x = reinterpret_cast<const Pack<T, W>*>(in + static_cast<int64_t>(blockIdx.x) * n);
  Pack<T, W>* y = reinterpret_cast<Pack<T, W>*>(out + static_cast<int64_t>(blockIdx.x) * n);
  Pack<T, W> v[P];
#pragma unroll
  for (int p = 0; p < P; ++p)
    if (p * kLongThreads + t < packs) v[p] = x[p * kLongThreads + t];
#pragma unroll
  for (int p = R; p < P; ++p) spilled[p - R][t] = v[p];
  // f(p, pack) for each of this thread's packs in the row: the register packs unrolled, the
  // shared-memory ones (this thread's own slots: no barrier) one at a time, so that the
  // compiler does not hold them all in registers again.
  const auto each_pack = [&](auto&& f) {
#pragma unroll
    for (int p = 0; p < R; ++p)
      if (p * kLongThreads + t < packs) f(p, v[p]);
#pragma unroll 1
    for (int p = R; p < P; ++p)
      if (p * kLongThreads + t < packs) f(p, spilled[p - R][t]);
  };
  const auto widen = [](T e) { return static_cast<A>(static_cast<compute_t<T>>(e)); };
  A m = A(-INFINITY);
  each_pack([&](int, const Pack<T, W>& pk) {
#pragma unroll
    for (int k = 0; k < W; ++k) m = fmax(m, widen(pk.v[k]));
  });
  m = block_allreduce(m, smem, MaxOf<A>{});
  A s = A(0);
  each_pack([&](int, const Pack<T, W>& pk) {
#pragma unroll
    for (int k = 0; k < W; ++k) s += exp(widen(pk.v[k]) - m);  // NaN for a NaN, and for x = m = +-inf
  });
  s = block_allreduce(s, smem, SumOf<A>{});
  const A scale = A(1) / s, log_s = log(s);
  each_pack([&](int p, const Pack<T, W>& pk) {
    Pack<T, W> o;
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const A d = widen(pk.v[k]) - m;
      o.v[k] = convert<T>(log_out ? d - log_s : exp(d) * scale);
    }
    y[p * kLongThreads + t] = o;
  });
}

// Launches softmax_long_kernel for packed 16-bit rows of 2049 to 4096 packs; false otherwise.
template <class T>
bool launch_softmax_long(const T* x, T* y, int64_t rows, int64_t n, bool log, cudaStream_t stream) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    const int64_t packs = n / kVec<T>;
    if (packs <= 2048 || packs > int64_t{kLongThreads} * kLongPacks || rows >= (int64_t{1} << 31)) return false;
    launch_kernel("softmax_long_kernel", &softmax_long_kernel<T, kLongPacks>, static_cast<unsigned>(rows), kLongThreads,
                  0, stream, x, y, n, log);
    return true;
  }
}

// Softmax of one row per block of 1024 threads, the row held in shared memory (rows too
// long for registers, short enough for one block's shared memory): the row is read once in
// 16-byte packs (kSmemUnroll loads per thread issued before any is used) into shared
// memory as the accumulation type, folding each thread's running (max, sum of exp(x - max))
// as the packs arrive (LseState: the sum rescaled when the max grows), so the exp work
// overlaps the loads still in flight; one reduction of the states; then the write, exp(x - m)
// * (1 / s) or (x - m) - log s from shared memory. One read of memory (the block has the
// multiprocessor to itself: 128 KiB of shared memory for 32768 float32 elements), two exp
// per element. Every element of the row is a whole pack's (the launcher asks n to be a
// multiple of the pack).
inline constexpr int kSmemUnroll = 4;
inline constexpr int kSmemThreads = 1024;

template <class T>
__global__ void __launch_bounds__(kSmemThreads) softmax_smem_kernel(const T* in, T* out, int64_t n, bool log_out) {
  using A = acc_t<T>;
  constexpr int W = kVec<T>, U = kSmemUnroll;
  __shared__ LseState<A> partial_states[kWarp];
  A* row = dynamic_shared_memory<A>();
  const int t = threadIdx.x;
  const int64_t packs = n / W, step = int64_t{kSmemThreads} * U;
  const Pack<T, W>* x = reinterpret_cast<const Pack<T, W>*>(in + static_cast<int64_t>(blockIdx.x) * n);
  Pack<T, W>* y = reinterpret_cast<Pack<T, W>*>(out + static_cast<int64_t>(blockIdx.x) * n);
  // The thread's running max m and sum s of exp(x - m), updated once per step of U packs: the
  // step's max first, the sum rescaled by exp(old m - new m) only when it grows. A NaN makes
  // s NaN (exp(NaN - m)); +inf makes m +inf and exp(inf - inf) NaN, as the CPU's NaN row.
  A m = A(-INFINITY), s = A(0);
  for (int64_t p0 = t; p0 < packs; p0 += step) {
    Pack<T, W> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (p0 + u * kSmemThreads < packs) v[u] = x[p0 + u * kSmemThreads];
    A a[U][W];
    A sm = m;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < W; ++k) {
        a[u][k] = static_cast<A>(static_cast<compute_t<T>>(v[u].v[k]));
        if (p0 + u * kSmemThreads < packs) sm = fmax(sm, a[u][k]);
      }
    if (sm > m) {
      s *= exp(m - sm);  // exp(-inf) = 0 while m is still -inf
      m = sm;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t p = p0 + u * kSmemThreads;
      if (p >= packs) break;
#pragma unroll
      for (int k = 0; k < W; ++k) {
        row[p * W + k] = a[u][k];
        // -inf adds nothing (and would be exp(NaN) while m is still -inf).
        s += a[u][k] == A(-INFINITY) ? A(0) : exp(a[u][k] - m);
      }
    }
  }
  LseState<A> st{m, s};
  st = block_allreduce(st, partial_states, LseKeepNan<A>{});
  // A +inf max, or no element above -inf: the CPU's row is NaN.
  if (st.m == A(INFINITY) || st.m == A(-INFINITY)) st.s = A(NAN);
  const A scale = A(1) / st.s, log_s = log(st.s);
  for (int64_t p = t; p < packs; p += kSmemThreads) {
    Pack<T, W> o;
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const A d = row[p * W + k] - st.m;
      o.v[k] = convert<T>(log_out ? d - log_s : exp(d) * scale);
    }
    y[p] = o;
  }
}

// Launches softmax_smem_kernel when rows are 16-byte packs and one fits in the device's
// shared memory per block (227 KiB on an H100: 58,000 float32 or 16-bit elements, 29,000
// float64); false otherwise.
template <class T>
bool launch_softmax_smem(const T* x, T* y, int64_t rows, int64_t n, bool log, cudaStream_t stream, int device) {
  using A = acc_t<T>;
  if (n % kVec<T> != 0 || rows >= (int64_t{1} << 31)) return false;
  const int64_t bytes = n * static_cast<int64_t>(sizeof(A));
  const int64_t limit = device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(device) -
                        static_cast<int64_t>(kWarp * sizeof(LseState<A>));  // the kernel's static partials
  if (bytes > limit) return false;
  // Past 48 KiB the kernel must be allowed more: once per device, up to the device's limit
  // (a driver call on every launch would cost host time).
  constexpr int kMaxDevices = 64;
  static std::atomic<bool> raised[kMaxDevices] = {};
  const bool known = device >= 0 && device < kMaxDevices && raised[device].load(std::memory_order_relaxed);
  if (bytes > 48 * 1024 && !known) {
    WICK_CUDA_CHECK(cudaFuncSetAttribute(&softmax_smem_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(limit)));
    if (device >= 0 && device < kMaxDevices) raised[device].store(true, std::memory_order_relaxed);
  }
  launch_kernel("softmax_smem_kernel", &softmax_smem_kernel<T>, static_cast<unsigned>(rows), kSmemThreads,
                static_cast<size_t>(bytes), stream, x, y, n, log);
  return true;
}

inline constexpr int64_t kWarpRowMax = 1024;  // longer rows get a block each

void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  if (out.numel() == 0) return;
  TensorDeviceGuard guard(in);
  const cudaStream_t stream = stream_for(in);
  const AroundDim a = around_dim(in, dim);
  visit_dtype(in.dtype(), [&]<class T>() {
    if constexpr (!std::is_floating_point_v<compute_t<T>>) {
      throw_unsupported_dtype(name, in.device(), in.dtype());
    } else {
      const T* x = static_cast<const T*>(in.data_ptr());
      T* y = out.data<T>();
      // Packs when every row starts on a 16-byte boundary.
      const bool packed = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0 &&
                          (a.n * static_cast<int64_t>(sizeof(T))) % 16 == 0;
      if (a.inner == 1 && cuda::kernel_tuning().softmax_in_registers &&
          (packed ? launch_softmax_long<T>(x, y, a.outer, a.n, log, stream) ||
                        launch_softmax_rows<T, true>(x, y, a.outer, a.n, log, stream) ||
                        launch_softmax_smem<T>(x, y, a.outer, a.n, log, stream, in.device().index)
                  : launch_softmax_rows<T, false>(x, y, a.outer, a.n, log, stream))) {
        // done
      } else if (a.inner == 1 && a.n <= kWarpRowMax) {
        constexpr int kRowsPerBlock = 8;
        const int64_t blocks = (a.outer + kRowsPerBlock - 1) / kRowsPerBlock;
        WICK_CHECK(blocks < (int64_t{1} << 31), name, ": too many rows (", a.outer, ")");
        launch_kernel("softmax_warp_kernel", &softmax_warp_kernel<T>, static_cast<unsigned>(blocks), dim3(kWarp, kRowsPerBlock), 0, stream, x, y, a.outer,
                                                                                                      a.n, log);
      } else if (a.inner == 1) {
        WICK_CHECK(a.outer < (int64_t{1} << 31), name, ": too many rows (", a.outer, ")");
        // About 16 elements per thread, 128 to 1024 threads.
        int threads = 128;
        while (threads < 1024 && threads * 16 < a.n) threads *= 2;
        launch_kernel("softmax_block_kernel", &softmax_block_kernel<T>, static_cast<unsigned>(a.outer), threads, 0, stream, x, y, a.n, log);
      } else {
        launch_kernel("softmax_columns_kernel", &softmax_columns_kernel<T>, blocks_for(a.outer * a.inner), 256, 0, stream, x, y, a.outer, a.n, a.inner, log);
      }
      WICK_CUDA_CHECK_LAUNCH(name);
    }
  });
}

// --- scans ----------------------------------------------------------------------------

// Sums, products and log-sum-exps accumulate in double for float32 (a scan's error grows
// with the row), float for 16-bit floats, int64 for integers and bool; cummax/cummin
// compare in the compute type.
template <ScanOp Op, class T>
using scan_acc_t = std::conditional_t<
    Op == ScanOp::Max || Op == ScanOp::Min, compute_t<T>,
    std::conditional_t<std::is_same_v<T, float>, double, acc_t<T>>>;

template <ScanOp Op, class T>
using ScanFnFor = ScanFn<Op, scan_acc_t<Op, T>>;

inline constexpr int kScanItems = 4;  // consecutive elements per thread per tile

// Writes one scanned element: the value, and for cummax/cummin its index.
template <ScanOp Op, class T>
__device__ __forceinline__ void store_scanned(typename ScanFnFor<Op, T>::State s, scan_out_t<Op, T>* y, int64_t* idx,
                                              int64_t at) {
  using Fn = ScanFnFor<Op, T>;
  y[at] = convert<scan_out_t<Op, T>>(Fn::value(s));
  if constexpr (Fn::kHasIndex) idx[at] = Fn::index(s);
}

template <ScanOp Op, class T>
__device__ __forceinline__ typename ScanFnFor<Op, T>::State scan_leaf(const T* x, int64_t at, int64_t i) {
  using Fn = ScanFnFor<Op, T>;
  return Fn::leaf(static_cast<scan_acc_t<Op, T>>(static_cast<compute_t<T>>(x[at])), i);
}

// Scans rows of [rows, n] in tiles of kScanItems * group elements. A group is a warp
// (blockDim = (32, rows per block)) or the whole block (blockDim = (threads, 1)).
template <ScanOp Op, class T>
__global__ void scan_rows_kernel(const T* in, scan_out_t<Op, T>* out, int64_t* indices, int64_t rows, int64_t n) {
  using Fn = ScanFnFor<Op, T>;
  using S = typename Fn::State;
  __shared__ S warp_totals[32];
  const bool block_group = blockDim.y == 1 && blockDim.x > kWarp;  // uniform over the block
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const int t = threadIdx.x, group = blockDim.x, lane = t % kWarp, warp = t / kWarp;
  if (!block_group && r >= rows) return;  // whole warps leave together
  const T* x = in + r * n;
  auto* y = out + r * n;
  int64_t* idx = Fn::kHasIndex ? indices + r * n : nullptr;
  auto combine = [](S a, S b) { return Fn::combine(a, b); };
  S carry = Fn::identity();
  for (int64_t tile = 0; tile < n; tile += static_cast<int64_t>(group) * kScanItems) {
    const int64_t first = tile + static_cast<int64_t>(t) * kScanItems;
    S v[kScanItems];
    S total = Fn::identity();
#pragma unroll
    for (int k = 0; k < kScanItems; ++k) {
      if (first + k < n) total = Fn::combine(total, scan_leaf<Op>(x, first + k, first + k));
      v[k] = total;
    }
    // The prefix of the group before this thread (exclusive), and the group's total.
    const S inclusive = warp_inclusive_scan(total, lane, combine);
    S before = shfl_up(inclusive, 1);
    if (lane == 0) before = Fn::identity();
    S tile_total;
    if (block_group) {
      if (lane == kWarp - 1) warp_totals[warp] = inclusive;
      __syncthreads();
      S warps_before = Fn::identity();
      tile_total = Fn::identity();
      for (int w = 0; w < group / kWarp; ++w) {
        if (w < warp) warps_before = Fn::combine(warps_before, warp_totals[w]);
        tile_total = Fn::combine(tile_total, warp_totals[w]);
      }
      __syncthreads();  // warp_totals is rewritten by the next tile
      before = Fn::combine(warps_before, before);
    } else {
      tile_total = shfl_from(inclusive, kWarp - 1);
    }
    const S prefix = Fn::combine(carry, before);
#pragma unroll
    for (int k = 0; k < kScanItems; ++k)
      if (first + k < n) store_scanned<Op, T>(Fn::combine(prefix, v[k]), y, idx, first + k);
    carry = Fn::combine(carry, tile_total);
  }
}

// One thread per (outer, inner) column of [outer, n, inner]: a serial scan down the dim.
template <ScanOp Op, class T>
__global__ void scan_columns_kernel(const T* in, scan_out_t<Op, T>* out, int64_t* indices, int64_t outer, int64_t n,
                                    int64_t inner) {
  using Fn = ScanFnFor<Op, T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < outer * inner; c += step) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    typename Fn::State s = Fn::identity();
    for (int64_t d = 0; d < n; ++d) {
      s = Fn::combine(s, scan_leaf<Op>(in, base + d * inner, d));
      store_scanned<Op, T>(s, out, indices, base + d * inner);
    }
  }
}

inline constexpr int64_t kWarpScanMax = 2048;  // longer rows get a block each

void scan(ScanOp op, const Tensor& out, const Tensor& indices, const Tensor& in, int64_t dim) {
  if (out.numel() == 0) return;
  TensorDeviceGuard guard(in);
  const cudaStream_t stream = stream_for(in);
  const AroundDim a = around_dim(in, dim);
  const char* name = scan_op_name(op);
  visit_scan_op(op, [&]<ScanOp Op>() {
    visit_dtype(in.dtype(), [&]<class T>() {
      if constexpr (Op == ScanOp::LogSumExp && !std::is_floating_point_v<compute_t<T>>) {
        throw_unsupported_dtype(name, out.device(), in.dtype());
      } else {
        using Out = scan_out_t<Op, T>;
        WICK_CHECK(out.dtype() == dtype_v<Out>, name, ": the output of shape ", shape_str(out.shape()), " is ",
                   dtype_name(out.dtype()), ", expected ", dtype_name(dtype_v<Out>));
        const T* x = static_cast<const T*>(in.data_ptr());
        Out* y = static_cast<Out*>(out.data_ptr());
        int64_t* idx = Op == ScanOp::Max || Op == ScanOp::Min ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
        if (a.inner == 1) {
          if (a.n <= kWarpScanMax) {
            constexpr int kRowsPerBlock = 8;
            const int64_t blocks = (a.outer + kRowsPerBlock - 1) / kRowsPerBlock;
            WICK_CHECK(blocks < (int64_t{1} << 31), name, ": too many rows (", a.outer, ")");
            launch_kernel("scan_rows_kernel", &scan_rows_kernel<Op, T>, static_cast<unsigned>(blocks), dim3(kWarp, kRowsPerBlock), 0, stream, x, y, idx, a.outer, a.n);
          } else {
            WICK_CHECK(a.outer < (int64_t{1} << 31), name, ": too many rows (", a.outer, ")");
            launch_kernel("scan_rows_kernel", &scan_rows_kernel<Op, T>, static_cast<unsigned>(a.outer), dim3(256, 1), 0, stream, x, y, idx, a.outer, a.n);
          }
        } else {
          launch_kernel("scan_columns_kernel", &scan_columns_kernel<Op, T>, blocks_for(a.outer * a.inner), 256, 0, stream, x, y, idx, a.outer, a.n, a.inner);
        }
        WICK_CUDA_CHECK_LAUNCH(name);
      }
    });
  });
}

}  // namespace

void register_softmax(KernelTable& t) {
  t.softmax = &softmax;
  t.scan = &scan;
}

}  // namespace wick::cuda_kernels
