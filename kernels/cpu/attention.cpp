// Scaled dot-product attention on the CPU, forward and backward, FlashAttention's way: tiles
// of kQueryBlock queries against kKeyBlock keys, the tile's scores and products through the
// matrix-product kernel (serial_gemm), softmax weights with the vectorised exp. The memory
// used beyond the inputs and outputs is a few tiles per thread in the forward and, in the
// backward, float accumulators for one head's dk and dv: linear in the sequence lengths
// (kernels/attention_math.h has the math). Every kernel writes its outputs with `=`. Heads are
// read and written through their strides (rows of unit stride, the products take their row
// distance), so q, k, v split from one projection ([B, L, H, E] memory seen as [B, H, L, E])
// need no copy, nor an output laid out that way. Scores,
// sums and gradients are in stats_t (double for float64, float otherwise); 16-bit tiles are
// converted to float as they are read.
//
// forward:   one task per (batch, head, query block); its keys in blocks, the running max
//            raised once per block (online softmax), out = o / l and lse at the end.
// backward:  one task per (batch, key/value head): the query blocks of every head that
//            shares it (GQA) against its key blocks, p recomputed from lse; dq of a query
//            block is complete when its keys are done, dk and dv when all queries are, so
//            nothing is written twice and no task touches another's outputs.
// dropout:   each tile's weights are multiplied by their z (am::Dropout, one Philox draw per
//            weight) after the row sums took them undropped; the backward draws the same z
//            per tile for dv (z p) and ds (p (z dp - delta)).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/attention_math.h"
#include "kernels/convert.h"
#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/lane_sum.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/serial_gemm.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/visit_floating.h"

