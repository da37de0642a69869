// 2-d pooling on the CPU, one (image, channel) plane per work item; accumulation in double
// for averages, the input type for max.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/convert.h"
#include "kernels/visit_floating.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"

namespace wick::cpu {

namespace {

// Plane geometry shared by every pooling kernel: planes = N * C.
struct Planes {
  int64_t count, H, W, Ho, Wo;
};
Planes planes_of(const Tensor& in, const Tensor& out) {
  return {in.size(0) * in.size(1), in.size(2), in.size(3), out.size(2), out.size(3)};
}

// Runs f(plane) over all planes in parallel; `work` is the cost of one plane in elements.
template <class F>
void for_each_plane(int64_t planes, int64_t work, F&& f) {
  parallel_for(0, planes, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(work, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i) f(i);
               });
}

// The clipped window [start, end) of output position o along one dim for an average pool,
// and the divisor count_include_pad asks for (the window clipped to the padded input).
struct AvgWindow {
  int64_t start, end, padded;
};
AvgWindow avg_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t size) {
  int64_t start = o * s - p;
  int64_t end = std::min(start + k, size + p);
  const int64_t padded = end - start;
  return {std::max<int64_t>(start, 0), std::min(end, size), padded};
}

// One plane of a max pool whose windows all lie inside the input. A value replaces the
// best so far when it is larger or NaN, unless the best is NaN already (the first NaN wins).
template <class T>
void max_pool_plane_inside(const T* xp, const Planes& P, const PoolParams& p, T* y, int64_t* idx) {
  const int64_t KH = p.kernel[0], KW = p.kernel[1], sh = p.stride[0], sw = p.stride[1];
  const int64_t dh = p.dilation[0], dw = p.dilation[1];
  for (int64_t oh = 0; oh < P.Ho; ++oh)
    for (int64_t ow = 0; ow < P.Wo; ++ow) {
      const int64_t first = oh * sh * P.W + ow * sw;
      T best = xp[first];
      int64_t best_i = first;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t i = first + kh * dh * P.W + kw * dw;
          const T v = xp[i];
          const bool take = !(v <= best) && best == best;  // selects, not branches: the data
          best = take ? v : best;                          // decides, so a branch would miss
          best_i = take ? i : best_i;                      // half of the time
        }
      y[oh * P.Wo + ow] = best;
      idx[oh * P.Wo + ow] = best_i;
    }
}

// The common 2x2 window with stride 2, written out so the compiler can vectorise it.
template <class T>
void max_pool_plane_2x2(const T* xp, const Planes& P, T* y, int64_t* idx) {
  const int64_t W = P.W, Ho = P.Ho, Wo = P.Wo;  // locals: idx could alias P for the compiler
  for (int64_t oh = 0; oh < Ho; ++oh) {
    const T* r0 = xp + 2 * oh * W;
    const T* r1 = r0 + W;
    T* yr = y + oh * Wo;
    int64_t* ir = idx + oh * Wo;
    for (int64_t ow = 0; ow < Wo; ++ow) {
      T best = r0[2 * ow];
      int64_t off = 0;
      auto consider = [&](T v, int64_t o) {
        const bool take = !(v <= best) && best == best;
        best = take ? v : best;
        off = take ? o : off;
      };
      consider(r0[2 * ow + 1], 1);
      consider(r1[2 * ow], W);
      consider(r1[2 * ow + 1], W + 1);
      yr[ow] = best;
      ir[ow] = 2 * oh * W + 2 * ow + off;
    }
  }
}

