#pragma once
// Scaled dot-product attention on tensor cores (the kernels; flash_attention.cu launches them) for bfloat16 and float16: FlashAttention-2's
// algorithm (kernels/attention_math.h has the math; the CUDA-core kernels of attention.cu
// serve float32, float64 and the head dims these do not take). Every kernel writes with `=`
// and sums in a fixed order: no atomics, so results are deterministic.
//
// Tiles: a block is 4 warps; each warp owns 16 rows of the block's 64 (query rows in the
// forward and dq kernels, key rows in dk/dv). Shared-memory tiles are rows of D 16-bit
// values padded to D + 8, so the 8 rows one ldmatrix reads start 16 bytes apart in the
// banks (no conflicts), and are filled by 16-byte cp.async copies, the next tile's while
// the current one is used (two buffers). Matrix products are mma.m16n8k16 with float
// accumulators; tensor_core.cuh documents the fragments. An accumulator s[nt][e] of a
// 16 x 8n tile holds row g + 8 (e / 2) and column 8 nt + 2 t + e % 2 (lane = 4 g + t), so
// the 4 lanes of a group hold a row and its max and sum take two shuffles.
//
// forward (flash_forward_kernel):   S = Q K^T, online softmax in registers, O += P V with P
//   rounded to the inputs' type as the A operand straight from S's accumulators (FA-2);
//   key tiles past the block's last row are skipped when causal. Writes out and lse.
// dq (flash_dq_kernel):             per key tile S = Q K^T, dP = dO V^T, P = exp(S - lse),
//   dS = P (dP - delta), dQ += dS K.
// dk, dv (flash_dkdv_kernel):       a block of keys of one (b, kv head); the query tiles of
//   every head of its group stream past: S^T = K Q^T, dV += P^T dO, dP^T = V dO^T,
//   dK += dS^T Q. The two backward kernels recompute S instead of adding dQ with atomics.
// Dropout (kDropout instances; am::Dropout): the forward multiplies P by Z after the row sums
// took it undropped, so P V uses Z P (rounded to T as P is); dq takes dS = P (Z dP - delta);
// dk/dv dV += (Z P)^T dO and that dS. Each lane draws the z of the accumulator elements it
// holds, one Philox draw each, from the element's index in [B, Hq, L, S] (forward and dq:
// into a bit mask per tile, keep_bits, before the tile's products).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <wick/tensor/half.h>

#include "kernels/attention_math.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/tensor_core.cuh"