namespace wick::cpu {

namespace {

namespace am = attention_math;

constexpr int64_t kQueryBlock = 64, kKeyBlock = 128;

using am::Geometry;

int64_t group_of(const Geometry& g) { return g.hq / g.hk; }

// The additive bias of (b, h, i, j), or 0 without one.
template <class A>
struct Bias {
  const A* p = nullptr;
  int64_t sb = 0, sh = 0, si = 0, sj = 0;
  explicit Bias(const Tensor& t) {
    if (!t.defined()) return;
    p = static_cast<const A*>(t.data_ptr());
    sb = t.stride(0), sh = t.stride(1), si = t.stride(2), sj = t.stride(3);
  }
};

// The rows of a [B, H, N, D] tensor whose last dim has unit stride: row (b, h, i) starts at
// at(b, h, i), and the rows of one head are ld apart (a lone row's stride may be anything, so
// it is not handed to the products).
template <class T>
struct Rows {
  T* p;
  int64_t sb, sh, ld;
  explicit Rows(const Tensor& t)
      : p(static_cast<T*>(t.data_ptr())),
        sb(t.stride(0)),
        sh(t.stride(1)),
        ld(t.size(2) > 1 ? t.stride(2) : t.size(3)) {}
  T* at(int64_t b, int64_t h, int64_t i) const { return p + b * sb + h * sh + i * ld; }
};

// A block of rows read as A: the tensor's own rows when T is A, else converted into `buf`.
template <class A>
struct StatsRows {
  const A* p;
  int64_t ld;
};
template <class A, class T>
StatsRows<A> as_stats(const T* src, int64_t ld, int64_t rows, int64_t cols, std::vector<A>& buf) {
  if constexpr (std::is_same_v<A, T>) {
    return {src, ld};
  } else {
    buf.resize(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) buf[static_cast<size_t>(i * cols + j)] = convert<A>(src[i * ld + j]);
    return {buf.data(), cols};
  }
}

// The tile of scores s [bq, bk] (row stride bk) of queries i0.. against keys j0..:
// scale (q k^T) + bias, -inf where causal attention hides the key.
template <class A>
void scores(A* s, StatsRows<A> q, StatsRows<A> k, int64_t bq, int64_t bk, int64_t e, A scale, const Bias<A>& bias,
            int64_t b, int64_t h, int64_t i0, int64_t j0, bool causal) {
  std::fill(s, s + bq * bk, A(0));
  serial_gemm<A, kRowMajor, kColMajor>(bq, bk, e, q.p, q.ld, k.p, k.ld, s, bk, scale);
  if (bias.p != nullptr)
    for (int64_t i = 0; i < bq; ++i) {
      const A* br = bias.p + b * bias.sb + h * bias.sh + (i0 + i) * bias.si + j0 * bias.sj;
      for (int64_t j = 0; j < bk; ++j) s[i * bk + j] += br[j * bias.sj];
    }
  if (causal)
    for (int64_t i = 0; i < bq; ++i)
      for (int64_t j = std::max<int64_t>(0, i0 + i + 1 - j0); j < bk; ++j) s[i * bk + j] = A(-INFINITY);
}

// exp(s - m) in place over a row, 0 for a masked score, and the row's sum (lane_sum: GCC
// vectorises it for float in the CPU's widest vectors, the same bits in every copy).
template <class A>
WICK_ISA_CLONES A exp_row(A* s, int64_t n, A m) {
  return lane_sum<A>(n, [&](int64_t j) {
    const A w = s[j] == A(-INFINITY) ? A(0) : VecMath::exp(s[j] - m);
    s[j] = w;
    return w;
  });
}

// Multiplies weights row[0, n) by their dropout factors z (am::Dropout), row index `first`
// (the linear index in [B, Hq, L, S] of row[0]) onward.
template <class A>
void drop_row(A* row, int64_t n, const am::Dropout<A>& drop, uint64_t first) {
  for (int64_t j = 0; j < n; ++j) row[j] *= drop.factor(first + static_cast<uint64_t>(j));
}

// rows x cols accumulators (contiguous) into rows of T that are ld apart.
template <class T, class A>
void write_rows(T* dst, int64_t ld, const A* src, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * ld + j] = convert<T>(src[i * cols + j]);
}

// The last key a query block sees, plus one.
int64_t key_end(const Geometry& g, bool causal, int64_t i0, int64_t bq) {
  return causal ? std::min(g.s, i0 + bq) : g.s;
}

template <class T>
void forward_typed(const Tensor& out_t, const Tensor& lse_t, const Tensor& q_t, const Tensor& k_t, const Tensor& v_t,
                   const Tensor& bias_t, const AttentionParams& p) {
  using A = stats_t<T>;
  const Geometry g = am::geometry_of(q_t, k_t, v_t);
  const Rows<const T> q(q_t), k(k_t), v(v_t);
  const Rows<T> out(out_t);
  A* lse = lse_t.data<A>();
  const Bias<A> bias(bias_t);
  const A scale = static_cast<A>(p.scale);
  const am::Dropout<A> drop = am::Dropout<A>::of(p);
  const int64_t blocks = (g.l + kQueryBlock - 1) / kQueryBlock;
  parallel_for(0, g.b * g.hq * blocks, 1, [&](int64_t t0, int64_t t1) {
    with_isa_clones<T>([&] {
      std::vector<A> qbuf, kbuf, vbuf, s(static_cast<size_t>(kQueryBlock * kKeyBlock)),
          o(static_cast<size_t>(kQueryBlock * g.ev));
      std::vector<am::RowState<A>> st(static_cast<size_t>(kQueryBlock));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t bh = t / blocks, b = bh / g.hq, h = bh % g.hq, i0 = t % blocks * kQueryBlock;
        const int64_t bq = std::min(kQueryBlock, g.l - i0), hkv = h / group_of(g);
        const StatsRows<A> qa = as_stats<A>(q.at(b, h, i0), q.ld, bq, g.e, qbuf);
        std::fill(o.begin(), o.begin() + bq * g.ev, A(0));
        std::fill(st.begin(), st.end(), am::row_start<A>());
        const int64_t end = key_end(g, p.causal, i0, bq);
        for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
          const int64_t bk = std::min(kKeyBlock, end - j0);
          const StatsRows<A> ka = as_stats<A>(k.at(b, hkv, j0), k.ld, bk, g.e, kbuf);
          const StatsRows<A> va = as_stats<A>(v.at(b, hkv, j0), v.ld, bk, g.ev, vbuf);
          scores(s.data(), qa, ka, bq, bk, g.e, scale, bias, b, h, i0, j0, p.causal);
          for (int64_t i = 0; i < bq; ++i) {
            A* row = s.data() + i * bk;
            A block_max = A(-INFINITY);
            for (int64_t j = 0; j < bk; ++j) block_max = row[j] > block_max ? row[j] : block_max;
            const A factor = am::raise_max(st[i], block_max);
            if (factor != A(1))
              for (int64_t e = 0; e < g.ev; ++e) o[i * g.ev + e] *= factor;
            st[i].l += exp_row(row, bk, st[i].m);
            // The sum above is the undropped softmax's; only the product with v drops.
            if (drop.on) drop_row(row, bk, drop, static_cast<uint64_t>((bh * g.l + i0 + i) * g.s + j0));
          }
          serial_gemm<A, kRowMajor, kRowMajor>(bq, g.ev, bk, s.data(), bk, va.p, va.ld, o.data(), g.ev, A(1));
        }
        for (int64_t i = 0; i < bq; ++i) {
          const A norm = am::row_norm(st[i]);
          T* orow = out.at(b, h, i0 + i);
          for (int64_t e = 0; e < g.ev; ++e) orow[e] = convert<T>(o[i * g.ev + e] * norm);
          lse[bh * g.l + i0 + i] = am::row_lse(st[i]);
        }
      }
    });
  });
}

