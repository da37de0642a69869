// Scaled dot-product attention on the CPU, forward and backward, one query row (or one key
// row) at a time: the memory used beyond the inputs and outputs is a few rows per thread,
// whatever the sequence lengths (kernels/attention_math.h has the math). Every kernel
// writes with `=`. Scores, sums and gradients accumulate in stats_t (double for float64,
// float otherwise); 16-bit rows are converted to float as they are read.
//
// forward:   one task per query row; keys in blocks of kKeyBlock, whose scores are kept so
//            the running max grows once per block.
// backward:  dq: one task per query row over the keys; dk and dv: one task per key row over
//            the queries of every head that shares it (GQA), so nothing is written twice.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <vector>

#include "kernels/attention_math.h"
#include "kernels/convert.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/visit_floating.h"

namespace wick::cpu {

namespace {

namespace am = attention_math;

constexpr int64_t kKeyBlock = 64;

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
  A at(int64_t b, int64_t h, int64_t i, int64_t j) const { return p ? p[b * sb + h * sh + i * si + j * sj] : A(0); }
};

// x . y over n elements of a row of T and a row of A.
template <class A, class T>
A dot(const A* x, const T* y, int64_t n) {
  A acc[4] = {};
  int64_t e = 0;
  for (; e + 4 <= n; e += 4)
    for (int u = 0; u < 4; ++u) acc[u] += x[e + u] * convert<A>(y[e + u]);
  for (; e < n; ++e) acc[0] += x[e] * convert<A>(y[e]);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

template <class A, class T>
void load_row(A* dst, const T* src, int64_t n) {
  for (int64_t e = 0; e < n; ++e) dst[e] = convert<A>(src[e]);
}

// Rows per task below which threads are not worth starting, for rows of `work` elements.
int64_t row_grain(int64_t work) { return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, work)); }

template <class T>
void forward_typed(const Tensor& out_t, const Tensor& lse_t, const Tensor& q_t, const Tensor& k_t, const Tensor& v_t,
                   const Tensor& bias_t, const AttentionParams& p) {
  using A = stats_t<T>;
  const Geometry g = am::geometry_of(q_t, k_t, v_t);
  const T* q = static_cast<const T*>(q_t.data_ptr());
  const T* k = static_cast<const T*>(k_t.data_ptr());
  const T* v = static_cast<const T*>(v_t.data_ptr());
  T* out = out_t.data<T>();
  A* lse = lse_t.data<A>();
  const Bias<A> bias(bias_t);
  const A scale = static_cast<A>(p.scale);
  parallel_for(0, g.b * g.hq * g.l, row_grain(g.s * (g.e + g.ev)), [&](int64_t r0, int64_t r1) {
    std::vector<A> qa(static_cast<size_t>(g.e)), o(static_cast<size_t>(g.ev)), sc(kKeyBlock);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / (g.hq * g.l), h = r / g.l % g.hq, i = r % g.l;
      const int64_t kv = b * g.hk + h / group_of(g);
      const T* kb = k + kv * g.s * g.e;
      const T* vb = v + kv * g.s * g.ev;
      load_row(qa.data(), q + r * g.e, g.e);
      std::fill(o.begin(), o.end(), A(0));
      am::RowState<A> st = am::row_start<A>();
      const int64_t end = p.causal ? std::min(g.s, i + 1) : g.s;
      for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
        const int64_t n = std::min(kKeyBlock, end - j0);
        A block_max = A(-INFINITY);
        for (int64_t jj = 0; jj < n; ++jj) {
          const A s = scale * dot(qa.data(), kb + (j0 + jj) * g.e, g.e) + bias.at(b, h, i, j0 + jj);
          sc[jj] = s;
          if (s > block_max) block_max = s;
        }
        const A factor = am::raise_max(st, block_max);
        if (factor != A(1))
          for (A& x : o) x *= factor;
        for (int64_t jj = 0; jj < n; ++jj) {
          const A w = am::row_weight(st, sc[jj]);
          if (w == A(0)) continue;
          st.l += w;
          const T* vr = vb + (j0 + jj) * g.ev;
          for (int64_t e = 0; e < g.ev; ++e) o[e] += w * convert<A>(vr[e]);
        }
      }
      const A norm = am::row_norm(st);
      T* orow = out + r * g.ev;
      for (int64_t e = 0; e < g.ev; ++e) orow[e] = convert<T>(o[e] * norm);
      lse[r] = am::row_lse(st);
    }
  });
}

