// Layer norm and RMS norm (RMS: the mean taken as 0, no bias) on CUDA, forward and backward;
// the math is that of kernels/cpu/norm.cpp. x and dy are contiguous [M, K]; every kernel
// writes with `=`. Statistics accumulate in stats_t<T> (double for float64, float otherwise).
// - forward, rows up to 1024 threads x 4 16-byte packs (32768 16-bit, 16384 float32, 8192
//   float64 elements): a row is read once into registers (a warp per row up to 32 x 4
//   packs, 8 rows per block; else a block per row), its mean and then its centred sum of
//   squares taken from the registers, mean and invstd saved, and the output written from the
//   same registers (layer_norm_rows_kernel). Longer rows: one pass that sums x - x[0] and its
//   square (shifted sums: no cancellation for large offsets), then a write pass that reads
//   the row again, from L2 (layer_norm_loop_kernel).
// - backward: dx in one pass over dy and x held in registers (a warp or a block per row, up
//   to 512 threads x 4 packs), the row's sums of g = dy w and g xhat reduced over the group;
//   in the same pass each thread adds dy and dy xhat of its own columns to accumulators in
//   shared memory, one set per row group, so no two threads ever add to one address (no
//   atomics: the bits do not depend on timing). A block walks a contiguous run of rows
//   (one wave of blocks in all), then folds its groups' accumulators in a fixed order into
//   its partial column sums [block][2][K] (layer_norm_backward_rows_kernel); one short
//   kernel sums the blocks' partials in order (layer_norm_param_grad_kernel). Longer rows:
//   two passes over the row (sums, then dx and the accumulators, in shared memory or, past
//   its size, in the block's partial row in global memory; layer_norm_backward_loop_kernel).
// Rows move in 16-byte packs when their length is a multiple of 16 bytes and every pointer
// is 16-byte aligned, else element by element (odd widths). Element loops index a row with
// 32-bit integers from a per-row base: no integer division anywhere in these kernels
// (tools/kernel_gates.py's no_div64 and no_loop_div).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/norm_math.h"
#include "kernels/optional_data.h"
#include "kernels/visit_floating.h"
#include "kernels/cuda/norm_common.cuh"

namespace wick::cuda_kernels {

namespace {

using namespace norm_common;

// --- layer norm and RMS norm ----------------------------------------------------------------

template <class T>
__device__ __forceinline__ stats_t<T> to_stats(T v) {
  return static_cast<stats_t<T>>(static_cast<compute_t<T>>(v));
}

// The row's result in every thread of its group: a warp (blockDim.x == 32, blockDim.y rows
// per block) or the whole block (blockDim.y == 1). smem holds one value per warp.
template <class S, class Op>
__device__ __forceinline__ S group_allreduce(S v, Op op, S* smem) {
  if (blockDim.x == kWarp) return warp_allreduce(v, op);
  return block_allreduce(v, smem, op);
}

// Slots: thread t of a group of G threads holds slots p = 0..P-1 of a row, slot p being
// elements (p G + t) W .. + W - 1 (W = kVec<T> when kPacked: one 16-byte pack per slot, else
// W = 1). Rows have n <= P G W elements; a slot past the row is dead.
template <class T, bool kPacked>
inline constexpr int kSlotWidth = kPacked ? kVec<T> : 1;

// Layer norm (rms: RMS norm) forward of one row per group of G threads, blockDim = (G, rows
// per block), the row in registers.
template <class T, int P, bool kPacked>
__global__ void __launch_bounds__(1024)
    layer_norm_rows_kernel(T* out, stats_t<T>* mean_out, stats_t<T>* rstd_out, const T* x, const T* w, const T* b,
                           int64_t rows, int n, bool rms, double eps) {
  using A = stats_t<T>;
  constexpr int W = kSlotWidth<T, kPacked>;
  using Slot = Pack<T, W>;
  __shared__ A smem[kWarp];
  const int G = blockDim.x, t = threadIdx.x;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (r >= rows) return;  // whole groups leave together (a block holds one row when G > 32)
  const Slot* xr = reinterpret_cast<const Slot*>(x + r * n);
  A v[P][W];
  bool live[P];
  // One read of the row: every slot's load is issued before any value is used.
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const int slot = p * G + t;
    live[p] = slot * W < n;
    Slot pk{};
    if (live[p]) pk = xr[slot];
#pragma unroll
    for (int k = 0; k < W; ++k) v[p][k] = to_stats(pk.v[k]);
  }
  A mean = A(0);
  if (!rms) {
    A s = A(0);
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int k = 0; k < W; ++k) s += v[p][k];  // dead slots hold 0
    mean = group_allreduce(s, Plus{}, smem) / static_cast<A>(n);
  }
  A q = A(0);
#pragma unroll
  for (int p = 0; p < P; ++p)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const A d = v[p][k] - mean;
      if (live[p]) q += d * d;
    }
  const A rstd = norm_math::inverse_std(group_allreduce(q, Plus{}, smem) / static_cast<A>(n), eps);
  if (t == 0) {
    if (mean_out) mean_out[r] = mean;
    rstd_out[r] = rstd;
  }
  const Slot* wp = reinterpret_cast<const Slot*>(w);
  const Slot* bp = reinterpret_cast<const Slot*>(b);
  Slot* yr = reinterpret_cast<Slot*>(out + r * n);
