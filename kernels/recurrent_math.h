#pragma once
// The element-wise part of a recurrent time step, written once for the CPU
// (kernels/cpu/recurrent.cpp) and CUDA (kernels/cuda/recurrent.cu) kernels. Element (n, j)
// of the step reads gate k of row n at gi/gh[n, k H + j] and writes h, c, state gradients at
// [n, j]; a_k = gi_k + gh_k. Forward (=), as torch.nn computes it:
//   RNN   h = tanh(a) or relu(a)
//   LSTM  i, f, o = sigmoid(a_0, a_1, a_3), g = tanh(a_2); c = f c' + i g; h = o tanh(c)
//   GRU   r, z = sigmoid(a_0, a_1); n = tanh(gi_2 + r gh_2); h = n + z (h' - n)
// (c', h': the previous state). Backward (=), from the activated gates saved by the forward:
//   RNN   da = dh tanh'(a) = dh (1 - h^2), or dh [not h <= 0]; dgh = dgi = da
//   LSTM  dc~ = dc + dh o (1 - tanh(c)^2); da = (dc~ g i(1-i), dc~ c' f(1-f), dc~ i (1-g^2),
//         dh tanh(c) o(1-o)); dgh = dgi = da; dc' = dc~ f
//   GRU   dn~ = dh (1 - z)(1 - n^2); dr~ = dn~ gh_2 r(1-r); dz~ = dh (h' - n) z(1-z);
//         dgi = (dr~, dz~, dn~), dgh = (dr~, dz~, dn~ r); dh' = dh z
// The math is in compute_t<T> (float for 16-bit types), rounded once per output; M is the
// math provider (kernels/elementwise_math.h).
#include <cstdint>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/dtype.h>
#include <wick/tensor/tensor.h>

#include "kernels/elementwise_math.h"
#include "kernels/optional_data.h"

