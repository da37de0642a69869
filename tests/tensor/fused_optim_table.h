#pragma once
// The test rows of the fused optimizer steps (WICK_FUSED_OPTIMIZERS, wick/tensor/optim_hyper.h):
// per setting of a row's hyper-parameters, the float64 reference of one element's update.
// They drive the reference test over several steps (tests/tensor/optim_step_test.cpp) and
// CUDA against the CPU (tests/kernels/cuda_norm_test.cpp); EveryFusedOptimizerHasACase fails
// for a row without one.
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <wick/tensor/optim_step.h>

namespace wick::test {

struct FusedCase {
  std::string name;
  // The hyper-parameters of step `step` (from 1).
  std::function<FusedHyper(int step)> hyper;
  // Step `step` of one element in float64: p and s (the Hyper's kState order) in place.
  std::function<void(int step, double& p, double g, double* s)> reference;
};

// A list per state buffer, in kState's order, for any row.
using FusedLists = std::array<std::vector<Tensor>, kMaxFusedStates>;

inline std::vector<FusedCase> fused_cases() {
  std::vector<FusedCase> cases;
  struct Sgd {
    double momentum, dampening, wd;
    bool nesterov;
  };
  for (const Sgd o : {Sgd{0, 0, 0, false}, Sgd{0, 0, 0.1, false}, Sgd{0.9, 0, 0, false}, Sgd{0.9, 0.3, 0.01, false},
                      Sgd{0.8, 0, 0.05, true}}) {
    const double lr = 0.1;
    cases.push_back(
        {"sgd momentum " + std::to_string(o.momentum) + (o.nesterov ? " nesterov" : ""),
         [=](int step) -> FusedHyper { return SgdHyper{lr, o.momentum, o.dampening, o.wd, o.nesterov, step == 1}; },
         [=](int step, double& p, double g, double* s) {
           double d = g + o.wd * p;
           if (o.momentum != 0) {
             s[0] = step == 1 ? d : o.momentum * s[0] + (1 - o.dampening) * d;
             d = o.nesterov ? d + o.momentum * s[0] : s[0];
           }
           p -= lr * d;
         }});
  }
  for (const bool decoupled : {true, false}) {
    const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.1;
    cases.push_back({decoupled ? "adamw" : "adam",
                     [=](int step) -> FusedHyper { return AdamHyper{lr, b1, b2, eps, wd, step, decoupled}; },
                     [=](int step, double& p, double g, double* s) {
                       if (decoupled) p *= 1 - lr * wd;
                       else g += wd * p;
                       s[0] = b1 * s[0] + (1 - b1) * g;
                       s[1] = b2 * s[1] + (1 - b2) * g * g;
                       const double mhat = s[0] / (1 - std::pow(b1, step)), vhat = s[1] / (1 - std::pow(b2, step));
                       p -= lr * mhat / (std::sqrt(vhat) + eps);
                     }});
  }
  struct RMSprop {
    double alpha, eps, wd, momentum;
    bool centered;
  };
  for (const RMSprop o : {RMSprop{0.99, 1e-8, 0, 0, false}, RMSprop{0.9, 1e-8, 0.1, 0.5, true},
                          RMSprop{0.8, 1e-4, 0, 0.9, false}, RMSprop{0.9, 1e-6, 0.05, 0, true}}) {
    const double lr = 0.05;
    cases.push_back({std::string("rmsprop momentum ") + std::to_string(o.momentum) + (o.centered ? " centered" : ""),
                     [=](int) -> FusedHyper { return RMSpropHyper{lr, o.alpha, o.eps, o.wd, o.momentum, o.centered}; },
                     [=](int, double& p, double g, double* s) {
                       g += o.wd * p;
                       s[0] = o.alpha * s[0] + (1 - o.alpha) * g * g;
                       double mean_sq = s[0];
                       if (o.centered) {
                         s[1] = o.alpha * s[1] + (1 - o.alpha) * g;
                         mean_sq -= s[1] * s[1];
                       }
                       const double step = g / (std::sqrt(mean_sq) + o.eps);
                       if (o.momentum != 0) {
                         s[2] = o.momentum * s[2] + step;
                         p -= lr * s[2];
                       } else {
                         p -= lr * step;
                       }
                     }});
  }
  return cases;
}

// Calls the row's function (sgd_step, adam_step...) for `hyper`, with the first
// kFusedStates<Hyper> lists of `state`.
inline void fused_step_of(const FusedHyper& hyper, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                          const FusedLists& state) {
  std::visit(
      [&]<class Hyper>(const Hyper& h) {
        FusedState<Hyper> s;
        for (size_t k = 0; k < s.size(); ++k) s[k] = state[k];
#define WICK_FUSED_CALL(H, name) \
  if constexpr (std::is_same_v<Hyper, H>) name(params, grads, s, h);
        WICK_FUSED_OPTIMIZERS(WICK_FUSED_CALL)
#undef WICK_FUSED_CALL
      },
      hyper);
}

// Whether the state list k of `hyper` is used (the others stay as they were).
inline bool fused_uses_state(const FusedHyper& hyper, size_t k) {
  return std::visit([&]<class Hyper>(const Hyper& h) { return k < kFusedStates<Hyper> && h.uses_state(k); }, hyper);
}

}  // namespace wick::test