namespace wick::cuda_kernels::flash {

namespace am = attention_math;

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kBlockRows = 16 * kWarps;  // the rows a block owns
constexpr int kPad = 8;                   // elements added to a shared row
constexpr float kLog2e = 1.4426950408889634f;

// The tensor-core input type of wick's 16-bit types.
template <class T>
using mma_t = std::conditional_t<std::is_same_v<T, BFloat16>, __nv_bfloat16, __half>;

// Rows per streamed tile: keys in the forward; keys (dq) or queries (dk/dv) in the backward,
// whose kernels hold two tiles of scores (S and dP) next to their accumulators: 32 for head
// dims over 64, so that they still fit the registers of two blocks per SM.
constexpr int kForwardKeys = 64;
template <int D>
constexpr int backward_rows() {
  return D > 64 ? 32 : 64;
}

// One operand's rows: element d of row n of head (b, h) is p[b sb + h sh + n sn + d].
template <class T>
struct Heads {
  T* p;
  int64_t sb, sh, sn;
  __device__ T* row(int64_t b, int64_t h, int64_t n) const { return p + b * sb + h * sh + n * sn; }
};

struct Bias {
  const float* p;  // null: none
  int64_t sb, sh, si, sj;
  __device__ float at(int64_t b, int64_t h, int64_t i, int64_t j) const { return p[b * sb + h * sh + i * si + j * sj]; }
};

struct Sizes {
  int64_t hq, hk, l, s;
  float scale;
  bool causal;
  am::Dropout<float> drop;  // read by the kDropout kernels only
};

// The dropout decisions of this lane's elements of a 16 x 8n accumulator tile, bit 4 nt + e
// for element [nt][e]: the weight of query row i (its g-th row, or its (g + 8)-th for
// e >= 2) of head bh and key j0 + 8 nt + 2 t + e % 2, index (bh L + i) S + j. Drawn into
// one register by a loop kept rolled, before the tile's products (while its copies are in
// flight), the row's index recomputed here rather than kept live: drawn next to the S and
// dP accumulators, the Philox rounds made ptxas spill.
template <int kNTiles>
__device__ __forceinline__ uint32_t keep_bits(const Sizes& sh, int64_t bh, int64_t i, int64_t j0) {
  static_assert(kNTiles * 4 <= 32, "one bit per element of a 32-bit mask");
  const int t = threadIdx.x % 4;
  const uint64_t row = static_cast<uint64_t>((bh * sh.l + i) * sh.s + j0 + 2 * t);
  uint32_t bits = 0;
#pragma unroll 1
  for (int k = 0; k < kNTiles * 4; ++k) {
    const int nt = k / 4, e = k % 4;
    const uint64_t n = row + static_cast<uint64_t>(e < 2 ? 0 : 8 * sh.s) + static_cast<uint64_t>(nt * 8 + e % 2);
    bits |= static_cast<uint32_t>(sh.drop.kept(n)) << k;
  }
  return bits;
}

// w[nt][e] times its dropout factor: scale where bit 4 nt + e of `bits` is set, else 0.
template <int kNTiles>
__device__ __forceinline__ void apply_keeps(float (&w)[kNTiles][4], uint32_t bits, float scale) {
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) w[nt][e] *= ((bits >> (4 * nt + e)) & 1u) != 0 ? scale : 0.f;
}

template <class T>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  return tc::pack2(T(lo).bits, T(hi).bits);
}

// Starts 16-byte copies of rows [r0, r0 + kRows) of `head` into tile[kRows][D + kPad]; rows
// at or past n are zero-filled (and not read).
template <class T, int D, int kRows>
__device__ __forceinline__ void load_tile(T* tile, const T* head, int64_t row_stride, int64_t r0, int64_t n) {
  constexpr int kChunks = D / 8;
  for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, col = c % kChunks * 8;
    const bool fill = r0 + r < n;
    tc::cp_async_16(tile + r * (D + kPad) + col, fill ? head + (r0 + r) * row_stride + col : head, fill);
  }
}

// The A fragment of rows [r0, r0 + 16), columns [16 kk, 16 kk + 16) of a row-major tile.
template <class T, int D>
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const T* tile, int r0, int kk) {
  const int lane = threadIdx.x % 32;
  tc::ldmatrix_x4(a, tile + (r0 + lane % 16) * (D + kPad) + kk * 16 + lane / 16 * 8);
}
// B fragments of two n-tiles (n0 and n0 + 8) for k in [16 kk, 16 kk + 16), from a tile
// whose rows are B's columns (B = tile^T: K^T in Q K^T).
template <class T, int D>
__device__ __forceinline__ void load_b_rows_n(uint32_t (&b)[4], const T* tile, int n0, int kk) {
  const int lane = threadIdx.x % 32;
  tc::ldmatrix_x4(b, tile + (n0 + lane % 8 + lane / 16 * 8) * (D + kPad) + kk * 16 + lane / 8 % 2 * 8);
}
// B fragments of two n-tiles (columns n0 and n0 + 8) for k in [k0, k0 + 16), from a tile
// whose rows are B's rows (B = tile: V in P V).
template <class T, int D>
__device__ __forceinline__ void load_b_rows_k(uint32_t (&b)[4], const T* tile, int k0, int n0) {
  const int lane = threadIdx.x % 32;
  tc::ldmatrix_x4_trans(b, tile + (k0 + lane % 8 + lane / 8 % 2 * 8) * (D + kPad) + n0 + lane / 16 * 8);
}

