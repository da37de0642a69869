#pragma once
// The per-element optimizer updates, written once for the CPU (kernels/cpu/optim.cpp) and
// CUDA (kernels/cuda/optim.cu) kernels, in the compute type C (double for float64, float
// otherwise). The scalars are derived from the hyper-parameters on the host, once per step.
//   SGD:   d = g + wd p; buf = first ? d : momentum buf + (1 - dampening) d;
//          d = nesterov ? d + momentum buf : buf (when momentum != 0); p -= lr d
//   Adam:  p *= 1 - lr wd (AdamW) or g += wd p (Adam); m = b1 m + (1 - b1) g;
//          v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//   Unscale (GradScaler): g *= inv_scale, noting whether g was inf or NaN (torch's
//          _amp_foreach_non_finite_check_and_unscale_: inv_scale is a float32 number)
#include <cmath>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/half.h>

namespace wick::optim_math {

template <class C>
struct SgdScalars {
  C lr, wd, momentum, damp;  // damp = 1 - dampening
  bool nesterov, first_step;
  explicit SgdScalars(const SgdHyper& h)
      : lr(static_cast<C>(h.lr)), wd(static_cast<C>(h.weight_decay)), momentum(static_cast<C>(h.momentum)),
        damp(static_cast<C>(1 - h.dampening)), nesterov(h.nesterov), first_step(h.first_step) {}
};

// One parameter's SGD step: returns the new value; `buf` (null without momentum) is updated.
template <class C>
WICK_HD C sgd_update(C p, C g, C* buf, const SgdScalars<C>& s) {
  C d = g + s.wd * p;
  if (buf) {
    const C m = s.first_step ? d : s.momentum * *buf + s.damp * d;
    *buf = m;
    d = s.nesterov ? d + s.momentum * m : m;
  }
  return p - s.lr * d;
}

template <class C>
struct AdamScalars {
  C beta1, beta2, eps;
  C step_size;     // lr / (1 - beta1^t)
  C inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  C decay;         // 1 - lr wd for AdamW, else 1
  C wd;            // wd for Adam (added to the gradient), else 0
  explicit AdamScalars(const AdamHyper& h)
      : beta1(static_cast<C>(h.beta1)), beta2(static_cast<C>(h.beta2)), eps(static_cast<C>(h.eps)),
        step_size(static_cast<C>(h.lr / (1 - std::pow(h.beta1, static_cast<double>(h.step))))),
        inv_sqrt_bc2(static_cast<C>(1 / std::sqrt(1 - std::pow(h.beta2, static_cast<double>(h.step))))),
        decay(static_cast<C>(h.decoupled_weight_decay ? 1 - h.lr * h.weight_decay : 1)),
        wd(static_cast<C>(h.decoupled_weight_decay ? 0 : h.weight_decay)) {}
};

// One parameter's Adam / AdamW step, in place on p, m and v.
template <class C>
WICK_HD void adam_update(C& p, C g, C& m, C& v, const AdamScalars<C>& s) {
  using std::sqrt;
  p *= s.decay;
  g += s.wd * p;
  m = s.beta1 * m + (1 - s.beta1) * g;
  v = s.beta2 * v + (1 - s.beta2) * g * g;
  p -= s.step_size * m / (sqrt(v) * s.inv_sqrt_bc2 + s.eps);
}

// One gradient's unscale: returns g * inv_scale and sets non_finite when g is inf or NaN.
template <class C>
WICK_HD C unscale(C g, C inv_scale, bool& non_finite) {
  using std::isfinite;
  if (!isfinite(g)) non_finite = true;
  return g * inv_scale;
}

}  // namespace wick::optim_math