#pragma unroll
  for (int p = 0; p < P; ++p) {
    if (!live[p]) continue;
    const int slot = p * G + t;
    Slot ws{}, bs{}, o;
    if (wp) ws = wp[slot];
    if (bp) bs = bp[slot];
#pragma unroll
    for (int k = 0; k < W; ++k) {
      A y = (v[p][k] - mean) * rstd;
      if (wp) y *= to_stats(ws.v[k]);
      if (bp) y += to_stats(bs.v[k]);
      o.v[k] = convert<T>(y);
    }
    yr[slot] = o;
  }
}

// Rows too long for registers: one block of kLoopThreads per row; kLoopUnroll slots of each
// thread loaded before any is used.
inline constexpr int kLoopThreads = 512;
inline constexpr int kLoopUnroll = 4;

// Layer norm (rms: RMS norm) forward of one row per block: one pass for the statistics, from
// the shifted sums of d = x - x[0] (mean = x[0] + sum d / n, var = sum d^2 / n - (sum d / n)^2;
// the shift keeps a large common offset from cancelling), then the write pass.
template <class T, bool kPacked>
__global__ void __launch_bounds__(kLoopThreads)
    layer_norm_loop_kernel(T* out, stats_t<T>* mean_out, stats_t<T>* rstd_out, const T* x, const T* w, const T* b,
                           int n, bool rms, double eps) {
  using A = stats_t<T>;
  constexpr int W = kSlotWidth<T, kPacked>, U = kLoopUnroll, G = kLoopThreads;
  using Slot = Pack<T, W>;
  __shared__ Pair<A> smem[kWarp];
  const int t = threadIdx.x, slots = static_cast<int>(static_cast<unsigned>(n) / W);
  const int64_t r = blockIdx.x;
  const Slot* xr = reinterpret_cast<const Slot*>(x + r * n);
  const A shift = rms ? A(0) : to_stats(x[r * n]);
  Pair<A> s{A(0), A(0)};
  for (int j0 = t; j0 < slots; j0 += G * U) {
    Slot v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (j0 + u * G < slots) v[u] = xr[j0 + u * G];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (j0 + u * G < slots)
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const A d = to_stats(v[u].v[k]) - shift;
          s.a += d;
          s.b += d * d;
        }
  }
  s = block_allreduce(s, smem, PairPlus{});
  const A inv_n = A(1) / static_cast<A>(n), m1 = s.a * inv_n;
  const A mean = rms ? A(0) : shift + m1;
  const A var = rms ? s.b * inv_n : fmax(s.b * inv_n - m1 * m1, A(0));
  const A rstd = norm_math::inverse_std(var, eps);
  if (t == 0) {
    if (mean_out) mean_out[r] = mean;
    rstd_out[r] = rstd;
  }
  const Slot* wp = reinterpret_cast<const Slot*>(w);
  const Slot* bp = reinterpret_cast<const Slot*>(b);
  Slot* yr = reinterpret_cast<Slot*>(out + r * n);
  for (int j0 = t; j0 < slots; j0 += G * U) {
    Slot v[U], ws[U], bs[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = j0 + u * G;
      if (j >= slots) continue;
      v[u] = xr[j];
      if (wp) ws[u] = wp[j];
      if (bp) bs[u] = bp[j];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = j0 + u * G;
      if (j >= slots) continue;
      Slot o;
#pragma unroll
      for (int k = 0; k < W; ++k) {
        A y = (to_stats(v[u].v[k]) - mean) * rstd;
        if (wp) y *= to_stats(ws[u].v[k]);
        if (bp) y += to_stats(bs[u].v[k]);
        o.v[k] = convert<T>(y);
      }
      yr[j] = o;
    }
  }
}

