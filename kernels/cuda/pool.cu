// 2-d pooling on CUDA (NCHW, contiguous). Forward kernels: one thread per output element
// over its window (=). The average-pooling backward kernels: one thread per input element
// gathering from the outputs whose windows hold it (=), so no atomics and deterministic sums.
// The max-pooling backward kernel scatters instead (one thread per output, atomicAdd into the
// input element its index names), because the kernel slot gets the indices but not the
// window geometry a gather would need: where windows overlap (stride < kernel) an input
// element that is the maximum of several windows receives their gradients in an unspecified
// order, so float sums may differ in the last bits from run to run; without overlap each
// element receives at most one gradient and the result is deterministic. Accumulation in
// float (double for float64).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <type_traits>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/visit_floating.h"

namespace wick::cuda_kernels {

namespace {

template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Plane sizes and the window; planes = N * C.
struct PoolGeom {
  int64_t H, W, Ho, Wo;
  int kh, kw, sh, sw, ph, pw, dh, dw;
  bool count_include_pad;
};

PoolGeom geom(const Tensor& in, const Tensor& out, const PoolParams& p) {
  return {in.size(2), in.size(3), out.size(2), out.size(3),
          static_cast<int>(p.kernel[0]), static_cast<int>(p.kernel[1]), static_cast<int>(p.stride[0]),
          static_cast<int>(p.stride[1]), static_cast<int>(p.padding[0]), static_cast<int>(p.padding[1]),
          static_cast<int>(p.dilation[0]), static_cast<int>(p.dilation[1]), p.count_include_pad};
}

#define WICK_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// y = max over the dilated window (NaN wins, the first maximum's index h * W + w is kept).
template <class T>
__global__ void max_pool_forward_kernel(const T* x, T* y, int64_t* idx, int64_t total, PoolGeom g) {
  WICK_GRID_LOOP(o, total) {
    const int64_t ow = o % g.Wo, oh = (o / g.Wo) % g.Ho, plane = o / (g.Wo * g.Ho);
    const T* xp = x + plane * g.H * g.W;
    acc_t<T> best = 0;
    int64_t best_i = -1;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
        if (iw < 0 || iw >= g.W) continue;
        const acc_t<T> v = convert<acc_t<T>>(xp[ih * g.W + iw]);
        if (best_i < 0 || (v != v && best == best) || v > best) {
          best = v;
          best_i = ih * g.W + iw;
        }
      }
    }
    y[o] = best_i < 0 ? convert<T>(-INFINITY) : xp[best_i];
    idx[o] = best_i;
  }
}

// dx[plane][idx[o]] += dy[o], one thread per output (dx zeroed first; atomics, as windows
// may overlap).
template <class T>
__global__ void max_pool_backward_kernel(const T* gy, const int64_t* idx, T* gx, int64_t total, int64_t out_plane,
                                         int64_t in_plane) {
  WICK_GRID_LOOP(o, total) {
    if (idx[o] >= 0) atomicAdd(gx + (o / out_plane) * in_plane + idx[o], gy[o]);
  }
}

// The clipped window [start, end) along one dim and the divisor's factor for that dim.
struct Span {
  int64_t start, end, padded;
};
__device__ Span avg_span(int64_t o, int k, int s, int p, int64_t size) {
  const int64_t start = o * s - p;
  const int64_t end = min(start + k, size + p);
  return {max(start, int64_t{0}), min(end, size), end - start};
}
__device__ int64_t avg_divisor(const Span& h, const Span& w, bool count_include_pad) {
  return count_include_pad ? h.padded * w.padded : (h.end - h.start) * (w.end - w.start);
}

template <class T>
__global__ void avg_pool_forward_kernel(const T* x, T* y, int64_t total, PoolGeom g) {
  WICK_GRID_LOOP(o, total) {
    const int64_t ow = o % g.Wo, oh = (o / g.Wo) % g.Ho, plane = o / (g.Wo * g.Ho);
    const Span h = avg_span(oh, g.kh, g.sh, g.ph, g.H), w = avg_span(ow, g.kw, g.sw, g.pw, g.W);
    const T* xp = x + plane * g.H * g.W;
    acc_t<T> s = 0;
    for (int64_t ih = h.start; ih < h.end; ++ih)
      for (int64_t iw = w.start; iw < w.end; ++iw) s += convert<acc_t<T>>(xp[ih * g.W + iw]);
    y[o] = convert<T>(s / static_cast<acc_t<T>>(avg_divisor(h, w, g.count_include_pad)));
  }
}

