#pragma once
// The per-element updates of the fused optimizer steps (the rows of WICK_FUSED_OPTIMIZERS,
// wick/tensor/op_kinds.h), written once for the CPU (kernels/cpu/optim.cpp) and CUDA
// (kernels/cuda/optim.cu) kernels, in the compute type C (double for float64, float
// otherwise). FusedUpdate<C, Hyper> derives its scalars from the hyper-parameters on the
// host, once per step; its call updates one element in place: p, and s[k], the element of
// state buffer kState[k]. A buffer the step does not use reads as 0 and what the update
// writes to it is dropped, so an update computes every buffer and selects (branch-free: the
// CPU loop vectorises).
//   SGD:     d = g + wd p; buf = first ? d : momentum buf + (1 - dampening) d;
//            d = nesterov ? d + momentum buf : buf (when momentum != 0); p -= lr d
//   Adam:    p *= 1 - lr wd (AdamW) or g += wd p (Adam); m += (1 - b1) (g - m);
//            v = v b2 + (1 - b2) g g; p -= lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps),
//            in torch's order of operations (below)
//   RMSprop: g += wd p; sq = alpha sq + (1 - alpha) g^2; d = sqrt(sq) + eps, or when centered
//            a = alpha a + (1 - alpha) g, d = sqrt(sq - a^2) + eps; with a momentum
//            buf = momentum buf + g / d, p -= lr buf, else p -= lr g / d
//   Unscale (GradScaler): g *= inv_scale, noting whether g was inf or NaN (torch's
//            _amp_foreach_non_finite_check_and_unscale_: inv_scale is a float32 number)
#include <cmath>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/half.h>

namespace wick::optim_math {

template <class C, class Hyper>
struct FusedUpdate;

template <class C>
struct FusedUpdate<C, SgdHyper> {
  C lr, wd, momentum, damp;  // damp = 1 - dampening
  bool nesterov, first_step;
  explicit FusedUpdate(const SgdHyper& h)
      : lr(static_cast<C>(h.lr)),
        wd(static_cast<C>(h.weight_decay)),
        momentum(static_cast<C>(h.momentum)),
        damp(static_cast<C>(1 - h.dampening)),
        nesterov(h.nesterov),
        first_step(h.first_step) {}
  WICK_HD void operator()(C& p, C g, C* s) const {
    const C d = g + wd * p;
    s[0] = first_step ? d : momentum * s[0] + damp * d;
    p -= lr * (momentum == 0 ? d : nesterov ? d + momentum * s[0] : s[0]);
  }
};

// Adam's update in torch.optim's order of operations (_single_tensor_adam; issue 48, item 0),
// so that a float32 run stays as close to float64 as PyTorch's: the numbers torch passes as
// Python floats are computed in double on the host and rounded once to C (1 - beta1, not
// 1 - (float)beta2, which is 1.3e-5 below 1 - beta2 in float32 and biased exp_avg_sq), the
// bias corrections are double, and each step rounds as torch's kernel for it does.
template <class C>
struct FusedUpdate<C, AdamHyper> {
  C decay;           // 1 - lr wd for AdamW, else 1: param.mul_(1 - lr * wd)
  C wd;              // Adam: grad.add(param, alpha=wd); AdamW: 0
  C lerp_base_is_m;  // exp_avg.lerp_(grad, w), w = 1 - beta1: m + w (g - m) when |w| < 0.5,
  C lerp_coeff;      //   else g - (1 - w) (g - m); here base + coeff (g - m), as torch's lerp
  C beta2;           // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  C one_minus_beta2;
  C bc2_sqrt;  // sqrt(1 - beta2^t): denom = exp_avg_sq.sqrt() / bc2_sqrt + eps
  C eps;
  C step_size;  // lr / (1 - beta1^t): param.addcdiv_(exp_avg, denom, value=-step_size)
  // Also built on the device, from a step count and learning rate kept there (CUDA graphs:
  // kernels/cuda/optim.cu), with the same double arithmetic.
  WICK_HD explicit FusedUpdate(const AdamHyper& h)
      : decay(static_cast<C>(h.decoupled_weight_decay ? 1 - h.lr * h.weight_decay : 1)),
        wd(static_cast<C>(h.decoupled_weight_decay ? 0 : h.weight_decay)),
        lerp_base_is_m(std::abs(1 - h.beta1) < 0.5 ? C(1) : C(0)),
        lerp_coeff(std::abs(1 - h.beta1) < 0.5 ? static_cast<C>(1 - h.beta1) : static_cast<C>(1 - h.beta1) - C(1)),
        beta2(static_cast<C>(h.beta2)),
        one_minus_beta2(static_cast<C>(1 - h.beta2)),
        bc2_sqrt(static_cast<C>(std::sqrt(1 - std::pow(h.beta2, static_cast<double>(h.step))))),
        eps(static_cast<C>(h.eps)),
        step_size(static_cast<C>(h.lr / (1 - std::pow(h.beta1, static_cast<double>(h.step))))) {}
  // s[0] = m, s[1] = v.
  WICK_HD void operator()(C& p, C g, C* s) const {
    using std::sqrt;
    p *= decay;
    g += wd * p;
    s[0] = (lerp_base_is_m != 0 ? s[0] : g) + lerp_coeff * (g - s[0]);
    s[1] = s[1] * beta2 + one_minus_beta2 * g * g;
    const C denom = sqrt(s[1]) / bc2_sqrt + eps;
    p -= step_size * s[0] / denom;
  }
};

template <class C>
struct FusedUpdate<C, RMSpropHyper> {
  C lr, alpha, eps, wd, momentum;
  bool centered;
  explicit FusedUpdate(const RMSpropHyper& h)
      : lr(static_cast<C>(h.lr)),
        alpha(static_cast<C>(h.alpha)),
        eps(static_cast<C>(h.eps)),
        wd(static_cast<C>(h.weight_decay)),
        momentum(static_cast<C>(h.momentum)),
        centered(h.centered) {}
  // s[0] = square_avg, s[1] = grad_avg, s[2] = momentum_buffer.
  WICK_HD void operator()(C& p, C g, C* s) const {
    using std::sqrt;
    g += wd * p;
    s[0] = alpha * s[0] + (1 - alpha) * g * g;
    s[1] = alpha * s[1] + (1 - alpha) * g;
    const C step = g / (sqrt(centered ? s[0] - s[1] * s[1] : s[0]) + eps);
    s[2] = momentum * s[2] + step;
    p -= lr * (momentum != 0 ? s[2] : step);
  }
};

// One gradient's unscale: returns g * inv_scale and sets non_finite when g is inf or NaN.
template <class C>
WICK_HD C unscale(C g, C inv_scale, bool& non_finite) {
  using std::isfinite;
  if (!isfinite(g)) non_finite = true;
  return g * inv_scale;
}

}  // namespace wick::optim_math