template <class T>
__device__ __forceinline__ void mma(float (&acc)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  const uint32_t b[2] = {b0, b1};
  tc::mma_16816<mma_t<T>>(acc, a, b, acc);
}

// acc[n-tile][4] += A (16 x 16 kSteps, from a tile) B, B's columns the rows of `rows_n`.
template <class T, int D, int kSteps, int kNTiles>
__device__ __forceinline__ void mma_a_tile_b_rows_n(float (&acc)[kNTiles][4], const T* a_tile, int a_row0,
                                                    const T* rows_n) {
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk) {
    uint32_t a[4];
    load_a<T, D>(a, a_tile, a_row0, kk);
#pragma unroll
    for (int np = 0; np < kNTiles / 2; ++np) {
      uint32_t b[4];
      load_b_rows_n<T, D>(b, rows_n, np * 16, kk);
      mma<T>(acc[2 * np], a, b[0], b[1]);
      mma<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// acc[d-tile][4] += P B, P the 16 x kCols float accumulators (rounded to T), B's rows the
// rows of `rows_k`.
template <class T, int D, int kCols>
__device__ __forceinline__ void mma_p_b_rows_k(float (&acc)[D / 8][4], const float (&p)[kCols / 8][4],
                                               const T* rows_k) {
#pragma unroll
  for (int kk = 0; kk < kCols / 16; ++kk) {
    const uint32_t a[4] = {pack<T>(p[2 * kk][0], p[2 * kk][1]), pack<T>(p[2 * kk][2], p[2 * kk][3]),
                           pack<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]), pack<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int np = 0; np < D / 16; ++np) {
      uint32_t b[4];
      load_b_rows_k<T, D>(b, rows_k, kk * 16, np * 16);
      mma<T>(acc[2 * np], a, b[0], b[1]);
      mma<T>(acc[2 * np + 1], a, b[2], b[3]);
    }
  }
}

template <int N>
__device__ __forceinline__ void zero(float (&acc)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
}

// The max and sum over the 4 lanes that hold one row.
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// A score: scale s + bias, or -inf when the key is past s, hidden by causality, or the row
// is past l (whose bias must not be read).
__device__ __forceinline__ float score(float s, const Sizes& sh, const Bias& bias, int64_t b, int64_t h, int64_t i,
                                       int64_t j) {
  if (j >= sh.s || i >= sh.l || am::causal_hidden(sh.causal, i, j)) return -INFINITY;
  const float x = s * sh.scale;
  return bias.p ? x + bias.at(b, h, i, j) : x;
}

// Whether a tile of query rows [i0, i0 + rows) and keys [j0, j0 + cols) needs score() per
// element: a bias, a key past s, a query past l, or a key hidden by causality. Most tiles
// need only the scale, and the per-element checks are 64-bit integer work.
__device__ __forceinline__ bool tile_needs_masks(const Sizes& sh, const Bias& bias, int64_t i0, int rows, int64_t j0,
                                                 int cols) {
  return bias.p != nullptr || j0 + cols > sh.s || i0 + rows > sh.l || (sh.causal && j0 + cols - 1 > i0);
}

// Stores the 16 x D accumulator rows [r0, r0 + 16) times row_factor[0/1] (rows g, g + 8).
template <class T, int D>
__device__ __forceinline__ void store_rows(const Heads<T>& out, int64_t b, int64_t h, int64_t r0, int64_t n,
                                           const float (&acc)[D / 8][4], const float (&row_factor)[2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int64_t r = r0 + g + 8 * half;
    if (r >= n) continue;
    T* row = out.row(b, h, r);
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      const uint32_t v = pack<T>(acc[dt][2 * half] * row_factor[half], acc[dt][2 * half + 1] * row_factor[half]);
      *reinterpret_cast<uint32_t*>(row + dt * 8 + 2 * t) = v;
    }
  }
}