// dx[i] = sum over the windows holding i of dy / divisor.
template <class T>
__global__ void avg_pool_backward_kernel(const T* gy, T* gx, int64_t total, PoolGeom g) {
  WICK_GRID_LOOP(i, total) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, plane = i / (g.W * g.H);
    acc_t<T> s = 0;
    for (int kh = 0; kh < g.kh; ++kh) {
      const int64_t th = ih + g.ph - kh;
      if (th < 0 || th % g.sh != 0 || th / g.sh >= g.Ho) continue;
      const int64_t oh = th / g.sh;
      const Span h = avg_span(oh, g.kh, g.sh, g.ph, g.H);
      for (int kw = 0; kw < g.kw; ++kw) {
        const int64_t tw = iw + g.pw - kw;
        if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.Wo) continue;
        const int64_t ow = tw / g.sw;
        const Span w = avg_span(ow, g.kw, g.sw, g.pw, g.W);
        s += convert<acc_t<T>>(gy[(plane * g.Ho + oh) * g.Wo + ow]) /
             static_cast<acc_t<T>>(avg_divisor(h, w, g.count_include_pad));
      }
    }
    gx[i] = convert<T>(s);
  }
}

// Adaptive cells: cell o of n over size covers [floor(o * size / n), ceil((o + 1) * size / n)).
__device__ int64_t cell_start(int64_t o, int64_t size, int64_t n) { return o * size / n; }
__device__ int64_t cell_end(int64_t o, int64_t size, int64_t n) { return ((o + 1) * size + n - 1) / n; }

template <class T>
__global__ void adaptive_forward_kernel(const T* x, T* y, int64_t total, PoolGeom g) {
  WICK_GRID_LOOP(o, total) {
    const int64_t ow = o % g.Wo, oh = (o / g.Wo) % g.Ho, plane = o / (g.Wo * g.Ho);
    const int64_t h0 = cell_start(oh, g.H, g.Ho), h1 = cell_end(oh, g.H, g.Ho);
    const int64_t w0 = cell_start(ow, g.W, g.Wo), w1 = cell_end(ow, g.W, g.Wo);
    const T* xp = x + plane * g.H * g.W;
    acc_t<T> s = 0;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) s += convert<acc_t<T>>(xp[ih * g.W + iw]);
    y[o] = convert<T>(s / static_cast<acc_t<T>>((h1 - h0) * (w1 - w0)));
  }
}

// The cells holding row i are those in [floor(i n / size), ceil((i + 1) n / size)).
template <class T>
__global__ void adaptive_backward_kernel(const T* gy, T* gx, int64_t total, PoolGeom g) {
  WICK_GRID_LOOP(i, total) {
    const int64_t iw = i % g.W, ih = (i / g.W) % g.H, plane = i / (g.W * g.H);
    acc_t<T> s = 0;
    for (int64_t oh = ih * g.Ho / g.H; oh < ((ih + 1) * g.Ho + g.H - 1) / g.H; ++oh) {
      const int64_t h0 = cell_start(oh, g.H, g.Ho), h1 = cell_end(oh, g.H, g.Ho);
      if (ih < h0 || ih >= h1) continue;
      for (int64_t ow = iw * g.Wo / g.W; ow < ((iw + 1) * g.Wo + g.W - 1) / g.W; ++ow) {
        const int64_t w0 = cell_start(ow, g.W, g.Wo), w1 = cell_end(ow, g.W, g.Wo);
        if (iw < w0 || iw >= w1) continue;
        s += convert<acc_t<T>>(gy[(plane * g.Ho + oh) * g.Wo + ow]) / static_cast<acc_t<T>>((h1 - h0) * (w1 - w0));
      }
    }
    gx[i] = convert<T>(s);
  }
}

#undef WICK_GRID_LOOP