// Layer norm (rms: RMS norm) backward, one row per group of G threads (blockDim = (G, R)), dy
// and x in registers. Block b walks rows [b rows_per_block, (b + 1) rows_per_block), group y
// taking every R-th. dx (when wanted) = rstd (g - sum(g) / n - xhat sum(g xhat) / n), g = dy w.
// With partial: each group adds dy and dy xhat of its slots into its own accumulators in
// dynamic shared memory, element k of slot s at [k * stride + s] (stride = P G + 1: lanes
// touch consecutive words), the dbias sums first and the dweight sums W * stride after; at
// the end the block folds the R groups in order into partial[b][0][c] (sum dy) and
// partial[b][1][c] (sum dy xhat).
template <class T, int P, bool kPacked>
__global__ void __launch_bounds__(512)
    layer_norm_backward_rows_kernel(T* dx, stats_t<T>* partial, const T* dy, const T* x, const T* w,
                                    const stats_t<T>* mean, const stats_t<T>* rstd, int64_t rows,
                                    int64_t rows_per_block, int n, bool rms) {
  using A = stats_t<T>;
  constexpr int W = kSlotWidth<T, kPacked>;
  using Slot = Pack<T, W>;
  __shared__ Pair<A> smem[kWarp];
  const int G = blockDim.x, R = blockDim.y, t = threadIdx.x, gy = threadIdx.y;
  const int stride = P * G + 1, region = 2 * W * stride;
  A* acc = partial ? dynamic_shared_memory<A>() + gy * region : nullptr;
  if (partial) {
    for (int i = t; i < region; i += G) acc[i] = A(0);  // this group's own accumulators
    __syncthreads();                                    // zeroed by other lanes than those that add to them
  }
  const Slot* wp = reinterpret_cast<const Slot*>(w);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block;
  const int64_t last = min(rows, first + rows_per_block);
  for (int64_t r = first + gy; r < last; r += R) {
    const Slot* dyr = reinterpret_cast<const Slot*>(dy + r * n);
    const Slot* xr = reinterpret_cast<const Slot*>(x + r * n);
    Slot gv[P], xv[P];
    bool live[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int slot = p * G + t;
      live[p] = slot * W < n;
      gv[p] = Slot{};
      xv[p] = Slot{};
      if (live[p]) {
        gv[p] = dyr[slot];
        xv[p] = xr[slot];
      }
    }
    const A mu = rms ? A(0) : mean[r], rs = rstd[r];
    if (dx) {
      Pair<A> s{A(0), A(0)};
#pragma unroll
      for (int p = 0; p < P; ++p) {
        Slot ws{};
        if (wp && live[p]) ws = wp[p * G + t];
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const A g = wp ? to_stats(gv[p].v[k]) * to_stats(ws.v[k]) : to_stats(gv[p].v[k]);
          s.a += g;  // dead slots: dy = 0
          s.b += g * ((to_stats(xv[p].v[k]) - mu) * rs);
        }
      }
      s = group_allreduce(s, PairPlus{}, smem);
      const A inv_n = A(1) / static_cast<A>(n);
      const A a = rms ? A(0) : s.a * inv_n, bq = s.b * inv_n;
      Slot* dxr = reinterpret_cast<Slot*>(dx + r * n);
#pragma unroll
      for (int p = 0; p < P; ++p) {
        if (!live[p]) continue;
        const int slot = p * G + t;
        Slot ws{}, o;
        if (wp) ws = wp[slot];
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const A g = wp ? to_stats(gv[p].v[k]) * to_stats(ws.v[k]) : to_stats(gv[p].v[k]);
          const A xhat = (to_stats(xv[p].v[k]) - mu) * rs;
          o.v[k] = convert<T>(rs * (g - a - xhat * bq));
        }
        dxr[slot] = o;
      }
    }
    if (acc) {
#pragma unroll
      for (int p = 0; p < P; ++p) {
        if (!live[p]) continue;
        const int slot = p * G + t;
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const A g = to_stats(gv[p].v[k]);
          acc[k * stride + slot] += g;
          acc[(W + k) * stride + slot] += g * ((to_stats(xv[p].v[k]) - mu) * rs);
        }
      }
    }
  }
  if (!partial) return;
  __syncthreads();
  const A* base = dynamic_shared_memory<A>();
  A* out = partial + static_cast<int64_t>(blockIdx.x) * 2 * n;
  for (int c = gy * G + t; c < n; c += G * R) {
    const unsigned slot = static_cast<unsigned>(c) / W, k = static_cast<unsigned>(c) % W;
    A sdy = A(0), sdyx = A(0);
    for (int g = 0; g < R; ++g) {
      sdy += base[g * region + k * stride + slot];
      sdyx += base[g * region + (W + k) * stride + slot];
    }
    out[c] = sdy;
    out[n + c] = sdyx;
  }
}