// Shared memory of each kernel, in elements of T.
template <int D>
constexpr int tile_elems(int rows) {
  return rows * (D + kPad);
}
// forward: Q and two buffers of K and V; dq: Q, dO and two of K and V; dk/dv: K, V, two
// buffers of Q and dO, and two of the streamed rows' lse and delta.
template <int D>
constexpr size_t forward_smem(size_t elem) {
  return elem * (tile_elems<D>(kBlockRows) + 4 * tile_elems<D>(kForwardKeys));
}
template <int D>
constexpr size_t dq_smem(size_t elem) {
  return elem * (2 * tile_elems<D>(kBlockRows) + 4 * tile_elems<D>(backward_rows<D>()));
}
template <int D>
constexpr size_t dkdv_smem(size_t elem) {
  return dq_smem<D>(elem) + 4 * backward_rows<D>() * sizeof(float);
}

// Starts the copies of key/value tile rows [j0, j0 + kRows) into kv (K then V, each a tile of
// kRows rows), as the forward and dq kernels stream them.
template <class T, int D, int kRows>
__device__ __forceinline__ void load_kv_tile(T* kv, const T* k_head, int64_t k_stride, const T* v_head,
                                             int64_t v_stride, int64_t j0, int64_t n) {
  load_tile<T, D, kRows>(kv, k_head, k_stride, j0, n);
  load_tile<T, D, kRows>(kv + tile_elems<D>(kRows), v_head, v_stride, j0, n);
}

template <class T, int D, bool kDropout>
__global__ void __launch_bounds__(kThreads, 2)
    flash_forward_kernel(Heads<T> out, float* lse, Heads<const T> q, Heads<const T> k, Heads<const T> v, Bias bias,
                         Sizes sh) {
  constexpr int kN = kForwardKeys;
  T* const q_s = dynamic_shared_memory<T>();
  T* const kv_s = q_s + tile_elems<D>(kBlockRows);  // K0, V0, K1, V1
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t bh = blockIdx.x, b = bh / sh.hq, h = bh % sh.hq, kvh = h / (sh.hq / sh.hk);
  // The last query tiles have the most keys under causality: they start first.
  const int64_t m0 = static_cast<int64_t>(gridDim.y - 1 - blockIdx.y) * kBlockRows;
  const int64_t end = sh.causal ? min(sh.s, m0 + kBlockRows) : sh.s;
  const int tiles = static_cast<int>((end + kN - 1) / kN);
  const T* k_head = k.row(b, kvh, 0);
  const T* v_head = v.row(b, kvh, 0);

  load_tile<T, D, kBlockRows>(q_s, q.row(b, h, 0), q.sn, m0, sh.l);
  tc::cp_async_commit();
  if (tiles > 0) load_kv_tile<T, D, kN>(kv_s, k_head, k.sn, v_head, v.sn, 0, sh.s);
  tc::cp_async_commit();
  tc::cp_async_wait<1>();
  __syncthreads();
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) load_a<T, D>(qf[kk], q_s, warp * 16, kk);

  float o[D / 8][4];
  zero(o);
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  for (int tile = 0; tile < tiles; ++tile) {
    const T* ks = kv_s + (tile & 1) * 2 * tile_elems<D>(kN);
    const T* vs = ks + tile_elems<D>(kN);
    if (tile + 1 < tiles) {  // the other buffer was released by the previous iteration's barrier
      load_kv_tile<T, D, kN>(kv_s + ((tile + 1) & 1) * 2 * tile_elems<D>(kN), k_head, k.sn, v_head, v.sn,
                             (tile + 1) * int64_t{kN}, sh.s);
    }
    tc::cp_async_commit();
    uint32_t keeps = 0;
    if constexpr (kDropout) keeps = keep_bits<kN / 8>(sh, bh, m0 + warp * 16 + g, tile * int64_t{kN});
    tc::cp_async_wait<1>();
    __syncthreads();

    float s[kN / 8][4];
    zero(s);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < kN / 16; ++np) {
        uint32_t kb[4];
        load_b_rows_n<T, D>(kb, ks, np * 16, kk);
        mma<T>(s[2 * np], qf[kk], kb[0], kb[1]);
        mma<T>(s[2 * np + 1], qf[kk], kb[2], kb[3]);
      }
    }
    const int64_t j0 = tile * int64_t{kN};
    const bool masked = tile_needs_masks(sh, bias, m0 + warp * 16, 16, j0, kN);
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t i = m0 + warp * 16 + g + e / 2 * 8, j = j0 + nt * 8 + 2 * t + e % 2;
        s[nt][e] = masked ? score(s[nt][e], sh, bias, b, h, i, j) : s[nt][e] * sh.scale;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], s[nt][e]);
      }
    float factor[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m = fmaxf(row_max[r], quad_max(tile_max[r]));
      // exp(x - m) as exp2((x - m) log2 e); a row with no key yet keeps m = -inf and weights 0.
      factor[r] = m == -INFINITY ? 1.f : exp2f((row_max[r] - m) * kLog2e);
      base[r] = m == -INFINITY ? 0.f : m * kLog2e;
      row_max[r] = m;
      row_sum[r] *= factor[r];
    }
