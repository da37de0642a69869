// Fused log-softmax + cross-entropy on the CPU, forward and backward, over contiguous
// logits [N, C, S]: element i = (n, s) has its C classes at stride S. Each position is one
// pass for the max, one for sum exp (in double), one for the loss or the gradient; every
// output is written with `=`. With lse = log sum_c exp x_c, w the class weights (1 when
// absent), W = sum_c w_c and eps the label smoothing:
//   index target t:  loss = (1 - eps) w_t (lse - x_t) + eps / C * sum_c w_c (lse - x_c)
//                    dx_c = g ((1 - eps) w_t (p_c - [c == t]) + eps / C (W p_c - w_c))
//   probabilities q: loss = sum_c w_c q'_c (lse - x_c), q' = (1 - eps) q + eps / C
//                    dx_c = g (p_c sum_k w_k q'_k - w_c q'_c)
// with p = softmax(x) and g the incoming gradient of that position's loss. The forward can
// write the gradient too (g then a constant scale: kernels/cuda/loss.cu explains why), and
// cross_entropy_scale multiplies such a gradient by the incoming one afterwards.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/convert.h"
#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/optional_data.h"
#include "kernels/visit_floating.h"

namespace wick::cpu {

namespace {

struct CeShape {
  int64_t n, c, s;
};

// log sum_c exp x[c * stride], in double.
template <class T>
double log_sum_exp(const T* x, int64_t C, int64_t stride) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) m = std::max(m, convert<double>(x[c * stride]));
  if (std::isinf(m)) return m;
  double s = 0;
  for (int64_t c = 0; c < C; ++c) s += std::exp(convert<double>(x[c * stride]) - m);
  return m + std::log(s);
}

int64_t checked_target(const int64_t* target, int64_t i, int64_t C, int64_t ignore_index) {
  const int64_t t = target[i];
  WICK_CHECK(t == ignore_index || (t >= 0 && t < C), "cross_entropy: target ", t, " at position ", i,
             " is out of range for ", C, " classes (ignore_index is ", ignore_index, ")");
  return t;
}

// The gradient of one position's loss times g, written at dx[base + c * S] from logits x
// (same offsets); ti: its class index, or nullptr for probabilities tq. W = sum_c w_c.
template <class T>
struct PositionGradient {
  const T* x;
  const T* w;
  const T* tq;
  T* dx;
  int64_t C, S, ignore_index;
  double eps, W;

  double wc(int64_t c) const { return w ? convert<double>(w[c]) : 1.0; }

  void write(int64_t base, const int64_t* ti, int64_t i, double lse, double g) const {
    const double smooth = eps / static_cast<double>(C);
    if (ti) {
      const int64_t t = ti[i];
      if (t == ignore_index) {
        for (int64_t c = 0; c < C; ++c) dx[base + c * S] = convert<T>(0.0);
        return;
      }
      const double hard = (1 - eps) * wc(t);
      for (int64_t c = 0; c < C; ++c) {
        const double p = std::exp(convert<double>(x[base + c * S]) - lse);
        const double v = hard * (p - (c == t ? 1.0 : 0.0)) + smooth * (W * p - wc(c));
        dx[base + c * S] = convert<T>(g * v);
      }
      return;
    }
    double wq = 0;
    for (int64_t c = 0; c < C; ++c) wq += wc(c) * ((1 - eps) * convert<double>(tq[base + c * S]) + smooth);
    for (int64_t c = 0; c < C; ++c) {
      const double p = std::exp(convert<double>(x[base + c * S]) - lse);
      const double q = (1 - eps) * convert<double>(tq[base + c * S]) + smooth;
      dx[base + c * S] = convert<T>(g * (p * wq - wc(c) * q));
    }
  }
};

template <class T>
double class_weight_sum(const T* w, int64_t C) {
  double W = 0;
  for (int64_t c = 0; c < C; ++c) W += w ? convert<double>(w[c]) : 1.0;
  return W;
}

