#pragma once
// Attention's per-row math, shared by kernels/cpu/attention.cpp and kernels/cuda/attention.cu,
// in the statistics type A (float, or double for float64).
//
// Forward, query row i against keys j (FlashAttention's online softmax, so no row of scores
// is ever stored): s_ij = scale (q_i . k_j) + bias_ij, -inf where masked; the row keeps its
// running max m and l = sum_j exp(s_ij - m), and o = sum_j exp(s_ij - m) v_j, both multiplied
// by exp(m_old - m_new) whenever the max grows. At the end out_i = o / l, lse_i = m + log l.
// Backward, with p_ij = exp(s_ij - lse_i) recomputed and delta_i = dout_i . out_i:
//   dv_j = sum_i p_ij dout_i,   ds_ij = p_ij (dout_i . v_j - delta_i),
//   dq_i = scale sum_j ds_ij k_j,   dk_j = scale sum_i ds_ij q_i.
// A row whose every key is masked has l = 0: out 0, lse -inf, and p = 0 in backward (PyTorch
// gives the same 0 since 2.5). NaN scores propagate to the row's output.
//
// Dropout (FlashAttention-2's): z_ij = 1 / (1 - p_drop) where weight ij is kept, else 0
// (Dropout below). The softmax, its running max and sum, and lse stay those of the undropped
// scores; only the products with v use the dropped weights:
//   out_i = sum_j z_ij p_ij v_j,   dv_j = sum_i z_ij p_ij dout_i,
//   ds_ij = p_ij (z_ij (dout_i . v_j) - delta_i),
// and delta_i = dout_i . out_i still equals sum_j p_ij z_ij (dout_i . v_j), so the backward
// needs nothing the forward did not save: the mask is drawn again from the same counters.
#include <cmath>
#include <cstdint>

#include <wick/tensor/half.h>
#include <wick/tensor/op_kinds.h>
#include <wick/tensor/philox.h>

#include "kernels/random_draw.h"

namespace wick::attention_math {

// The sizes of one attention: q [b, hq, l, e], k [b, hk, s, e], v [b, hk, s, ev].
struct Geometry {
  int64_t b, hq, hk, l, s, e, ev;
};
template <class T>
Geometry geometry_of(const T& q, const T& k, const T& v) {
  return {q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
}

// Whether causal attention hides key j from query i.
WICK_HD bool causal_hidden(bool causal, int64_t i, int64_t j) { return causal && j > i; }

template <class A>
struct RowState {
  A m, l;  // running max, sum of exp(s - m)
};

template <class A>
WICK_HD RowState<A> row_start() {
  return {A(-INFINITY), A(0)};
}

// Lets score s (or a block's max) into the row: returns the factor that l (already done)
// and the caller's o must be multiplied by (1 when the max does not grow).
template <class A>
WICK_HD A raise_max(RowState<A>& st, A s) {
  using std::exp;
  if (!(s > st.m)) return A(1);
  const A factor = st.m == A(-INFINITY) ? A(0) : exp(st.m - s);
  st.l *= factor;
  st.m = s;
  return factor;
}

// exp(s - m) for a score already let in (0 for a masked score).
template <class A>
WICK_HD A row_weight(const RowState<A>& st, A s) {
  using std::exp;
  return s == A(-INFINITY) ? A(0) : exp(s - st.m);
}

// What o is multiplied by at the end, and the row's log-sum-exp.
template <class A>
WICK_HD A row_norm(const RowState<A>& st) {
  return st.l == A(0) ? A(0) : A(1) / st.l;
}
template <class A>
WICK_HD A row_lse(const RowState<A>& st) {
  using std::log;
  return st.l == A(0) ? A(-INFINITY) : st.m + log(st.l);
}

// p = exp(s - lse), 0 for a masked score (so also in a fully masked row).
template <class A>
WICK_HD A prob(A s, A lse) {
  using std::exp;
  return s == A(-INFINITY) ? A(0) : exp(s - lse);
}

// The dropout mask: weight n (its index ((b Hq + h) L + i) S + j in [B, Hq, L, S]) is kept
// when Philox counter offset + n draws under 1 - p_drop, the draw bernoulli(1 - p_drop, ...)
// makes for element n of a [B, Hq, L, S] tensor of the inputs' dtype (53-bit uniforms for
// float64, whose statistics type A is double; 24-bit ones otherwise). So the fused kernels
// drop exactly the weights the Math backend's composition drops for the same generator
// state, on either device. p_drop = 1 keeps nothing (scale 0, not inf).
template <class A>
struct Dropout {
  bool on = false;
  A keep = A(1), scale = A(1);
  uint64_t seed = 0, offset = 0;

  static Dropout of(const AttentionParams& p) {
    Dropout d;
    if (!(p.dropout > 0)) return d;
    d.on = true;
    d.keep = static_cast<A>(1.0 - p.dropout);
    d.scale = p.dropout < 1 ? static_cast<A>(1.0 / (1.0 - p.dropout)) : A(0);
    d.seed = p.dropout_state.seed;
    d.offset = p.dropout_state.offset;
    return d;
  }
  WICK_HD bool kept(uint64_t n) const { return bernoulli_hit(philox::generate(seed, offset + n), keep); }
  // z for weight n: scale or 0.
  WICK_HD A factor(uint64_t n) const { return kept(n) ? scale : A(0); }
};

}  // namespace wick::attention_math
