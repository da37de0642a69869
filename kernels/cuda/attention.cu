// Scaled dot-product attention on CUDA, forward and backward, in the FlashAttention style:
// key/value (or query/dout) tiles are staged in shared memory and streamed past rows held in
// registers, the softmax is online, and the score matrix is never written to memory
// (kernels/attention_math.h has the math, the same as the CPU's). Every kernel writes with
// `=`; dk and dv are summed over the query heads of their group inside one thread, so
// there are no atomics.
//
// A head row (of q, out, k, ...) is held by G consecutive lanes: lane g holds dims g, g + G,
// g + 2G, ... (W of them; zero past the head dim), so a group reading one shared-memory row
// touches consecutive banks, and each dot product is W fused multiply-adds per lane and
// log2 G shuffles. W is 32 floats (16 doubles) in the forward and half that in the
// backward kernels, which hold twice as many rows per thread; G is the smallest power of two
// with W G >= max(E, Ev), up to 256 dims. Blocks are kThreads = 128 threads: 128 / G rows.
//
// forward (attention_forward_kernel):  a block of query rows of one (b, h); key tiles are
//   skipped past the block's last row when causal.
// dq (attention_dq_kernel):            the same layout; recomputes p and ds per key.
// dk, dv (attention_dkdv_kernel):      a block of key rows of one (b, kv head); query tiles
//   of every head of the group stream past; causal skips the queries before the block.
// These kernels use the CUDA cores: they serve float32 and float64 (as PyTorch, whose flash
// kernels take 16-bit inputs only) and the 16-bit head dims the tensor-core kernels of
// flash_attention.cu do not take; bfloat16 and float16 with E = Ev in {32, 64, 96, 128} go
// there (attention_forward / attention_backward below choose). Dropout (am::Dropout): every
// kernel draws the z of the weights it computes, each draw made by one lane of the row's
// group and shared by a ballot (group_keeps); the kernels branch on it per key, so without
// dropout they compute as before.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/attention_math.h"
#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/visit_floating.h"