// out = max over the dilated window, indices = h * W + w of the first maximum (NaN wins).
void max_pool2d_forward(const Tensor& out, const Tensor& indices, const Tensor& in, const PoolParams& p) {
  if (out.numel() == 0) return;
  const Planes P = planes_of(in, out);
  visit_floating("max_pool2d", Device::cpu(), in.dtype(), [&]<class T>() {
    const T* x = static_cast<const T*>(in.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    int64_t* idx = static_cast<int64_t*>(indices.data_ptr());
    // Without padding, and with every window inside the input (no ceil_mode overhang), the
    // bounds checks go and values are compared as T: the same first maximum, NaN included.
    const bool inside = p.padding[0] == 0 && p.padding[1] == 0 &&
                        (P.Ho - 1) * p.stride[0] + (p.kernel[0] - 1) * p.dilation[0] < P.H &&
                        (P.Wo - 1) * p.stride[1] + (p.kernel[1] - 1) * p.dilation[1] < P.W;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (inside) {
        const bool two_by_two = p.kernel[0] == 2 && p.kernel[1] == 2 && p.stride[0] == 2 && p.stride[1] == 2 &&
                                p.dilation[0] == 1 && p.dilation[1] == 1;
        for_each_plane(P.count, P.Ho * P.Wo * p.kernel[0] * p.kernel[1], [&](int64_t pl) {
          const T* xp = x + pl * P.H * P.W;
          if (two_by_two) max_pool_plane_2x2(xp, P, y + pl * P.Ho * P.Wo, idx + pl * P.Ho * P.Wo);
          else max_pool_plane_inside(xp, P, p, y + pl * P.Ho * P.Wo, idx + pl * P.Ho * P.Wo);
        });
        return;
      }
    }
    for_each_plane(P.count, P.Ho * P.Wo * p.kernel[0] * p.kernel[1], [&](int64_t pl) {
      const T* xp = x + pl * P.H * P.W;
      for (int64_t oh = 0; oh < P.Ho; ++oh)
        for (int64_t ow = 0; ow < P.Wo; ++ow) {
          double best = -INFINITY;
          int64_t best_i = -1;
          for (int64_t kh = 0; kh < p.kernel[0]; ++kh) {
            const int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
            if (ih < 0 || ih >= P.H) continue;
            for (int64_t kw = 0; kw < p.kernel[1]; ++kw) {
              const int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
              if (iw < 0 || iw >= P.W) continue;
              const double v = convert<double>(xp[ih * P.W + iw]);
              const bool nan = std::isnan(v);
              if (best_i < 0 || (nan && !std::isnan(best)) || v > best) {
                best = v;
                best_i = ih * P.W + iw;
                if (nan) break;
              }
            }
            if (std::isnan(best)) break;
          }
          const int64_t o = (pl * P.Ho + oh) * P.Wo + ow;
          y[o] = best_i < 0 ? T(-INFINITY) : xp[best_i];
          idx[o] = best_i;
        }
    });
  });
}

// grad_in = 0, then grad_in[plane][indices] += grad_out (windows may overlap).
void max_pool2d_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices) {
  if (grad_in.numel() == 0) return;
  const Planes P = planes_of(grad_in, grad_out);
  visit_floating("max_pool2d_backward", Device::cpu(), grad_in.dtype(), [&]<class T>() {
    const T* gy = static_cast<const T*>(grad_out.data_ptr());
    const int64_t* idx = static_cast<const int64_t*>(indices.data_ptr());
    T* gx = static_cast<T*>(grad_in.data_ptr());
    for_each_plane(P.count, P.H * P.W + P.Ho * P.Wo, [&](int64_t pl) {
      T* gp = gx + pl * P.H * P.W;
      std::fill(gp, gp + P.H * P.W, T(0));
      for (int64_t o = pl * P.Ho * P.Wo; o < (pl + 1) * P.Ho * P.Wo; ++o)
        if (idx[o] >= 0) gp[idx[o]] = convert<T>(convert<double>(gp[idx[o]]) + convert<double>(gy[o]));
    });
  });
}

double avg_divisor(const AvgWindow& h, const AvgWindow& w, bool count_include_pad) {
  return count_include_pad ? static_cast<double>(h.padded * w.padded)
                           : static_cast<double>((h.end - h.start) * (w.end - w.start));
}