template <class T>
void backward_typed(const Tensor& dq_t, const Tensor& dk_t, const Tensor& dv_t, const Tensor& dout_t, const Tensor& q_t,
                    const Tensor& k_t, const Tensor& v_t, const Tensor& lse_t, const Tensor& delta_t,
                    const Tensor& bias_t, const AttentionParams& p) {
  using A = stats_t<T>;
  const Geometry g = am::geometry_of(q_t, k_t, v_t);
  const T* q = static_cast<const T*>(q_t.data_ptr());
  const T* k = static_cast<const T*>(k_t.data_ptr());
  const T* v = static_cast<const T*>(v_t.data_ptr());
  const T* dout = static_cast<const T*>(dout_t.data_ptr());
  const A* lse = static_cast<const A*>(lse_t.data_ptr());
  const A* delta = static_cast<const A*>(delta_t.data_ptr());
  T* dq = dq_t.data<T>();
  T* dk = dk_t.data<T>();
  T* dv = dv_t.data<T>();
  const Bias<A> bias(bias_t);
  const A scale = static_cast<A>(p.scale);
  // dq_i = scale sum_j p_ij (dout_i . v_j - delta_i) k_j
  parallel_for(0, g.b * g.hq * g.l, row_grain(g.s * (g.e + g.ev)), [&](int64_t r0, int64_t r1) {
    std::vector<A> qa(static_cast<size_t>(g.e)), da(static_cast<size_t>(g.ev)), acc(static_cast<size_t>(g.e));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / (g.hq * g.l), h = r / g.l % g.hq, i = r % g.l;
      const int64_t kv = b * g.hk + h / group_of(g);
      load_row(qa.data(), q + r * g.e, g.e);
      load_row(da.data(), dout + r * g.ev, g.ev);
      std::fill(acc.begin(), acc.end(), A(0));
      const int64_t end = p.causal ? std::min(g.s, i + 1) : g.s;
      for (int64_t j = 0; j < end; ++j) {
        const T* kr = k + (kv * g.s + j) * g.e;
        const A pr = am::prob(scale * dot(qa.data(), kr, g.e) + bias.at(b, h, i, j), lse[r]);
        if (pr == A(0)) continue;
        const A ds = pr * (dot(da.data(), v + (kv * g.s + j) * g.ev, g.ev) - delta[r]);
        for (int64_t e = 0; e < g.e; ++e) acc[e] += ds * convert<A>(kr[e]);
      }
      for (int64_t e = 0; e < g.e; ++e) dq[r * g.e + e] = convert<T>(scale * acc[e]);
    }
  });
  // dv_j = sum_i p_ij dout_i and dk_j = scale sum_i ds_ij q_i over every query head of the group.
  parallel_for(0, g.b * g.hk * g.s, row_grain(group_of(g) * g.l * (g.e + g.ev)), [&](int64_t r0, int64_t r1) {
    std::vector<A> ka(static_cast<size_t>(g.e)), va(static_cast<size_t>(g.ev)), dka(static_cast<size_t>(g.e)),
        dva(static_cast<size_t>(g.ev));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / (g.hk * g.s), kvh = r / g.s % g.hk, j = r % g.s;
      load_row(ka.data(), k + r * g.e, g.e);
      load_row(va.data(), v + r * g.ev, g.ev);
      std::fill(dka.begin(), dka.end(), A(0));
      std::fill(dva.begin(), dva.end(), A(0));
      for (int64_t h = kvh * group_of(g); h < (kvh + 1) * group_of(g); ++h) {
        for (int64_t i = p.causal ? j : 0; i < g.l; ++i) {
          const int64_t row = (b * g.hq + h) * g.l + i;
          const T* qr = q + row * g.e;
          const T* dr = dout + row * g.ev;
          const A pr = am::prob(scale * dot(ka.data(), qr, g.e) + bias.at(b, h, i, j), lse[row]);
          if (pr == A(0)) continue;
          const A ds = pr * (dot(va.data(), dr, g.ev) - delta[row]);
          for (int64_t e = 0; e < g.ev; ++e) dva[e] += pr * convert<A>(dr[e]);
          for (int64_t e = 0; e < g.e; ++e) dka[e] += ds * convert<A>(qr[e]);
        }
      }
      for (int64_t e = 0; e < g.e; ++e) dk[r * g.e + e] = convert<T>(scale * dka[e]);
      for (int64_t e = 0; e < g.ev; ++e) dv[r * g.ev + e] = convert<T>(dva[e]);
    }
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