#pragma unroll
    for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[nt][e] = exp2f(s[nt][e] * kLog2e - base[e / 2]);
        row_sum[e / 2] += s[nt][e];
      }
    // The row sums are the undropped softmax's; P V takes the dropped weights.
    if constexpr (kDropout) apply_keeps(s, keeps, sh.drop.scale);
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[dt][e] *= factor[e / 2];
    mma_p_b_rows_k<T, D, kN>(o, s, vs);
    __syncthreads();  // this buffer is free for the tile after next
  }

  float norm[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float l = quad_sum(row_sum[r]);
    norm[r] = l == 0.f ? 0.f : 1.f / l;
    const int64_t i = m0 + warp * 16 + g + 8 * r;
    if (t == 0 && i < sh.l) lse[bh * sh.l + i] = l == 0.f ? -INFINITY : row_max[r] + logf(l);
  }
  store_rows<T, D>(out, b, h, m0 + warp * 16, sh.l, o, norm);
}

template <class T, int D, bool kDropout>
__global__ void __launch_bounds__(kThreads, 2)
    flash_dq_kernel(Heads<T> dq, Heads<const T> dout, Heads<const T> q, Heads<const T> k, Heads<const T> v,
                    const float* lse, const float* delta, Bias bias, Sizes sh) {
  constexpr int kN = backward_rows<D>();
  T* const q_s = dynamic_shared_memory<T>();
  T* const do_s = q_s + tile_elems<D>(kBlockRows);
  T* const kv_s = do_s + tile_elems<D>(kBlockRows);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t bh = blockIdx.x, b = bh / sh.hq, h = bh % sh.hq, kvh = h / (sh.hq / sh.hk);
  const int64_t m0 = static_cast<int64_t>(gridDim.y - 1 - blockIdx.y) * kBlockRows;
  const int64_t end = sh.causal ? min(sh.s, m0 + kBlockRows) : sh.s;
  const int tiles = static_cast<int>((end + kN - 1) / kN);
  const T* k_head = k.row(b, kvh, 0);
  const T* v_head = v.row(b, kvh, 0);

  load_tile<T, D, kBlockRows>(q_s, q.row(b, h, 0), q.sn, m0, sh.l);
  load_tile<T, D, kBlockRows>(do_s, dout.row(b, h, 0), dout.sn, m0, sh.l);
  tc::cp_async_commit();
  if (tiles > 0) load_kv_tile<T, D, kN>(kv_s, k_head, k.sn, v_head, v.sn, 0, sh.s);
  tc::cp_async_commit();
  tc::cp_async_wait<1>();
  __syncthreads();
  uint32_t qf[D / 16][4], df[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    load_a<T, D>(qf[kk], q_s, warp * 16, kk);
    load_a<T, D>(df[kk], do_s, warp * 16, kk);
  }
  float row_lse[2], row_delta[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t i = m0 + warp * 16 + g + 8 * r;
    row_lse[r] = i < sh.l ? lse[bh * sh.l + i] : 0.f;
    row_delta[r] = i < sh.l ? delta[bh * sh.l + i] : 0.f;
  }

  float acc[D / 8][4];
  zero(acc);
  for (int tile = 0; tile < tiles; ++tile) {
    const T* ks = kv_s + (tile & 1) * 2 * tile_elems<D>(kN);
    const T* vs = ks + tile_elems<D>(kN);
    if (tile + 1 < tiles) {
      load_kv_tile<T, D, kN>(kv_s + ((tile + 1) & 1) * 2 * tile_elems<D>(kN), k_head, k.sn, v_head, v.sn,
                             (tile + 1) * int64_t{kN}, sh.s);
    }
    tc::cp_async_commit();
    uint32_t keeps = 0;
    if constexpr (kDropout) keeps = keep_bits<kN / 8>(sh, bh, m0 + warp * 16 + g, tile * int64_t{kN});
    tc::cp_async_wait<1>();
    __syncthreads();

    float s[kN / 8][4], dp[kN / 8][4];
    zero(s);
    zero(dp);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < kN / 16; ++np) {
        uint32_t kb[4], vb[4];
        load_b_rows_n<T, D>(kb, ks, np * 16, kk);
        mma<T>(s[2 * np], qf[kk], kb[0], kb[1]);
        mma<T>(s[2 * np + 1], qf[kk], kb[2], kb[3]);
        load_b_rows_n<T, D>(vb, vs, np * 16, kk);
        mma<T>(dp[2 * np], df[kk], vb[0], vb[1]);
        mma<T>(dp[2 * np + 1], df[kk], vb[2], vb[3]);
      }
    }
    const int64_t j0 = tile * int64_t{kN};
    const bool masked = tile_needs_masks(sh, bias, m0 + warp * 16, 16, j0, kN);
    // Dropout: dS = P (Z dP - delta), Z dP the gradient of the undropped weights.
    if constexpr (kDropout) apply_keeps(dp, keeps, sh.drop.scale);