// out = sum of the window / divisor.
void avg_pool2d_forward(const Tensor& out, const Tensor& in, const PoolParams& p) {
  if (out.numel() == 0) return;
  const Planes P = planes_of(in, out);
  visit_floating("avg_pool2d", Device::cpu(), in.dtype(), [&]<class T>() {
    const T* x = static_cast<const T*>(in.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    for_each_plane(P.count, P.Ho * P.Wo * p.kernel[0] * p.kernel[1], [&](int64_t pl) {
      const T* xp = x + pl * P.H * P.W;
      for (int64_t oh = 0; oh < P.Ho; ++oh) {
        const AvgWindow h = avg_window(oh, p.kernel[0], p.stride[0], p.padding[0], P.H);
        for (int64_t ow = 0; ow < P.Wo; ++ow) {
          const AvgWindow w = avg_window(ow, p.kernel[1], p.stride[1], p.padding[1], P.W);
          double s = 0;
          for (int64_t ih = h.start; ih < h.end; ++ih)
            for (int64_t iw = w.start; iw < w.end; ++iw) s += convert<double>(xp[ih * P.W + iw]);
          y[(pl * P.Ho + oh) * P.Wo + ow] = convert<T>(s / avg_divisor(h, w, p.count_include_pad));
        }
      }
    });
  });
}

// grad_in = sum over the windows covering each pixel of grad_out / divisor (= after zeroing).
void avg_pool2d_backward(const Tensor& grad_in, const Tensor& grad_out, const PoolParams& p) {
  if (grad_in.numel() == 0) return;
  const Planes P = planes_of(grad_in, grad_out);
  visit_floating("avg_pool2d_backward", Device::cpu(), grad_in.dtype(), [&]<class T>() {
    const T* gy = static_cast<const T*>(grad_out.data_ptr());
    T* gx = static_cast<T*>(grad_in.data_ptr());
    for_each_plane(P.count, P.H * P.W + P.Ho * P.Wo * p.kernel[0] * p.kernel[1], [&](int64_t pl) {
      std::vector<double> acc(static_cast<size_t>(P.H * P.W), 0.0);
      for (int64_t oh = 0; oh < P.Ho; ++oh) {
        const AvgWindow h = avg_window(oh, p.kernel[0], p.stride[0], p.padding[0], P.H);
        for (int64_t ow = 0; ow < P.Wo; ++ow) {
          const AvgWindow w = avg_window(ow, p.kernel[1], p.stride[1], p.padding[1], P.W);
          const double g =
              convert<double>(gy[(pl * P.Ho + oh) * P.Wo + ow]) / avg_divisor(h, w, p.count_include_pad);
          for (int64_t ih = h.start; ih < h.end; ++ih)
            for (int64_t iw = w.start; iw < w.end; ++iw) acc[ih * P.W + iw] += g;
        }
      }
      T* gp = gx + pl * P.H * P.W;
      for (int64_t i = 0; i < P.H * P.W; ++i) gp[i] = convert<T>(acc[i]);
    });
  });
}

// Adaptive windows: cell o of `out_size` covers [floor(o * size / out), ceil((o + 1) * size / out)).
int64_t adaptive_start(int64_t o, int64_t size, int64_t out) { return o * size / out; }
int64_t adaptive_end(int64_t o, int64_t size, int64_t out) { return ((o + 1) * size + out - 1) / out; }

void adaptive_avg_pool2d_forward(const Tensor& out, const Tensor& in) {
  if (out.numel() == 0) return;
  const Planes P = planes_of(in, out);
  visit_floating("adaptive_avg_pool2d", Device::cpu(), in.dtype(), [&]<class T>() {
    const T* x = static_cast<const T*>(in.data_ptr());
    T* y = static_cast<T*>(out.data_ptr());
    for_each_plane(P.count, P.H * P.W, [&](int64_t pl) {
      const T* xp = x + pl * P.H * P.W;
      for (int64_t oh = 0; oh < P.Ho; ++oh) {
        const int64_t h0 = adaptive_start(oh, P.H, P.Ho), h1 = adaptive_end(oh, P.H, P.Ho);
        for (int64_t ow = 0; ow < P.Wo; ++ow) {
          const int64_t w0 = adaptive_start(ow, P.W, P.Wo), w1 = adaptive_end(ow, P.W, P.Wo);
          double s = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) s += convert<double>(xp[ih * P.W + iw]);
          y[(pl * P.Ho + oh) * P.Wo + ow] = convert<T>(s / static_cast<double>((h1 - h0) * (w1 - w0)));
        }
      }
    });
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_in, const Tensor& grad_out) {
  if (grad_in.numel() == 0) return;
  const Planes P = planes_of(grad_in, grad_out);
  visit_floating("adaptive_avg_pool2d_backward", Device::cpu(), grad_in.dtype(), [&]<class T>() {
    const T* gy = static_cast<const T*>(grad_out.data_ptr());
    T* gx = static_cast<T*>(grad_in.data_ptr());
    for_each_plane(P.count, P.H * P.W, [&](int64_t pl) {
      std::vector<double> acc(static_cast<size_t>(P.H * P.W), 0.0);
      for (int64_t oh = 0; oh < P.Ho; ++oh) {
        const int64_t h0 = adaptive_start(oh, P.H, P.Ho), h1 = adaptive_end(oh, P.H, P.Ho);
        for (int64_t ow = 0; ow < P.Wo; ++ow) {
          const int64_t w0 = adaptive_start(ow, P.W, P.Wo), w1 = adaptive_end(ow, P.W, P.Wo);
          const double g = convert<double>(gy[(pl * P.Ho + oh) * P.Wo + ow]) /
                           static_cast<double>((h1 - h0) * (w1 - w0));
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) acc[ih * P.W + iw] += g;
        }
      }
      T* gp = gx + pl * P.H * P.W;
      for (int64_t i = 0; i < P.H * P.W; ++i) gp[i] = convert<T>(acc[i]);
    });
  });
}

}  // namespace

void register_pool(KernelTable& t) {
  t.max_pool2d_forward = &max_pool2d_forward;
  t.max_pool2d_backward = &max_pool2d_backward;
  t.avg_pool2d_forward = &avg_pool2d_forward;
  t.avg_pool2d_backward = &avg_pool2d_backward;
  t.adaptive_avg_pool2d_forward = &adaptive_avg_pool2d_forward;
  t.adaptive_avg_pool2d_backward = &adaptive_avg_pool2d_backward;
}

}  // namespace wick::cpu