// The backward of rows too long for registers: one block of kLoopThreads per row at a time,
// walking rows [b rows_per_block, (b + 1) rows_per_block); per row one pass for the sums of g
// and g xhat (when dx is wanted), then one for dx and the column accumulators. A thread owns
// the same columns in every row. The accumulators (sum dy at [c], sum dy xhat at [n + c]) are
// in dynamic shared memory when acc_in_smem, else the block's own partial row in global
// memory, read and written by the owning thread only.
template <class T, bool kPacked>
__global__ void __launch_bounds__(kLoopThreads)
    layer_norm_backward_loop_kernel(T* dx, stats_t<T>* partial, const T* dy, const T* x, const T* w,
                                    const stats_t<T>* mean, const stats_t<T>* rstd, int64_t rows,
                                    int64_t rows_per_block, int n, bool rms, bool acc_in_smem) {
  using A = stats_t<T>;
  constexpr int W = kSlotWidth<T, kPacked>, U = kLoopUnroll, G = kLoopThreads;
  using Slot = Pack<T, W>;
  __shared__ Pair<A> smem[kWarp];
  const int t = threadIdx.x, slots = static_cast<int>(static_cast<unsigned>(n) / W);
  A* out = partial ? partial + static_cast<int64_t>(blockIdx.x) * 2 * n : nullptr;
  A* acc = out && acc_in_smem ? dynamic_shared_memory<A>() : out;
  if (acc) {
    for (int i = t; i < 2 * n; i += G) acc[i] = A(0);
    __syncthreads();  // zeroed by other threads than the columns' owners
  }
  const Slot* wp = reinterpret_cast<const Slot*>(w);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * rows_per_block;
  const int64_t last = min(rows, first + rows_per_block);
  for (int64_t r = first; r < last; ++r) {
    const Slot* dyr = reinterpret_cast<const Slot*>(dy + r * n);
    const Slot* xr = reinterpret_cast<const Slot*>(x + r * n);
    const A mu = rms ? A(0) : mean[r], rs = rstd[r];
    A a = A(0), bq = A(0);
    if (dx) {
      Pair<A> s{A(0), A(0)};
      for (int j0 = t; j0 < slots; j0 += G * U) {
        Slot gv[U], xv[U], ws[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int j = j0 + u * G;
          if (j >= slots) continue;
          gv[u] = dyr[j];
          xv[u] = xr[j];
          if (wp) ws[u] = wp[j];
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (j0 + u * G >= slots) continue;
#pragma unroll
          for (int k = 0; k < W; ++k) {
            const A g = wp ? to_stats(gv[u].v[k]) * to_stats(ws[u].v[k]) : to_stats(gv[u].v[k]);
            s.a += g;
            s.b += g * ((to_stats(xv[u].v[k]) - mu) * rs);
          }
        }
      }
      s = block_allreduce(s, smem, PairPlus{});
      const A inv_n = A(1) / static_cast<A>(n);
      a = rms ? A(0) : s.a * inv_n;
      bq = s.b * inv_n;
    }
    Slot* dxr = dx ? reinterpret_cast<Slot*>(dx + r * n) : nullptr;
    for (int j0 = t; j0 < slots; j0 += G * U) {
      Slot gv[U], xv[U], ws[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = j0 + u * G;
        if (j >= slots) continue;
        gv[u] = dyr[j];
        xv[u] = xr[j];
        if (wp && dxr) ws[u] = wp[j];
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = j0 + u * G;
        if (j >= slots) continue;
        Slot o;
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const A d = to_stats(gv[u].v[k]);
          const A xhat = (to_stats(xv[u].v[k]) - mu) * rs;
          if (dxr) {
            const A g = wp ? d * to_stats(ws[u].v[k]) : d;
            o.v[k] = convert<T>(rs * (g - a - xhat * bq));
          }
          if (acc) {
            acc[j * W + k] += d;
            acc[n + j * W + k] += d * xhat;
          }
        }
        if (dxr) dxr[j] = o;
      }
    }
  }
  if (!out || !acc_in_smem) return;
  __syncthreads();
  for (int i = t; i < 2 * n; i += G) out[i] = acc[i];
}