#pragma unroll
    for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t i = m0 + warp * 16 + g + e / 2 * 8, j = j0 + nt * 8 + 2 * t + e % 2;
        const float x = masked ? score(s[nt][e], sh, bias, b, h, i, j) : s[nt][e] * sh.scale;
        const float p = am::prob(x, row_lse[e / 2]);
        s[nt][e] = p * (dp[nt][e] - row_delta[e / 2]);  // dS
      }
    mma_p_b_rows_k<T, D, kN>(acc, s, ks);
    __syncthreads();
  }
  const float factor[2] = {sh.scale, sh.scale};
  store_rows<T, D>(dq, b, h, m0 + warp * 16, sh.l, acc, factor);
}

template <class T, int D, bool kDropout>
__global__ void __launch_bounds__(kThreads, 2)
    flash_dkdv_kernel(Heads<T> dk, Heads<T> dv, Heads<const T> dout, Heads<const T> q, Heads<const T> k,
                      Heads<const T> v, const float* lse, const float* delta, Bias bias, Sizes sh) {
  constexpr int kM = backward_rows<D>();  // queries per streamed tile
  T* const k_s = dynamic_shared_memory<T>();
  T* const v_s = k_s + tile_elems<D>(kBlockRows);
  T* const qd_s = v_s + tile_elems<D>(kBlockRows);  // Q0, dO0, Q1, dO1
  float* const stats_s = reinterpret_cast<float*>(qd_s + 4 * tile_elems<D>(kM));  // [buffer][lse, delta][kM]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t bkv = blockIdx.x, b = bkv / sh.hk, kvh = bkv % sh.hk, group = sh.hq / sh.hk;
  const int64_t j0 = static_cast<int64_t>(blockIdx.y) * kBlockRows;
  // Causal: query i sees key j only when i >= j, so the tiles before j0 contribute nothing.
  const int64_t first = sh.causal ? min(sh.l, j0 / kM * kM) : 0;
  const int per_head = static_cast<int>((sh.l - first + kM - 1) / kM);
  const int tiles = static_cast<int>(group) * per_head;

  load_tile<T, D, kBlockRows>(k_s, k.row(b, kvh, 0), k.sn, j0, sh.s);
  load_tile<T, D, kBlockRows>(v_s, v.row(b, kvh, 0), v.sn, j0, sh.s);
  tc::cp_async_commit();
  // Starts the copies of stream tile `n` (head kvh * group + n / per_head) into buffer n & 1.
  auto stage = [&](int n) {
    const int64_t h = kvh * group + n / per_head, i0 = first + static_cast<int64_t>(n % per_head) * kM;
    T* qs = qd_s + (n & 1) * 2 * tile_elems<D>(kM);
    load_tile<T, D, kM>(qs, q.row(b, h, 0), q.sn, i0, sh.l);
    load_tile<T, D, kM>(qs + tile_elems<D>(kM), dout.row(b, h, 0), dout.sn, i0, sh.l);
    float* st = stats_s + (n & 1) * 2 * kM;
    for (int r = threadIdx.x; r < kM; r += kThreads) {
      const bool in = i0 + r < sh.l;
      st[r] = in ? lse[(b * sh.hq + h) * sh.l + i0 + r] : 0.f;
      st[kM + r] = in ? delta[(b * sh.hq + h) * sh.l + i0 + r] : 0.f;
    }
  };
  if (tiles > 0) stage(0);
  tc::cp_async_commit();

  float dka[D / 8][4], dva[D / 8][4];
  zero(dka);
  zero(dva);
  for (int n = 0; n < tiles; ++n) {
    if (n + 1 < tiles) stage(n + 1);
    tc::cp_async_commit();
    tc::cp_async_wait<1>();
    __syncthreads();
    const int64_t h = kvh * group + n / per_head, i0 = first + static_cast<int64_t>(n % per_head) * kM;
    const T* qs = qd_s + (n & 1) * 2 * tile_elems<D>(kM);
    const T* dos = qs + tile_elems<D>(kM);
    const float* st = stats_s + (n & 1) * 2 * kM;

    float s[kM / 8][4], dp[kM / 8][4];  // S^T and dP^T: rows are this warp's keys
    zero(s);
    zero(dp);
    mma_a_tile_b_rows_n<T, D, D / 16, kM / 8>(s, k_s, warp * 16, qs);
    mma_a_tile_b_rows_n<T, D, D / 16, kM / 8>(dp, v_s, warp * 16, dos);
    const bool masked = tile_needs_masks(sh, bias, i0, kM, j0 + warp * 16, 16);
#pragma unroll
    for (int nt = 0; nt < kM / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = nt * 8 + 2 * t + e % 2;
        const int64_t j = j0 + warp * 16 + g + e / 2 * 8, i = i0 + c;
        const float x = masked ? score(s[nt][e], sh, bias, b, h, i, j) : s[nt][e] * sh.scale;
        const float p = am::prob(x, st[c]);
        if constexpr (kDropout) {
          // Weight (i, j) at ((b Hq + h) L + i) S + j: dV takes Z P, dS^T = P (Z dP^T - delta).
          const float z = sh.drop.factor(static_cast<uint64_t>(((b * sh.hq + h) * sh.l + i) * sh.s + j));
          s[nt][e] = p * z;
          dp[nt][e] = p * (z * dp[nt][e] - st[kM + c]);
        } else {
          s[nt][e] = p;
          dp[nt][e] = p * (dp[nt][e] - st[kM + c]);  // dS^T
        }
      }
    mma_p_b_rows_k<T, D, kM>(dva, s, dos);
    mma_p_b_rows_k<T, D, kM>(dka, dp, qs);
    __syncthreads();
  }
  const float dk_factor[2] = {sh.scale, sh.scale}, one[2] = {1.f, 1.f};
  store_rows<T, D>(dk, b, kvh, j0 + warp * 16, sh.s, dka, dk_factor);
  store_rows<T, D>(dv, b, kvh, j0 + warp * 16, sh.s, dva, one);
}

}  // namespace wick::cuda_kernels::flash