template <class T>
void cross_entropy_typed(const Tensor& loss_t, const Tensor& lse_t, const Tensor& tw_t, const Tensor& dlogits,
                         const Tensor& logits, const Tensor& target_t, const Tensor& weight_t, int64_t ignore_index,
                         double eps, const Tensor& total_weight, double scale) {
  using S = stats_t<T>;
  const CeShape d{logits.size(0), logits.size(1), logits.size(2)};
  const T* x = static_cast<const T*>(logits.data_ptr());
  const T* w = optional_data<T>(weight_t);
  T* loss = loss_t.data<T>();
  S* lse_out = lse_t.data<S>();
  const bool by_index = target_t.dtype() == DType::Int64;
  const int64_t* ti = by_index ? target_t.data<int64_t>() : nullptr;
  const T* tq = by_index ? nullptr : static_cast<const T*>(target_t.data_ptr());
  T* tw = by_index && tw_t.defined() ? tw_t.data<T>() : nullptr;
  const double smooth = eps / static_cast<double>(d.c);
  auto wc = [&](int64_t c) { return w ? convert<double>(w[c]) : 1.0; };
  // The gradient's scale: scale / total_weight (0 where that is 0).
  double g = scale;
  if (total_weight.defined()) {
    const double total = convert<double>(*static_cast<const T*>(total_weight.data_ptr()));
    g = total == 0 ? 0.0 : scale / total;
  }
  const PositionGradient<T> grad{
      x, w, tq, dlogits.defined() ? dlogits.data<T>() : nullptr, d.c, d.s, ignore_index, eps, class_weight_sum(w, d.c)};
  const int64_t passes = dlogits.defined() ? 6 : 4;
  parallel_for(0, d.n * d.s, std::max<int64_t>(1, kElementwiseGrain / (passes * d.c)), [&](int64_t b, int64_t e) {
    with_isa_clones<T>([&] {
      for (int64_t i = b; i < e; ++i) {
        const int64_t n = i / d.s, s = i % d.s, base = n * d.c * d.s + s;
        const T* xr = x + base;
        const double lse = log_sum_exp(xr, d.c, d.s);
        lse_out[i] = static_cast<S>(lse);
        double l = 0;
        if (by_index) {
          const int64_t t = checked_target(ti, i, d.c, ignore_index);
          if (t == ignore_index) {
            loss[i] = convert<T>(0.0);
            if (tw) tw[i] = convert<T>(0.0);
            if (grad.dx) grad.write(base, ti, i, lse, g);
            continue;
          }
          l = (1 - eps) * wc(t) * (lse - convert<double>(xr[t * d.s]));
          if (eps != 0) {
            double sm = 0;
            for (int64_t c = 0; c < d.c; ++c) sm += wc(c) * (lse - convert<double>(xr[c * d.s]));
            l += smooth * sm;
          }
          if (tw) tw[i] = convert<T>(wc(t));
        } else {
          const T* qr = tq + base;
          for (int64_t c = 0; c < d.c; ++c) {
            const double q = (1 - eps) * convert<double>(qr[c * d.s]) + smooth;
            l += wc(c) * q * (lse - convert<double>(xr[c * d.s]));
          }
        }
        loss[i] = convert<T>(l);
        if (grad.dx) grad.write(base, ti, i, lse, g);
      }
    });
  });
}