// dbias (blockIdx.y == 0) and dweight (1) from the blocks' partial column sums
// partial[b][2][n]: block (32, 8) per 32 columns, row y of the block summing blocks y, y + 8,
// ... in order, then the 8 sums in order.
template <class T>
__global__ void __launch_bounds__(256)
    layer_norm_param_grad_kernel(T* dw, T* db, const stats_t<T>* partial, int blocks, int n) {
  using A = stats_t<T>;
  __shared__ A sums[8][kWarp + 1];
  const int which = blockIdx.y;
  T* target = which == 0 ? db : dw;
  if (!target) return;  // the whole block
  const int c = blockIdx.x * kWarp + threadIdx.x;
  A s = A(0);
  if (c < n)
    for (int b = threadIdx.y; b < blocks; b += blockDim.y) s += partial[(static_cast<int64_t>(b) * 2 + which) * n + c];
  sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || c >= n) return;
  A total = sums[0][threadIdx.x];
  for (int y = 1; y < 8; ++y) total += sums[y][threadIdx.x];
  target[c] = convert<T>(total);
}

// --- layer norm and RMS norm: launchers ---------------------------------------------------

// How a rows kernel covers a row of n elements: G threads per row (kWarp: a warp, 8 rows per
// block; more: a block per row), P slots each. G == 0: the row does not fit in max_threads
// threads of 4 slots.
struct RowsShape {
  int G = 0, P = 0;
};
inline constexpr int kRowsPerWarpBlock = 8;
inline constexpr int kMaxSlots = 4;