namespace wick::cuda_kernels {

namespace {

namespace am = attention_math;

constexpr int kThreads = 128;

using am::Geometry;

template <class A>
struct BiasView {
  const A* p;
  int64_t sb, sh, si, sj;
  __device__ A at(int64_t b, int64_t h, int64_t i, int64_t j) const { return p[b * sb + h * sh + i * si + j * sj]; }
};

// Rows of a shared-memory tile: two tiles of D values per row take 32 KiB.
template <class A, int D>
constexpr int tile_rows() {
  return 16384 / (D * static_cast<int>(sizeof(A)));
}

// The sum over the G lanes of a row group (consecutive lanes; every lane of the warp calls it).
template <int G, class A>
__device__ __forceinline__ A group_sum(A x) {
#pragma unroll
  for (int off = G / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

// Loads rows [r0, r0 + n) of a [rows, width] matrix into tile[n][D] (zeros past width).
template <class T, class A, int D>
__device__ __forceinline__ void stage_rows(A (*tile)[D], const T* m, int64_t r0, int n, int64_t width) {
  for (int idx = threadIdx.x; idx < n * D; idx += kThreads) {
    const int r = idx / D, d = idx % D;
    tile[r][d] = d < width ? convert<A>(m[(r0 + r) * width + d]) : A(0);
  }
}

// This lane's slice of row r of a [rows, width] matrix (zeros past width or for no row).
template <class T, class A, int W, int G>
__device__ __forceinline__ void load_slice(A (&x)[W], const T* m, int64_t r, bool valid, int64_t width, int lane) {
#pragma unroll
  for (int w = 0; w < W; ++w) {
    const int d = lane + G * w;
    x[w] = valid && d < width ? convert<A>(m[r * width + d]) : A(0);
  }
}

template <class T, class A, int W, int G>
__device__ __forceinline__ void store_slice(T* m, int64_t r, int64_t width, int lane, const A (&x)[W], A factor) {
#pragma unroll
  for (int w = 0; w < W; ++w) {
    const int d = lane + G * w;
    if (d < width) m[r * width + d] = convert<T>(x[w] * factor);
  }
}

// The score of query row i and key j from a partial dot product: masked to -inf for no row,
// a causally hidden key, or the bias's -inf.
template <int G, class A>
__device__ __forceinline__ A score(A partial, A scale, bool valid, bool causal, int64_t i, int64_t j,
                                   const BiasView<A>& bias, int64_t b, int64_t h) {
  const A s = scale * group_sum<G>(partial);
  if (!valid || am::causal_hidden(causal, i, j)) return A(-INFINITY);
  return bias.p ? s + bias.at(b, h, i, j) : s;
}

// Dropout decisions of a row group, G steps at a time: at a step t with t % G == 0 (every
// lane of the warp at once) lane g draws the decision of step t + g for its row (counter n,
// which the caller gives), and one ballot hands the group all G, so each weight's Philox
// draw is made once rather than by every lane of its row. Returns the warp's ballot shifted
// to this group: bit t % G is step t's decision.
template <int G, class A>
__device__ __forceinline__ unsigned group_keeps(const am::Dropout<A>& drop, uint64_t n) {
  return __ballot_sync(0xffffffffu, drop.kept(n)) >> (threadIdx.x % 32 / G * G);
}

template <class T, int W, int G>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(T* out, stats_t<T>* lse, const T* q, const T* k, const T* v, BiasView<stats_t<T>> bias,
                             Geometry g, stats_t<T> scale, bool causal, am::Dropout<stats_t<T>> drop) {
  using A = stats_t<T>;
  constexpr int D = W * G, kRows = kThreads / G, kTile = tile_rows<A, D>();
  __shared__ A ks[kTile][D];
  __shared__ A vs[kTile][D];
  const int lane = threadIdx.x % G;
  const int64_t bh = blockIdx.x, b = bh / g.hq, h = bh % g.hq, kv = b * g.hk + h / (g.hq / g.hk);
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kRows, i = first + threadIdx.x / G;
  const bool valid = i < g.l;
  A qr[W], o[W];
  load_slice<T, A, W, G>(qr, q, bh * g.l + i, valid, g.e, lane);
#pragma unroll
  for (int w = 0; w < W; ++w) o[w] = A(0);
  am::RowState<A> st = am::row_start<A>();
  const int64_t end = causal ? min(g.s, min(g.l, first + kRows)) : g.s;
  const uint64_t drop_row = static_cast<uint64_t>((bh * g.l + i) * g.s);  // weight (i, 0)'s dropout index
  unsigned keeps = 0;
  for (int64_t j0 = 0; j0 < end; j0 += kTile) {
    const int n = static_cast<int>(min(int64_t{kTile}, end - j0));
    __syncthreads();  // the previous tile is used up
    stage_rows<T, A, D>(ks, k, kv * g.s + j0, n, g.e);
    stage_rows<T, A, D>(vs, v, kv * g.s + j0, n, g.ev);
    __syncthreads();
    for (int jj = 0; jj < n; ++jj) {
      A part = A(0);
#pragma unroll
      for (int w = 0; w < W; ++w) part += qr[w] * ks[jj][lane + G * w];
      const A s = score<G>(part, scale, valid, causal, i, j0 + jj, bias, b, h);
      const A factor = am::raise_max(st, s);
      A weight = am::row_weight(st, s);
      st.l += weight;  // the undropped softmax's sum
      if (drop.on) {
        if (jj % G == 0) keeps = group_keeps<G>(drop, drop_row + static_cast<uint64_t>(j0 + jj + lane));
        weight *= ((keeps >> (jj % G)) & 1u) != 0 ? drop.scale : A(0);
      }
#pragma unroll
      for (int w = 0; w < W; ++w) o[w] = o[w] * factor + weight * vs[jj][lane + G * w];
    }
  }
  if (!valid) return;
  store_slice<T, A, W, G>(out, bh * g.l + i, g.ev, lane, o, am::row_norm(st));
  if (lane == 0) lse[bh * g.l + i] = am::row_lse(st);
}

// dq_i = scale sum_j p_ij (dout_i . v_j - delta_i) k_j.
template <class T, int W, int G>
__global__ void __launch_bounds__(kThreads)
    attention_dq_kernel(T* dq, const T* dout, const T* q, const T* k, const T* v, const stats_t<T>* lse,
                        const stats_t<T>* delta, BiasView<stats_t<T>> bias, Geometry g, stats_t<T> scale, bool causal,
                        am::Dropout<stats_t<T>> drop) {
  using A = stats_t<T>;
  constexpr int D = W * G, kRows = kThreads / G, kTile = tile_rows<A, D>();
  __shared__ A ks[kTile][D];
  __shared__ A vs[kTile][D];
  const int lane = threadIdx.x % G;
  const int64_t bh = blockIdx.x, b = bh / g.hq, h = bh % g.hq, kv = b * g.hk + h / (g.hq / g.hk);
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kRows, i = first + threadIdx.x / G, row = bh * g.l + i;
  const bool valid = i < g.l;
  A qr[W], dr[W], acc[W];
  load_slice<T, A, W, G>(qr, q, row, valid, g.e, lane);
  load_slice<T, A, W, G>(dr, dout, row, valid, g.ev, lane);
#pragma unroll
  for (int w = 0; w < W; ++w) acc[w] = A(0);
  const A lse_i = valid ? lse[row] : A(0), delta_i = valid ? delta[row] : A(0);
  const int64_t end = causal ? min(g.s, min(g.l, first + kRows)) : g.s;
  const uint64_t drop_row = static_cast<uint64_t>(row * g.s);
  unsigned keeps = 0;
  for (int64_t j0 = 0; j0 < end; j0 += kTile) {
    const int n = static_cast<int>(min(int64_t{kTile}, end - j0));
    __syncthreads();
    stage_rows<T, A, D>(ks, k, kv * g.s + j0, n, g.e);
    stage_rows<T, A, D>(vs, v, kv * g.s + j0, n, g.ev);
    __syncthreads();
    for (int jj = 0; jj < n; ++jj) {
      A part = A(0), dp = A(0);
#pragma unroll
      for (int w = 0; w < W; ++w) {
        part += qr[w] * ks[jj][lane + G * w];
        dp += dr[w] * vs[jj][lane + G * w];
      }
      const A p = am::prob(score<G>(part, scale, valid, causal, i, j0 + jj, bias, b, h), lse_i);
      A dpz = group_sum<G>(dp);
      if (drop.on) {
        if (jj % G == 0) keeps = group_keeps<G>(drop, drop_row + static_cast<uint64_t>(j0 + jj + lane));
        dpz *= ((keeps >> (jj % G)) & 1u) != 0 ? drop.scale : A(0);
      }
      const A ds = p * (dpz - delta_i);
#pragma unroll
      for (int w = 0; w < W; ++w) acc[w] += ds * ks[jj][lane + G * w];
    }
  }
  if (valid) store_slice<T, A, W, G>(dq, row, g.e, lane, acc, scale);
}

// dv_j = sum_i p_ij dout_i and dk_j = scale sum_i ds_ij q_i, over every query head of j's group.
template <class T, int W, int G>
__global__ void __launch_bounds__(kThreads)
    attention_dkdv_kernel(T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const stats_t<T>* lse,
                          const stats_t<T>* delta, BiasView<stats_t<T>> bias, Geometry g, stats_t<T> scale,
                          bool causal, am::Dropout<stats_t<T>> drop) {
  using A = stats_t<T>;
  constexpr int D = W * G, kRows = kThreads / G, kTile = tile_rows<A, D>();
  __shared__ A qs[kTile][D];
  __shared__ A douts[kTile][D];
  __shared__ A lse_tile[kTile], delta_tile[kTile];
  const int lane = threadIdx.x % G;
  const int64_t bkv = blockIdx.x, b = bkv / g.hk, kvh = bkv % g.hk, group = g.hq / g.hk;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kRows, j = first + threadIdx.x / G, row = bkv * g.s + j;
  const bool valid = j < g.s;
  A kr[W], vr[W], dka[W], dva[W];
  load_slice<T, A, W, G>(kr, k, row, valid, g.e, lane);
  load_slice<T, A, W, G>(vr, v, row, valid, g.ev, lane);
#pragma unroll
  for (int w = 0; w < W; ++w) dka[w] = dva[w] = A(0);
  unsigned keeps = 0;
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
    const int64_t bh = b * g.hq + h;
    for (int64_t i0 = causal ? min(first, g.l) : int64_t{0}; i0 < g.l; i0 += kTile) {
      const int n = static_cast<int>(min(int64_t{kTile}, g.l - i0));
      __syncthreads();
      stage_rows<T, A, D>(qs, q, bh * g.l + i0, n, g.e);
      stage_rows<T, A, D>(douts, dout, bh * g.l + i0, n, g.ev);
      for (int r = threadIdx.x; r < n; r += kThreads) {
        lse_tile[r] = lse[bh * g.l + i0 + r];
        delta_tile[r] = delta[bh * g.l + i0 + r];
      }
      __syncthreads();
      for (int ii = 0; ii < n; ++ii) {
        A part = A(0), dp = A(0);
#pragma unroll
        for (int w = 0; w < W; ++w) {
          part += kr[w] * qs[ii][lane + G * w];
          dp += vr[w] * douts[ii][lane + G * w];
        }
        const A p = am::prob(score<G>(part, scale, valid, causal, i0 + ii, j, bias, b, h), lse_tile[ii]);
        A pz = p, dpz = group_sum<G>(dp);
        if (drop.on) {
          // This group's key j against query rows i0 + ii + lane (weight (i, j) at i S + j).
          if (ii % G == 0)
            keeps = group_keeps<G>(drop, static_cast<uint64_t>((bh * g.l + i0 + ii + lane) * g.s + j));
          const A z = ((keeps >> (ii % G)) & 1u) != 0 ? drop.scale : A(0);
          pz *= z;
          dpz *= z;
        }
        const A ds = p * (dpz - delta_tile[ii]);
#pragma unroll
        for (int w = 0; w < W; ++w) {
          dva[w] += pz * douts[ii][lane + G * w];
          dka[w] += ds * qs[ii][lane + G * w];
        }
      }
    }
  }
  if (!valid) return;
  store_slice<T, A, W, G>(dk, row, g.e, lane, dka, scale);
  store_slice<T, A, W, G>(dv, row, g.ev, lane, dva, A(1));
}

template <class A>
BiasView<A> bias_view(const Tensor& t) {
  if (!t.defined()) return {nullptr, 0, 0, 0, 0};
  return {static_cast<const A*>(t.data_ptr()), t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

constexpr int64_t kMaxHeadDim = 256;

// Calls f.template operator()<W, G>() with the smallest group of lanes of W dims each that
// holds `dims` (G a power of two up to a warp).
template <int W, int G = 1, class F>
void with_group(const char* op, const Geometry& g, F&& f) {
  if (std::max(g.e, g.ev) <= W * G) return f.template operator()<W, G>();
  if constexpr (W * G < kMaxHeadDim && G < 32) {
    return with_group<W, G * 2>(op, g, f);
  } else {
    throw Error(std::string(op) + ": the CUDA kernels take head dims up to " + std::to_string(kMaxHeadDim) +
                ", got E = " + std::to_string(g.e) + ", Ev = " + std::to_string(g.ev));
  }
}

// Dims per lane: the forward holds two rows (q, o) per thread, the backward four (k, v, dk,
// dv; or q, dout, dq), so it gives each lane half as many.
template <class T>
constexpr int forward_lane_dims() {
  return std::is_same_v<T, double> ? 16 : 32;
}
template <class T>
constexpr int backward_lane_dims() {
  return forward_lane_dims<T>() / 2;
}

// The grid: (b, head) pairs on x, blocks of rows on y.
dim3 grid_for(const char* op, int64_t pairs, int64_t rows, int rows_per_block) {
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  WICK_CHECK(pairs < (int64_t{1} << 31) && blocks <= 65535, op, ": too many heads (", pairs, ") or rows (", rows,
             ") for one launch");
  return dim3(static_cast<unsigned>(pairs), static_cast<unsigned>(blocks));
}

// The kernels index rows flat ([B, H, N, D] contiguous); the slots take any rows of unit
// stride (heads split from a projection), so strided inputs are copied here and a strided
// output is written through a contiguous one. (On the GPU these copies cost little next to
// the kernels; the CPU kernels read the strides instead.)
Tensor contiguous_output(const Tensor& t) { return t.is_contiguous() ? t : empty(t.shape(), Options(t.dtype(), t.device())); }
void finish_output(const Tensor& out, const Tensor& written) {
  if (!out.is_contiguous()) Tensor(out).copy_(written);
}

// A tensor whose rows the tensor-core kernels can copy 16 bytes at a time: t itself, or an
// aligned copy (a view that starts mid-pack; rare).
Tensor flash_rows(const Tensor& t) {
  if (flash_rows_aligned(t)) return t;
  Tensor c = empty(t.shape(), Options(t.dtype(), t.device()));
  return c.copy_(t);
}

bool use_flash(const Tensor& q, const Tensor& v) {
  return flash_attention_supported(q.dtype(), q.size(3), v.size(3));
}

void attention_forward(const Tensor& out_in, const Tensor& lse, const Tensor& q_in, const Tensor& k_in,
                       const Tensor& v_in, const Tensor& bias, const AttentionParams& p) {
  if (use_flash(q_in, v_in)) {
    if (out_in.numel() == 0 && lse.numel() == 0) return;
    TensorDeviceGuard guard(q_in);
    const Tensor out = flash_rows_aligned(out_in) ? out_in : empty(out_in.shape(), Options(out_in.dtype(), out_in.device()));
    flash_attention_forward(out, lse, flash_rows(q_in), flash_rows(k_in), flash_rows(v_in), bias, p);
    if (out.data_ptr() != out_in.data_ptr()) Tensor(out_in).copy_(out);
    return;
  }
  const Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous(), out = contiguous_output(out_in);
  const Geometry g = am::geometry_of(q, k, v);
  if (out.numel() == 0 && lse.numel() == 0) return;
  TensorDeviceGuard guard(q);
  visit_floating("attention_forward", q.device(), q.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    with_group<forward_lane_dims<T>()>("attention_forward", g, [&]<int W, int G>() {
      launch_kernel("attention_forward_kernel", &attention_forward_kernel<T, W, G>,
                    grid_for("attention_forward", g.b * g.hq, g.l, kThreads / G), kThreads, 0, stream_for(q),
                    out.data<T>(), lse.data<A>(), static_cast<const T*>(q.data_ptr()),
                    static_cast<const T*>(k.data_ptr()), static_cast<const T*>(v.data_ptr()), bias_view<A>(bias), g,
                    static_cast<A>(p.scale), p.causal, am::Dropout<A>::of(p));
    });
    WICK_CUDA_CHECK_LAUNCH("attention_forward");
  });
  finish_output(out_in, out);
}

void attention_backward(const Tensor& dq_in, const Tensor& dk_in, const Tensor& dv_in, const Tensor& dout_in,
                        const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, const Tensor& lse,
                        const Tensor& delta, const Tensor& bias, const AttentionParams& p) {
  if (use_flash(q_in, v_in)) {
    TensorDeviceGuard guard(q_in);
    auto output = [](const Tensor& t) {
      return flash_rows_aligned(t) ? t : empty(t.shape(), Options(t.dtype(), t.device()));
    };
    const Tensor dq = output(dq_in), dk = output(dk_in), dv = output(dv_in);
    flash_attention_backward(dq, dk, dv, flash_rows(dout_in), flash_rows(q_in), flash_rows(k_in), flash_rows(v_in),
                             lse, delta, bias, p);
    for (auto [written, out] : {std::pair{dq, dq_in}, {dk, dk_in}, {dv, dv_in}})
      if (written.data_ptr() != out.data_ptr()) Tensor(out).copy_(written);
    return;
  }
  const Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous(), dout = dout_in.contiguous();
  const Tensor dq = contiguous_output(dq_in), dk = contiguous_output(dk_in), dv = contiguous_output(dv_in);
  const Geometry g = am::geometry_of(q, k, v);
  TensorDeviceGuard guard(q);
  visit_floating("attention_backward", q.device(), q.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    with_group<backward_lane_dims<T>()>("attention_backward", g, [&]<int W, int G>() {
      const T* qp = static_cast<const T*>(q.data_ptr());
      const T* kp = static_cast<const T*>(k.data_ptr());
      const T* vp = static_cast<const T*>(v.data_ptr());
      const T* dp = static_cast<const T*>(dout.data_ptr());
      const A* lp = static_cast<const A*>(lse.data_ptr());
      const A* delp = static_cast<const A*>(delta.data_ptr());
      if (dq.numel() > 0)
        launch_kernel("attention_dq_kernel", &attention_dq_kernel<T, W, G>,
                      grid_for("attention_backward", g.b * g.hq, g.l, kThreads / G), kThreads, 0, stream_for(q),
                      dq.data<T>(), dp, qp, kp, vp, lp, delp, bias_view<A>(bias), g, static_cast<A>(p.scale),
                      p.causal, am::Dropout<A>::of(p));
      if (dk.numel() > 0 || dv.numel() > 0)
        launch_kernel("attention_dkdv_kernel", &attention_dkdv_kernel<T, W, G>,
                      grid_for("attention_backward", g.b * g.hk, g.s, kThreads / G), kThreads, 0, stream_for(q),
                      dk.data<T>(), dv.data<T>(), dp, qp, kp, vp, lp, delp, bias_view<A>(bias), g,
                      static_cast<A>(p.scale), p.causal, am::Dropout<A>::of(p));
    });
    WICK_CUDA_CHECK_LAUNCH("attention_backward");
  });
  finish_output(dq_in, dq);
  finish_output(dk_in, dk);
  finish_output(dv_in, dv);
}

}  // namespace

void register_attention(KernelTable& t) {
  t.attention_forward = &attention_forward;
  t.attention_backward = &attention_backward;
}

}  // namespace wick::cuda_kernels