template <class T>
void cross_entropy_backward_typed(const Tensor& dlogits, const Tensor& grad_t, const Tensor& logits,
                                  const Tensor& lse_t, const Tensor& target_t, const Tensor& weight_t,
                                  int64_t ignore_index, double eps) {
  using S = stats_t<T>;
  const CeShape d{logits.size(0), logits.size(1), logits.size(2)};
  const T* w = optional_data<T>(weight_t);
  const T* grad = static_cast<const T*>(grad_t.data_ptr());
  const bool reduced = grad_t.numel() == 1;
  const S* lse_in = static_cast<const S*>(lse_t.data_ptr());
  const bool by_index = target_t.dtype() == DType::Int64;
  const int64_t* ti = by_index ? target_t.data<int64_t>() : nullptr;
  const PositionGradient<T> pg{static_cast<const T*>(logits.data_ptr()),
                               w,
                               by_index ? nullptr : static_cast<const T*>(target_t.data_ptr()),
                               dlogits.data<T>(),
                               d.c,
                               d.s,
                               ignore_index,
                               eps,
                               class_weight_sum(w, d.c)};
  parallel_for(0, d.n * d.s, std::max<int64_t>(1, kElementwiseGrain / (2 * d.c)), [&](int64_t b, int64_t e) {
    with_isa_clones<T>([&] {
      for (int64_t i = b; i < e; ++i) {
        const int64_t n = i / d.s, s = i % d.s, base = n * d.c * d.s + s;
        if (by_index) checked_target(ti, i, d.c, ignore_index);
        pg.write(base, ti, i, lse_in[i], convert<double>(grad[reduced ? 0 : i]));
      }
    });
  });
}

void cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& tw, const Tensor& dlogits, const Tensor& logits,
                   const Tensor& target, const Tensor& weight, int64_t ignore_index, double eps,
                   const Tensor& total_weight, double scale) {
  if (loss.numel() == 0) return;
  visit_floating("cross_entropy", Device::cpu(), logits.dtype(), [&]<class T>() {
    cross_entropy_typed<T>(loss, lse, tw, dlogits, logits, target, weight, ignore_index, eps, total_weight, scale);
  });
}

void cross_entropy_target_weight(const Tensor& tw_t, const Tensor& target_t, const Tensor& weight_t, int64_t classes,
                                 int64_t ignore_index) {
  const int64_t positions = tw_t.numel();
  if (positions == 0) return;
  visit_floating("cross_entropy", Device::cpu(), tw_t.dtype(), [&]<class T>() {
    const int64_t* t = target_t.data<int64_t>();
    const T* w = optional_data<T>(weight_t);
    T* tw = tw_t.data<T>();
    parallel_for(0, positions, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const bool kept = t[i] != ignore_index && t[i] >= 0 && t[i] < classes;
        tw[i] = kept ? (w ? w[t[i]] : convert<T>(1.0)) : convert<T>(0.0);
      }
    });
  });
}

void cross_entropy_scale(const Tensor& dlogits, const Tensor& grad_t) {
  if (dlogits.numel() == 0) return;
  const CeShape d{dlogits.size(0), dlogits.size(1), dlogits.size(2)};
  visit_floating("cross_entropy_backward", Device::cpu(), dlogits.dtype(), [&]<class T>() {
    T* dx = dlogits.data<T>();
    const T* grad = static_cast<const T*>(grad_t.data_ptr());
    const bool reduced = grad_t.numel() == 1;
    parallel_for(0, d.n * d.s, std::max<int64_t>(1, kElementwiseGrain / d.c), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const double g = convert<double>(grad[reduced ? 0 : i]);
        if (g == 1) continue;
        const int64_t base = (i / d.s) * d.c * d.s + i % d.s;
        for (int64_t c = 0; c < d.c; ++c) dx[base + c * d.s] = convert<T>(g * convert<double>(dx[base + c * d.s]));
      }
    });
  });
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& grad, const Tensor& logits, const Tensor& lse,
                            const Tensor& target, const Tensor& weight, int64_t ignore_index, double eps) {
  if (dlogits.numel() == 0) return;
  visit_floating("cross_entropy_backward", Device::cpu(), logits.dtype(), [&]<class T>() {
    cross_entropy_backward_typed<T>(dlogits, grad, logits, lse, target, weight, ignore_index, eps);
  });
}

}  // namespace

void register_loss(KernelTable& t) {
  t.cross_entropy = &cross_entropy;
  t.cross_entropy_target_weight = &cross_entropy_target_weight;
  t.cross_entropy_scale = &cross_entropy_scale;
  t.cross_entropy_backward = &cross_entropy_backward;
}

}  // namespace wick::cpu