template <class T, bool kPacked>
RowsShape rows_shape(int64_t n, int max_threads) {
  constexpr int64_t W = kSlotWidth<T, kPacked>;
  const int64_t slots = (n + W - 1) / W;
  if (slots <= int64_t{kWarp} * kMaxSlots) {
    // Packed: the fewest of 1, 2 or 4 slots per lane; element by element: 1 or 4.
    int P = 1;
    while (P * kWarp < slots) P = kPacked ? P * 2 : kMaxSlots;
    return {kWarp, P};
  }
  const int64_t G = std::max<int64_t>(2 * kWarp, (slots + kMaxSlots * kWarp - 1) / (kMaxSlots * kWarp) * kWarp);
  if (G > max_threads) return {};
  return {static_cast<int>(G), kMaxSlots};
}

// Calls go(&kernel) with the rows kernel's instantiation for P slots.
template <class T, bool kPacked, class Go>
void forward_rows_kernel(int P, Go&& go) {
  if (P == 1) go(&layer_norm_rows_kernel<T, 1, kPacked>);
  else if (P == 4) go(&layer_norm_rows_kernel<T, 4, kPacked>);
  else if constexpr (kPacked) go(&layer_norm_rows_kernel<T, 2, kPacked>);
}
template <class T, bool kPacked, class Go>
void backward_rows_kernel(int P, Go&& go) {
  if (P == 1) go(&layer_norm_backward_rows_kernel<T, 1, kPacked>);
  else if (P == 4) go(&layer_norm_backward_rows_kernel<T, 4, kPacked>);
  else if constexpr (kPacked) go(&layer_norm_backward_rows_kernel<T, 2, kPacked>);
}

// Lets `kernel` take up to the device's opt-in limit less 1 KiB (its static shared memory) of
// dynamic shared memory, when `bytes` passes the 48 KiB every kernel may take: once per
// kernel and device (the driver call costs host time).
template <class... Params>
void allow_shared_bytes(void (*kernel)(Params...), size_t bytes, int device) {
  if (bytes <= 48 * 1024) return;
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> raised;
  std::lock_guard<std::mutex> lock(mutex);
  if (!raised.insert({reinterpret_cast<const void*>(kernel), device}).second) return;
  WICK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(device) - 1024));
}

// The dynamic shared memory a block may take: the device's opt-in limit less 1 KiB (the
// kernels' static shared memory is at most 512 bytes).
int64_t shared_limit(int device) {
  return int64_t{device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(device)} - 1024;
}

// One wave of `kernel`'s blocks of `threads` threads and `smem` bytes of dynamic shared
// memory: the multiprocessors times the blocks that fit on one by threads, by shared memory
// and by registers (from cudaFuncGetAttributes, asked once per kernel; the simulator reports
// none, and then registers do not limit).
template <class... Params>
int64_t one_wave(void (*kernel)(Params...), int threads, int64_t smem, int device) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, cudaFuncAttributes> known;
  cudaFuncAttributes attr{};
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), device);
    auto it = known.find(key);
    if (it == known.end()) {
      WICK_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
      it = known.emplace(key, attr).first;
    }
    attr = it->second;
  }
  const int64_t sms = device_attribute<cudaDevAttrMultiProcessorCount>(device);
  const int64_t per_sm_smem = device_attribute<cudaDevAttrMaxSharedMemoryPerMultiprocessor>(device);
  const int64_t warps = (threads + kWarp - 1) / kWarp;
  int64_t per_sm = std::max<int64_t>(1, 2048 / threads);
  const int64_t block_smem = smem + static_cast<int64_t>(attr.sharedSizeBytes);
  if (block_smem > 0) per_sm = std::min(per_sm, std::max<int64_t>(1, per_sm_smem / (block_smem + 1024)));
  if (attr.numRegs > 0) {
    const int64_t regs_per_warp = (int64_t{attr.numRegs} * kWarp + 255) / 256 * 256;
    per_sm = std::min(per_sm, std::max<int64_t>(1, 65536 / (regs_per_warp * warps)));
  }
  return sms * per_sm;
}

