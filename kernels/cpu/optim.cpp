// Multi-tensor optimizer steps and GradScaler's unscale on the CPU, in place: the updates of kernels/optim_math.h
// (shared with CUDA), each tensor split over threads; float and double Adam go through Eigen
// arrays instead (the same formula, vectorised).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>
#include <vector>

// GCC 12 reports false maybe-uninitialized warnings inside Eigen's AVX-512 code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "kernels/convert.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/optim_math.h"
#include "kernels/visit_floating.h"

namespace wick::cpu {

namespace {

template <class T>
void sgd_typed(const Tensor& p_t, const Tensor& g_t, const Tensor& buf_t, const SgdHyper& h) {
  using C = compute_t<T>;
  T* p = p_t.data<T>();
  const T* g = static_cast<const T*>(g_t.data_ptr());
  T* buf = h.momentum != 0 ? buf_t.data<T>() : nullptr;
  const optim_math::SgdScalars<C> s(h);
  parallel_for(0, p_t.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      C m = buf ? static_cast<C>(buf[i]) : C(0);
      p[i] = static_cast<T>(optim_math::sgd_update(static_cast<C>(p[i]), static_cast<C>(g[i]), buf ? &m : nullptr, s));
      if (buf) buf[i] = static_cast<T>(m);
    }
  });
}

template <class T>
void adam_typed(const Tensor& p_t, const Tensor& g_t, const Tensor& m_t, const Tensor& v_t, const AdamHyper& h) {
  using C = compute_t<T>;
  T* p = p_t.data<T>();
  const T* g = static_cast<const T*>(g_t.data_ptr());
  T* m = m_t.data<T>();
  T* v = v_t.data<T>();
  const optim_math::AdamScalars<C> s(h);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    // The same update through Eigen arrays, in cache-sized blocks: its sqrt is vectorised,
    // while a plain loop calling std::sqrt is not (errno), which made this step a sixth of
    // the MNIST MLP's training time. With AVX-512 Eigen's float sqrt is a reciprocal square
    // root estimate refined by one Newton step (an ulp or two from the exact root; roots of
    // subnormal v are 0, where eps dominates the denominator anyway).
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    using Map = Eigen::Map<Array>;
    using ConstMap = Eigen::Map<const Array>;
    constexpr int64_t kBlock = 1024;
    parallel_for(0, p_t.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      Array gi(kBlock);
      for (int64_t at = b; at < e; at += kBlock) {
        const int64_t n = std::min(kBlock, e - at);
        Map P(p + at, n), M(m + at, n), V(v + at, n);
        auto g_block = gi.head(n);
        P *= s.decay;
        g_block = ConstMap(g + at, n) + s.wd * P;
        M = s.beta1 * M + (1 - s.beta1) * g_block;
        V = s.beta2 * V + (1 - s.beta2) * g_block * g_block;
        P -= s.step_size * M / (V.sqrt() * s.inv_sqrt_bc2 + s.eps);
      }
    });
    return;
  }
  parallel_for(0, p_t.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      C pi = static_cast<C>(p[i]), mi = static_cast<C>(m[i]), vi = static_cast<C>(v[i]);
      optim_math::adam_update(pi, static_cast<C>(g[i]), mi, vi, s);
      p[i] = static_cast<T>(pi);
      m[i] = static_cast<T>(mi);
      v[i] = static_cast<T>(vi);
    }
  });
}

void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& bufs,
              const SgdHyper& h) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor buf = h.momentum != 0 ? bufs[i] : Tensor();
    visit_floating("sgd_step", Device::cpu(), params[i].dtype(),
                   [&]<class T>() { sgd_typed<T>(params[i], grads[i], buf, h); });
  }
}

void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
               const std::vector<Tensor>& v, const AdamHyper& h) {
  for (size_t i = 0; i < params.size(); ++i)
    visit_floating("adam_step", Device::cpu(), params[i].dtype(),
                   [&]<class T>() { adam_typed<T>(params[i], grads[i], m[i], v[i], h); });
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
  t.sgd_step = &sgd_step;
  t.adam_step = &adam_step;
  t.unscale_grads = &unscale_grads;
}

}  // namespace wick::cpu