template <class T>
void backward_typed(const Tensor& dq_t, const Tensor& dk_t, const Tensor& dv_t, const Tensor& dout_t, const Tensor& q_t,
                    const Tensor& k_t, const Tensor& v_t, const Tensor& lse_t, const Tensor& delta_t,
                    const Tensor& bias_t, const AttentionParams& p) {
  using A = stats_t<T>;
  const Geometry g = am::geometry_of(q_t, k_t, v_t);
  const Rows<const T> q(q_t), k(k_t), v(v_t), dout(dout_t);
  const A* lse = static_cast<const A*>(lse_t.data_ptr());
  const A* delta = static_cast<const A*>(delta_t.data_ptr());
  const Rows<T> dq(dq_t), dk(dk_t), dv(dv_t);
  const Bias<A> bias(bias_t);
  const A scale = static_cast<A>(p.scale);
  const am::Dropout<A> drop = am::Dropout<A>::of(p);
  parallel_for(0, g.b * g.hk, 1, [&](int64_t t0, int64_t t1) {
    with_isa_clones<T>([&] {
      // With dropout, z and z p of the tile (p itself stays in s).
      std::vector<A> z(drop.on ? static_cast<size_t>(kQueryBlock * kKeyBlock) : 0), pz(z.size());
      std::vector<A> qbuf, dobuf, kbuf, vbuf, s(static_cast<size_t>(kQueryBlock * kKeyBlock)),
          dp(static_cast<size_t>(kQueryBlock * kKeyBlock)), dqa(static_cast<size_t>(kQueryBlock * g.e)),
          dka(static_cast<size_t>(g.s * g.e)), dva(static_cast<size_t>(g.s * g.ev));
      for (int64_t kv = t0; kv < t1; ++kv) {
        const int64_t b = kv / g.hk, hkv = kv % g.hk;
        const StatsRows<A> ka = as_stats<A>(k.at(b, hkv, 0), k.ld, g.s, g.e, kbuf);
        const StatsRows<A> va = as_stats<A>(v.at(b, hkv, 0), v.ld, g.s, g.ev, vbuf);
        std::fill(dka.begin(), dka.end(), A(0));
        std::fill(dva.begin(), dva.end(), A(0));
        for (int64_t h = hkv * group_of(g); h < (hkv + 1) * group_of(g); ++h)
          for (int64_t i0 = 0; i0 < g.l; i0 += kQueryBlock) {
            const int64_t bq = std::min(kQueryBlock, g.l - i0), row0 = (b * g.hq + h) * g.l + i0;
            const StatsRows<A> qa = as_stats<A>(q.at(b, h, i0), q.ld, bq, g.e, qbuf);
            const StatsRows<A> da = as_stats<A>(dout.at(b, h, i0), dout.ld, bq, g.ev, dobuf);
            std::fill(dqa.begin(), dqa.begin() + bq * g.e, A(0));
            const int64_t end = key_end(g, p.causal, i0, bq);
            for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
              const int64_t bk = std::min(kKeyBlock, end - j0);
              const StatsRows<A> kj{ka.p + j0 * ka.ld, ka.ld}, vj{va.p + j0 * va.ld, va.ld};
              // p = exp(s - lse); dv_j += p^T dout; dp = dout v^T; ds = p (dp - delta)
              scores(s.data(), qa, kj, bq, bk, g.e, scale, bias, b, h, i0, j0, p.causal);
              for (int64_t i = 0; i < bq; ++i) {
                const A l = lse[row0 + i];
                A* row = s.data() + i * bk;
                if (l == A(-INFINITY)) std::fill(row, row + bk, A(0));  // a fully masked row
                else exp_row(row, bk, l);
              }
              // With dropout dv takes z p, and ds = p (z dp - delta).
              if (drop.on)
                for (int64_t i = 0; i < bq; ++i) {
                  A* zr = z.data() + i * bk;
                  std::fill(zr, zr + bk, A(1));
                  drop_row(zr, bk, drop, static_cast<uint64_t>((row0 + i) * g.s + j0));
                  for (int64_t j = 0; j < bk; ++j) pz[i * bk + j] = s[i * bk + j] * zr[j];
                }
              serial_gemm<A, kColMajor, kRowMajor>(bk, g.ev, bq, drop.on ? pz.data() : s.data(), bk, da.p, da.ld,
                                                   dva.data() + j0 * g.ev, g.ev, A(1));
              std::fill(dp.begin(), dp.begin() + bq * bk, A(0));
              serial_gemm<A, kRowMajor, kColMajor>(bq, bk, g.ev, da.p, da.ld, vj.p, vj.ld, dp.data(), bk, A(1));
              for (int64_t i = 0; i < bq; ++i) {
                const A d = delta[row0 + i];
                if (drop.on)
                  for (int64_t j = 0; j < bk; ++j)
                    dp[i * bk + j] = s[i * bk + j] * (z[i * bk + j] * dp[i * bk + j] - d);
                else
                  for (int64_t j = 0; j < bk; ++j) dp[i * bk + j] = s[i * bk + j] * (dp[i * bk + j] - d);
              }
              // dq_i += scale ds k_j; dk_j += scale ds^T q_i
              serial_gemm<A, kRowMajor, kRowMajor>(bq, g.e, bk, dp.data(), bk, kj.p, kj.ld, dqa.data(), g.e, scale);
              serial_gemm<A, kColMajor, kRowMajor>(bk, g.e, bq, dp.data(), bk, qa.p, qa.ld, dka.data() + j0 * g.e, g.e,
                                                   scale);
            }
            write_rows(dq.at(b, h, i0), dq.ld, dqa.data(), bq, g.e);
          }
        write_rows(dk.at(b, hkv, 0), dk.ld, dka.data(), g.s, g.e);
        write_rows(dv.at(b, hkv, 0), dv.ld, dva.data(), g.s, g.ev);
      }
    });
  });
}

void attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& bias, const AttentionParams& p) {
  visit_floating("attention_forward", q.device(), q.dtype(),
                 [&]<class T>() { forward_typed<T>(out, lse, q, k, v, bias, p); });
}

void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& lse, const Tensor& delta, const Tensor& bias,
                        const AttentionParams& p) {
  visit_floating("attention_backward", q.device(), q.dtype(),
                 [&]<class T>() { backward_typed<T>(dq, dk, dv, dout, q, k, v, lse, delta, bias, p); });
}

}  // namespace

void register_attention(KernelTable& t) {
  t.attention_forward = &attention_forward;
  t.attention_backward = &attention_backward;
}

}  // namespace wick::cpu