namespace wick::recurrent_math {


template <class T>
struct ForwardArgs {
  const T* gi;
  const T* gh;
  const T* state;  // c' (LSTM) or h' (GRU)
  T* h;
  T* c;
  T* saved;  // null: nothing saved (no backward will run; forward_at<..., false>)
  int64_t hidden;
};

template <class T>
struct BackwardArgs {
  const T* dh;
  const T* dc;  // LSTM only
  const T* h;
  const T* c;
  const T* saved;
  const T* state;
  T* dgi;
  T* dgh;
  T* dstate;
  int64_t hidden;
};

// The slots' tensors as the kernels' pointers (undefined tensors: null).
template <class T>
ForwardArgs<T> forward_args(const Tensor& h, const Tensor& c, const Tensor& saved, const Tensor& gi, const Tensor& gh,
                            const Tensor& state) {
  return {optional_data<T>(gi), optional_data<T>(gh), optional_data<T>(state),       h.data<T>(),
          optional_mutable_data<T>(c), optional_mutable_data<T>(saved), h.size(1)};
}
template <class T>
BackwardArgs<T> backward_args(RecurrentCell cell, const Tensor& dgi, const Tensor& dgh, const Tensor& dstate,
                              const Tensor& dh, const Tensor& dc, const Tensor& h, const Tensor& c, const Tensor& saved,
                              const Tensor& state) {
  return {optional_data<T>(dh),    optional_data<T>(dc),           optional_data<T>(h),
          optional_data<T>(c),     optional_data<T>(saved),        optional_data<T>(state),
          dgi.data<T>(),          optional_mutable_data<T>(dgh),  optional_mutable_data<T>(dstate),
          dgi.size(1) / recurrent_gates(cell)};
}

// Element j of row n; kSave: write the saved gates (a compile-time choice, so that the CPU's
// loops have no branch and vectorise).
template <RecurrentCell kCell, class T, class M, bool kSave>
WICK_ELEMENTWISE_FN void forward_at(const ForwardArgs<T>& a, int64_t n, int64_t j) {
  using C = compute_t<T>;
  const int64_t hid = a.hidden, row = n * recurrent_gates(kCell) * hid + j, out = n * hid + j;
  auto pre = [&](int64_t k) { return static_cast<C>(a.gi[row + k * hid]) + static_cast<C>(a.gh[row + k * hid]); };
  // LSTM's and GRU's four saved values, H apart in the element's row of `saved`.
  auto save = [&](C v0, C v1, C v2, C v3) {
    if constexpr (kSave) {
      const int64_t s = n * 4 * hid + j;
      a.saved[s] = static_cast<T>(v0);
      a.saved[s + hid] = static_cast<T>(v1);
      a.saved[s + 2 * hid] = static_cast<T>(v2);
      a.saved[s + 3 * hid] = static_cast<T>(v3);
    }
  };
  if constexpr (kCell == RecurrentCell::RnnTanh) {
    a.h[out] = static_cast<T>(M::tanh(pre(0)));
  } else if constexpr (kCell == RecurrentCell::RnnRelu) {
    const C x = pre(0);
    a.h[out] = static_cast<T>(x < C(0) ? C(0) : x);  // NaN stays NaN, as relu
  } else if constexpr (kCell == RecurrentCell::Lstm) {
    const C i = emath::sigmoid<M>(pre(0)), f = emath::sigmoid<M>(pre(1)), g = M::tanh(pre(2)),
            o = emath::sigmoid<M>(pre(3));
    const C c = f * static_cast<C>(a.state[out]) + i * g;
    a.c[out] = static_cast<T>(c);
    a.h[out] = static_cast<T>(o * M::tanh(c));
    save(i, f, g, o);
  } else {
    static_assert(kCell == RecurrentCell::Gru);
    const C r = emath::sigmoid<M>(pre(0)), z = emath::sigmoid<M>(pre(1));
    const C hn = static_cast<C>(a.gh[row + 2 * hid]);
    const C nn = M::tanh(static_cast<C>(a.gi[row + 2 * hid]) + r * hn);
    a.h[out] = static_cast<T>(nn + z * (static_cast<C>(a.state[out]) - nn));
    save(r, z, nn, hn);
  }
}

template <RecurrentCell kCell, class T, class M>
WICK_ELEMENTWISE_FN void backward_at(const BackwardArgs<T>& a, int64_t n, int64_t j) {
  using C = compute_t<T>;
  const int64_t hid = a.hidden, row = n * recurrent_gates(kCell) * hid + j, out = n * hid + j, s = n * 4 * hid + j;
  const C dh = static_cast<C>(a.dh[out]);
  if constexpr (kCell == RecurrentCell::RnnTanh) {
    const C h = static_cast<C>(a.h[out]);
    a.dgi[row] = static_cast<T>(dh * (C(1) - h * h));
  } else if constexpr (kCell == RecurrentCell::RnnRelu) {
    a.dgi[row] = static_cast<T>(static_cast<C>(a.h[out]) <= C(0) ? C(0) : dh);  // NaN passes dh, as relu's
  } else if constexpr (kCell == RecurrentCell::Lstm) {
    const C i = static_cast<C>(a.saved[s]), f = static_cast<C>(a.saved[s + hid]),
            g = static_cast<C>(a.saved[s + 2 * hid]), o = static_cast<C>(a.saved[s + 3 * hid]);
    const C tc = M::tanh(static_cast<C>(a.c[out]));
    const C dc = static_cast<C>(a.dc[out]) + dh * o * (C(1) - tc * tc);
    a.dgi[row] = static_cast<T>(dc * g * i * (C(1) - i));
    a.dgi[row + hid] = static_cast<T>(dc * static_cast<C>(a.state[out]) * f * (C(1) - f));
    a.dgi[row + 2 * hid] = static_cast<T>(dc * i * (C(1) - g * g));
    a.dgi[row + 3 * hid] = static_cast<T>(dh * tc * o * (C(1) - o));
    a.dstate[out] = static_cast<T>(dc * f);
  } else {
    static_assert(kCell == RecurrentCell::Gru);
    const C r = static_cast<C>(a.saved[s]), z = static_cast<C>(a.saved[s + hid]),
            nn = static_cast<C>(a.saved[s + 2 * hid]), hn = static_cast<C>(a.saved[s + 3 * hid]);
    const C dn = dh * (C(1) - z) * (C(1) - nn * nn);
    const C dr = dn * hn * r * (C(1) - r);
    const C dz = dh * (static_cast<C>(a.state[out]) - nn) * z * (C(1) - z);
    a.dgi[row] = a.dgh[row] = static_cast<T>(dr);
    a.dgi[row + hid] = a.dgh[row + hid] = static_cast<T>(dz);
    a.dgi[row + 2 * hid] = static_cast<T>(dn);
    a.dgh[row + 2 * hid] = static_cast<T>(dn * r);
    a.dstate[out] = static_cast<T>(dh * z);
  }
}

// Calls f.template operator()<kCell>() for a runtime cell.
template <class F>
void visit_cell(RecurrentCell cell, F&& f) {
  switch (cell) {
    case RecurrentCell::RnnTanh: return f.template operator()<RecurrentCell::RnnTanh>();
    case RecurrentCell::RnnRelu: return f.template operator()<RecurrentCell::RnnRelu>();
    case RecurrentCell::Lstm: return f.template operator()<RecurrentCell::Lstm>();
    case RecurrentCell::Gru: return f.template operator()<RecurrentCell::Gru>();
  }
}

}  // namespace wick::recurrent_math