// Rows move in packs when their length is a whole number of packs and every pointer given
// (null: an undefined tensor) is 16-byte aligned.
bool packable(int64_t n, size_t elem, std::initializer_list<const void*> pointers) {
  if ((n * static_cast<int64_t>(elem)) % 16 != 0) return false;
  for (const void* p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

void check_row_length(const char* op, int64_t n) {
  WICK_CHECK(n < (int64_t{1} << 30), op, ": rows of ", n, " elements are longer than the CUDA kernels take (2^30)");
}

template <class T, bool kPacked>
void layer_norm_typed(const char* op, T* y, stats_t<T>* mean, stats_t<T>* rstd, const T* x, const T* w, const T* b,
                      int64_t rows, int n, bool rms, double eps, cudaStream_t stream) {
  const RowsShape sh = rows_shape<T, kPacked>(n, 1024);
  if (sh.G == 0) {
    check_grid(op, rows);
    launch_kernel("layer_norm_loop_kernel", &layer_norm_loop_kernel<T, kPacked>, static_cast<unsigned>(rows),
                  kLoopThreads, 0, stream, y, mean, rstd, x, w, b, n, rms, eps);
    return;
  }
  const int R = sh.G == kWarp ? kRowsPerWarpBlock : 1;
  const int64_t blocks = (rows + R - 1) / R;
  check_grid(op, blocks);
  forward_rows_kernel<T, kPacked>(sh.P, [&](auto kernel) {
    launch_kernel("layer_norm_rows_kernel", kernel, static_cast<unsigned>(blocks),
                  dim3(static_cast<unsigned>(sh.G), static_cast<unsigned>(R)), 0, stream, y, mean, rstd, x, w, b, rows,
                  n, rms, eps);
  });
}

void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& w,
                const Tensor& b, bool rms, double eps) {
  const char* op = rms ? "rms_norm" : "layer_norm";
  const int64_t rows = x.size(0), n = x.size(1);
  if (rows == 0 || n == 0) return;
  check_row_length(op, n);
  TensorDeviceGuard guard(x);
  visit_floating(op, x.device(), x.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    T* y = out.data<T>();
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* wp = optional_data<T>(w);
    const T* bp = optional_data<T>(b);
    A* mp = optional_mutable_data<A>(mean);
    A* rp = invstd.data<A>();
    const cudaStream_t stream = stream_for(x);
    if (packable(n, sizeof(T), {y, xp, wp, bp}))
      layer_norm_typed<T, true>(op, y, mp, rp, xp, wp, bp, rows, static_cast<int>(n), rms, eps, stream);
    else layer_norm_typed<T, false>(op, y, mp, rp, xp, wp, bp, rows, static_cast<int>(n), rms, eps, stream);
    WICK_CUDA_CHECK_LAUNCH(op);
  });
}

