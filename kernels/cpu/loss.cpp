// Fused log-softmax + cross-entropy on the CPU, forward and backward, over contiguous
// logits [N, C, S]: element i = (n, s) has its C classes at stride S. Each position is one
// pass for the max, one for sum exp (in double), one for the loss or the gradient; every
// output is written with `=`. With lse = log sum_c exp x_c, w the class weights (1 when
// absent), W = sum_c w_c and eps the label smoothing:
//   index target t:  loss = (1 - eps) w_t (lse - x_t) + eps / C * sum_c w_c (lse - x_c)
//                    dx_c = g ((1 - eps) w_t (p_c - [c == t]) + eps / C (W p_c - w_c))
//   probabilities q: loss = sum_c w_c q'_c (lse - x_c), q' = (1 - eps) q + eps / C
//                    dx_c = g (p_c sum_k w_k q'_k - w_c q'_c)
// with p = softmax(x) and g the incoming gradient of that position's loss.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/convert.h"
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

template <class T>
void cross_entropy_typed(const Tensor& loss_t, const Tensor& lse_t, const Tensor& tw_t, const Tensor& logits,
                         const Tensor& target_t, const Tensor& weight_t, int64_t ignore_index, double eps) {
  using S = stats_t<T>;
  const CeShape d{logits.size(0), logits.size(1), logits.size(2)};
  const T* x = static_cast<const T*>(logits.data_ptr());
  const T* w = optional_data<T>(weight_t);
  T* loss = loss_t.data<T>();
  S* lse_out = lse_t.data<S>();
  const bool by_index = target_t.dtype() == DType::Int64;
  const int64_t* ti = by_index ? target_t.data<int64_t>() : nullptr;
  const T* tq = by_index ? nullptr : static_cast<const T*>(target_t.data_ptr());
  T* tw = by_index ? tw_t.data<T>() : nullptr;
  const double smooth = eps / static_cast<double>(d.c);
  auto wc = [&](int64_t c) { return w ? convert<double>(w[c]) : 1.0; };
  parallel_for(0, d.n * d.s, std::max<int64_t>(1, kElementwiseGrain / (4 * d.c)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = i / d.s, s = i % d.s;
      const T* xr = x + n * d.c * d.s + s;
      const double lse = log_sum_exp(xr, d.c, d.s);
      lse_out[i] = static_cast<S>(lse);
      double l = 0;
      if (by_index) {
        const int64_t t = checked_target(ti, i, d.c, ignore_index);
        if (t == ignore_index) {
          loss[i] = convert<T>(0.0);
          tw[i] = convert<T>(0.0);
          continue;
        }
        l = (1 - eps) * wc(t) * (lse - convert<double>(xr[t * d.s]));
        if (eps != 0) {
          double sm = 0;
          for (int64_t c = 0; c < d.c; ++c) sm += wc(c) * (lse - convert<double>(xr[c * d.s]));
          l += smooth * sm;
        }
        tw[i] = convert<T>(wc(t));
      } else {
        const T* qr = tq + n * d.c * d.s + s;
        for (int64_t c = 0; c < d.c; ++c) {
          const double q = (1 - eps) * convert<double>(qr[c * d.s]) + smooth;
          l += wc(c) * q * (lse - convert<double>(xr[c * d.s]));
        }
      }
      loss[i] = convert<T>(l);
    }
  });
}

template <class T>
void cross_entropy_backward_typed(const Tensor& dlogits, const Tensor& grad_t, const Tensor& logits,
                                  const Tensor& lse_t, const Tensor& target_t, const Tensor& weight_t,
                                  int64_t ignore_index, double eps) {
  using S = stats_t<T>;
  const CeShape d{logits.size(0), logits.size(1), logits.size(2)};
  const T* x = static_cast<const T*>(logits.data_ptr());
  const T* w = optional_data<T>(weight_t);
  const T* grad = static_cast<const T*>(grad_t.data_ptr());
  const bool reduced = grad_t.numel() == 1;
  const S* lse_in = static_cast<const S*>(lse_t.data_ptr());
  T* dx = dlogits.data<T>();
  const bool by_index = target_t.dtype() == DType::Int64;
  const int64_t* ti = by_index ? target_t.data<int64_t>() : nullptr;
  const T* tq = by_index ? nullptr : static_cast<const T*>(target_t.data_ptr());
  const double smooth = eps / static_cast<double>(d.c);
  auto wc = [&](int64_t c) { return w ? convert<double>(w[c]) : 1.0; };
  double W = 0;
  for (int64_t c = 0; c < d.c; ++c) W += wc(c);
  parallel_for(0, d.n * d.s, std::max<int64_t>(1, kElementwiseGrain / (2 * d.c)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = i / d.s, s = i % d.s, base = n * d.c * d.s + s;
      const double g = convert<double>(grad[reduced ? 0 : i]);
      const double lse = lse_in[i];
      if (by_index) {
        const int64_t t = checked_target(ti, i, d.c, ignore_index);
        if (t == ignore_index) {
          for (int64_t c = 0; c < d.c; ++c) dx[base + c * d.s] = convert<T>(0.0);
          continue;
        }
        const double hard = (1 - eps) * wc(t);
        for (int64_t c = 0; c < d.c; ++c) {
          const double p = std::exp(convert<double>(x[base + c * d.s]) - lse);
          const double v = hard * (p - (c == t ? 1.0 : 0.0)) + smooth * (W * p - wc(c));
          dx[base + c * d.s] = convert<T>(g * v);
        }
      } else {
        double wq = 0;
        for (int64_t c = 0; c < d.c; ++c) wq += wc(c) * ((1 - eps) * convert<double>(tq[base + c * d.s]) + smooth);
        for (int64_t c = 0; c < d.c; ++c) {
          const double p = std::exp(convert<double>(x[base + c * d.s]) - lse);
          const double q = (1 - eps) * convert<double>(tq[base + c * d.s]) + smooth;
          dx[base + c * d.s] = convert<T>(g * (p * wq - wc(c) * q));
        }
      }
    }
  });
}

void cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& tw, const Tensor& logits,
                   const Tensor& target, const Tensor& weight, int64_t ignore_index, double eps) {
  if (loss.numel() == 0) return;
  visit_floating("cross_entropy", Device::cpu(), logits.dtype(), [&]<class T>() {
    cross_entropy_typed<T>(loss, lse, tw, logits, target, weight, ignore_index, eps);
  });
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& grad, const Tensor& logits,
                            const Tensor& lse, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                            double eps) {
  if (dlogits.numel() == 0) return;
  visit_floating("cross_entropy_backward", Device::cpu(), logits.dtype(), [&]<class T>() {
    cross_entropy_backward_typed<T>(dlogits, grad, logits, lse, target, weight, ignore_index, eps);
  });
}

}  // namespace

void register_loss(KernelTable& t) {
  t.cross_entropy = &cross_entropy;
  t.cross_entropy_backward = &cross_entropy_backward;
}

}  // namespace wick::cpu