// Launches `launch(T*)` for out's floating dtype on out's device and current stream.
template <class F>
void launch_floating(const char* op, const Tensor& out, F&& launch) {
  if (out.numel() == 0) return;
  TensorDeviceGuard guard(out);
  visit_floating(op, out.device(), out.dtype(), [&]<class T>() {
    launch.template operator()<T>(blocks_for(out.numel()), stream_for(out));
  });
  WICK_CUDA_CHECK_LAUNCH(op);
}

template <class T>
const T* in_ptr(const Tensor& t) {
  return static_cast<const T*>(t.data_ptr());
}
template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

void max_pool2d_forward(const Tensor& out, const Tensor& indices, const Tensor& in, const PoolParams& p) {
  const PoolGeom g = geom(in, out, p);
  launch_floating("max_pool2d", out, [&]<class T>(unsigned blocks, cudaStream_t s) {
    launch_kernel("max_pool_forward_kernel", &max_pool_forward_kernel<T>, blocks, 256, 0, s, in_ptr<T>(in), out_ptr<T>(out), out_ptr<int64_t>(indices),
                                                      out.numel(), g);
  });
}

// 16-bit gradients are summed in a float32 buffer (atomics on float), then rounded once.
void max_pool2d_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& indices) {
  if (grad_in.numel() == 0) return;
  TensorDeviceGuard guard(grad_in);
  const bool wide = grad_in.dtype() == DType::Float32 || grad_in.dtype() == DType::Float64;
  Tensor acc = wide ? grad_in : empty(grad_in.shape(), Options(DType::Float32, grad_in.device()));
  Tensor gy = wide ? grad_out : grad_out.to(DType::Float32);
  acc.zero_();
  const int64_t total = gy.numel(), out_plane = gy.size(2) * gy.size(3), in_plane = acc.size(2) * acc.size(3);
  if (total > 0) {
    visit_floating("max_pool2d_backward", acc.device(), acc.dtype(), [&]<class T>() {
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        launch_kernel("max_pool_backward_kernel", &max_pool_backward_kernel<T>, blocks_for(total), 256, 0, stream_for(acc), 
            in_ptr<T>(gy), in_ptr<int64_t>(indices), out_ptr<T>(acc), total, out_plane, in_plane);
      }
    });
    WICK_CUDA_CHECK_LAUNCH("max_pool2d_backward");
  }
  if (!wide) Tensor(grad_in).copy_(acc);
}

void avg_pool2d_forward(const Tensor& out, const Tensor& in, const PoolParams& p) {
  const PoolGeom g = geom(in, out, p);
  launch_floating("avg_pool2d", out, [&]<class T>(unsigned blocks, cudaStream_t s) {
    launch_kernel("avg_pool_forward_kernel", &avg_pool_forward_kernel<T>, blocks, 256, 0, s, in_ptr<T>(in), out_ptr<T>(out), out.numel(), g);
  });
}

void avg_pool2d_backward(const Tensor& grad_in, const Tensor& grad_out, const PoolParams& p) {
  const PoolGeom g = geom(grad_in, grad_out, p);
  launch_floating("avg_pool2d_backward", grad_in, [&]<class T>(unsigned blocks, cudaStream_t s) {
    launch_kernel("avg_pool_backward_kernel", &avg_pool_backward_kernel<T>, blocks, 256, 0, s, in_ptr<T>(grad_out), out_ptr<T>(grad_in), grad_in.numel(), g);
  });
}

void adaptive_avg_pool2d_forward(const Tensor& out, const Tensor& in) {
  const PoolGeom g = geom(in, out, PoolParams());
  launch_floating("adaptive_avg_pool2d", out, [&]<class T>(unsigned blocks, cudaStream_t s) {
    launch_kernel("adaptive_forward_kernel", &adaptive_forward_kernel<T>, blocks, 256, 0, s, in_ptr<T>(in), out_ptr<T>(out), out.numel(), g);
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_in, const Tensor& grad_out) {
  const PoolGeom g = geom(grad_in, grad_out, PoolParams());
  launch_floating("adaptive_avg_pool2d_backward", grad_in, [&]<class T>(unsigned blocks, cudaStream_t s) {
    launch_kernel("adaptive_backward_kernel", &adaptive_backward_kernel<T>, blocks, 256, 0, s, in_ptr<T>(grad_out), out_ptr<T>(grad_in), grad_in.numel(), g);
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

}  // namespace wick::cuda_kernels