// Returns the partial column sums [blocks][2][n] the backward kernel wrote (undefined when
// neither dweight nor dbias is wanted) and their block count.
template <class T, bool kPacked>
std::pair<Tensor, int64_t> layer_norm_backward_typed(const char* op, const Tensor& x_t, T* dx, bool want_params,
                                                     const T* dy, const T* x, const T* w, const stats_t<T>* mean,
                                                     const stats_t<T>* rstd, int64_t rows, int n, bool rms,
                                                     cudaStream_t stream) {
  using A = stats_t<T>;
  constexpr int64_t W = kSlotWidth<T, kPacked>;
  const int device = x_t.device().index;
  const RowsShape sh = rows_shape<T, kPacked>(n, 512);
  const int R = sh.G == kWarp ? kRowsPerWarpBlock : 1;
  const int64_t smem =
      want_params && sh.G ? int64_t{R} * 2 * W * (int64_t{sh.P} * sh.G + 1) * static_cast<int64_t>(sizeof(A)) : 0;
  const bool in_registers = sh.G != 0 && smem <= shared_limit(device);
  const int threads = in_registers ? sh.G * R : kLoopThreads;
  // Loop kernel: the accumulators in shared memory when they fit.
  const int64_t loop_smem = 2 * int64_t{n} * static_cast<int64_t>(sizeof(A));
  const bool acc_in_smem = want_params && !in_registers && loop_smem <= shared_limit(device);
  const int64_t block_smem = in_registers ? smem : (acc_in_smem ? loop_smem : 0);
  Tensor partial;
  int64_t blocks = 0;
  // Row groups to cover, at most one wave of blocks; a block walks a run of whole groups.
  const auto plan = [&](auto kernel) {
    const int64_t per_group = in_registers ? R : 1;
    const int64_t groups = (rows + per_group - 1) / per_group;
    blocks = std::max<int64_t>(1, std::min(groups, one_wave(kernel, threads, block_smem, device)));
    const int64_t per_block = per_group * ((groups + blocks - 1) / blocks);
    blocks = (rows + per_block - 1) / per_block;
    check_grid(op, blocks);
    if (want_params)
      partial = empty({blocks * 2 * n},
                      Options(x_t.dtype() == DType::Float64 ? DType::Float64 : DType::Float32, x_t.device()));
    allow_shared_bytes(kernel, static_cast<size_t>(block_smem), device);
    return per_block;
  };
  if (in_registers) {
    backward_rows_kernel<T, kPacked>(sh.P, [&](auto kernel) {
      const int64_t per_block = plan(kernel);
      launch_kernel("layer_norm_backward_rows_kernel", kernel, static_cast<unsigned>(blocks),
                    dim3(static_cast<unsigned>(sh.G), static_cast<unsigned>(R)), static_cast<size_t>(smem), stream, dx,
                    optional_mutable_data<A>(partial), dy, x, w, mean, rstd, rows, per_block, n, rms);
    });
  } else {
    auto kernel = &layer_norm_backward_loop_kernel<T, kPacked>;
    const int64_t per_block = plan(kernel);
    launch_kernel("layer_norm_backward_loop_kernel", kernel, static_cast<unsigned>(blocks), kLoopThreads,
                  static_cast<size_t>(block_smem), stream, dx, optional_mutable_data<A>(partial), dy, x, w, mean, rstd,
                  rows, per_block, n, rms, acc_in_smem);
  }
  return {partial, blocks};
}

void layer_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                         const Tensor& w, const Tensor& mean, const Tensor& invstd, bool rms) {
  const char* op = rms ? "rms_norm_backward" : "layer_norm_backward";
  const int64_t rows = x.size(0), n = x.size(1);
  const bool want_params = dw.defined() || db.defined();
  if (rows == 0 || n == 0 || (!dx.defined() && !want_params)) return;
  check_row_length(op, n);
  TensorDeviceGuard guard(x);
  visit_floating(op, x.device(), x.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    T* dxp = optional_mutable_data<T>(dx);
    const T* dyp = static_cast<const T*>(dy.data_ptr());
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* wp = optional_data<T>(w);
    const A* mp = rms ? nullptr : optional_data<A>(mean);
    const A* rp = static_cast<const A*>(invstd.data_ptr());
    const cudaStream_t stream = stream_for(x);
    const auto [partial, blocks] =
        packable(n, sizeof(T), {dxp, dyp, xp, wp})
            ? layer_norm_backward_typed<T, true>(op, x, dxp, want_params, dyp, xp, wp, mp, rp, rows,
                                                 static_cast<int>(n), rms, stream)
            : layer_norm_backward_typed<T, false>(op, x, dxp, want_params, dyp, xp, wp, mp, rp, rows,
                                                  static_cast<int>(n), rms, stream);
    if (want_params)
      launch_kernel("layer_norm_param_grad_kernel", &layer_norm_param_grad_kernel<T>,
                    dim3(static_cast<unsigned>((n + kWarp - 1) / kWarp), 2), dim3(kWarp, 8), 0, stream,
                    optional_mutable_data<T>(dw), optional_mutable_data<T>(db), partial.template data<A>(),
                    static_cast<int>(blocks), static_cast<int>(n));
    WICK_CUDA_CHECK_LAUNCH(op);
  });
}

}  // namespace

void register_layer_norm(KernelTable& t) {
  t.layer_norm = &layer_norm;
  t.layer_norm_backward = &layer_norm_backward;
}

}  // namespace wick::cuda_kernels
