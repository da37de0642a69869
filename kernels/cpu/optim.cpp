// The fused multi-tensor optimizer steps and GradScaler's unscale on the CPU, in place: the
// updates of kernels/optim_math.h (shared with CUDA), one loop for every optimizer. For float
// it is vectorised (a CI gate: the loop's mark for tools/check_vectorised.py, and a probe per
// optimizer in tests/kernels/vectorised_loops.cpp); sqrt is an instruction there because the
// kernels are built with -fno-math-errno.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <variant>
#include <vector>

#include "kernels/convert.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/optim_math.h"
#include "kernels/visit_floating.h"

namespace wick::cpu {

namespace {

// One tensor of a fused step: the row's update per element, each tensor split over threads.
template <class T, class Hyper>
void fused_typed(const Hyper& h, const Tensor& p_t, const Tensor& g_t, const std::array<T*, kMaxFusedStates>& state) {
  using C = compute_t<T>;
  constexpr size_t kStates = kFusedStates<Hyper>;
  T* p = p_t.data<T>();
  const T* g = static_cast<const T*>(g_t.data_ptr());
  parallel_for(0, p_t.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    // A state buffer the step does not use is read and written in a scratch block of its own
    // (zeros at first; the update drops its value), so that the loop has no branch.
    constexpr int64_t kBlock = 512;
    T scratch[kStates][kBlock] = {};
    // Made here, not captured: read through the lambda's reference, its scalars could alias
    // the arrays written, so GCC would reload them every element and vectorise nothing.
    const optim_math::FusedUpdate<C, Hyper> u(h);
    for (int64_t at = b; at < e; at += kBlock) {
      const int64_t n = std::min(kBlock, e - at);
      T* s[kStates];
      for (size_t k = 0; k < kStates; ++k) s[k] = state[k] ? state[k] + at : scratch[k];
      T* pb = p + at;
      const T* gb = g + at;
      // Not `omp simd`: GCC 12 then keeps si in memory and vectorises nothing.
      for (int64_t i = 0; i < n; ++i) {  // [simd]
        C pi = static_cast<C>(pb[i]);
        C si[kStates];
        for (size_t k = 0; k < kStates; ++k) si[k] = static_cast<C>(s[k][i]);
        u(pi, static_cast<C>(gb[i]), si);
        pb[i] = static_cast<T>(pi);
        for (size_t k = 0; k < kStates; ++k) s[k][i] = static_cast<T>(si[k]);
      }
    }
  });
}

void fused_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const FusedStateLists& state,
                const FusedHyper& hyper) {
  std::visit(
      [&]<class Hyper>(const Hyper& h) {
        for (size_t i = 0; i < params.size(); ++i)
          visit_floating(fused_step_name<Hyper>, Device::cpu(), params[i].dtype(), [&]<class T>() {
            std::array<T*, kMaxFusedStates> s{};
            for (size_t k = 0; k < kMaxFusedStates; ++k)
              if (!state[k].empty()) s[k] = state[k][i].data<T>();
            fused_typed<T>(h, params[i], grads[i], s);
          });
      },
      hyper);
}

// Returns whether any element was inf or NaN.
template <class T>
bool unscale_typed(const Tensor& g_t, double inv_scale) {
  using C = compute_t<T>;
  T* g = g_t.data<T>();
  const C inv = static_cast<C>(inv_scale);
  std::atomic<bool> found{false};
  parallel_for(0, g_t.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    bool non_finite = false;
    for (int64_t i = b; i < e; ++i) g[i] = static_cast<T>(optim_math::unscale(static_cast<C>(g[i]), inv, non_finite));
    if (non_finite) found.store(true, std::memory_order_relaxed);
  });
  return found.load();
}

void unscale_grads(const std::vector<Tensor>& grads, const Tensor& found_inf, double inv_scale) {
  bool found = false;
  for (const Tensor& g : grads)
    visit_floating("unscale_grads", Device::cpu(), g.dtype(),
                   [&]<class T>() { found = unscale_typed<T>(g, inv_scale) || found; });
  if (found) *found_inf.data<float>() = 1.0f;
}

}  // namespace

void register_optim(KernelTable& t) {
  t.fused_step = &fused_step;
  t.unscale_grads = &unscale_grads;
}

}  // namespace wick::cpu
