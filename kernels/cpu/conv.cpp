// 2-d convolution on the CPU: im2col + GEMM through Eigen, per (image, group).
//   forward:         out[n, g]   = W[g] @ col(in[n, g])                 (=)
//   backward input:  grad_in[n, g] = col2im(W[g]^T @ grad_out[n, g])    (= after zeroing)
//   backward weight: grad_W[g]  = sum_n grad_out[n, g] @ col(in[n, g])^T (=)
// col(x) is the [Ci/g * KH * KW, Ho * Wo] matrix whose column (oh, ow) holds the input
// patch under output pixel (oh, ow), zeros where the patch hangs over the padding.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/serial_gemm.h"

namespace wick::cpu {

namespace {

// The sizes of one convolution, read once from the tensors.
struct Geometry {
  int64_t N, C, H, W;      // input
  int64_t Co, KH, KW;      // weight
  int64_t Ho, Wo;          // output
  int64_t G, Cg, Cog;      // groups, input and output channels per group
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t rows() const { return Cg * KH * KW; }
  int64_t cols() const { return Ho * Wo; }
  // A 1x1 kernel with unit stride and no padding: col(x) is x itself.
  bool pointwise() const { return KH == 1 && KW == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

Geometry geometry(const Tensor& in, const Tensor& weight, const Tensor& out, const ConvParams& p) {
  Geometry g{};
  g.N = in.size(0), g.C = in.size(1), g.H = in.size(2), g.W = in.size(3);
  g.Co = weight.size(0), g.KH = weight.size(2), g.KW = weight.size(3);
  g.Ho = out.size(2), g.Wo = out.size(3);
  g.G = p.groups, g.Cg = g.C / p.groups, g.Cog = g.Co / p.groups;
  g.sh = p.stride[0], g.sw = p.stride[1], g.ph = p.padding[0], g.pw = p.padding[1];
  g.dh = p.dilation[0], g.dw = p.dilation[1];
  return g;
}

// The output columns [lo, hi) whose kernel column kw lands inside the input
// (iw = ow * sw - shift in [0, W)); the others read padding.
struct OwRange {
  int64_t lo, hi, shift;
};
OwRange ow_range(const Geometry& g, int64_t kw) {
  const int64_t shift = g.pw - kw * g.dw;  // iw >= 0  <=>  ow * sw >= shift
  int64_t lo = shift <= 0 ? 0 : (shift + g.sw - 1) / g.sw;
  int64_t hi = g.W + shift <= 0 ? 0 : (g.W + shift - 1) / g.sw + 1;  // iw < W  <=>  ow * sw < W + shift
  lo = std::min(lo, g.Wo);
  hi = std::clamp(hi, lo, g.Wo);
  return {lo, hi, shift};
}

// col = im2col(x) for one image's group of channels x [Cg, H, W].
template <class T>
void im2col(const Geometry& g, const T* x, T* col) {
  const int64_t cols = g.cols();
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        T* row = col + ((c * g.KH + kh) * g.KW + kw) * cols;
        const T* plane = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.Ho; ++oh) {
          T* dst = row + oh * g.Wo;
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih < 0 || ih >= g.H) {
            std::fill(dst, dst + g.Wo, T(0));
            continue;
          }
          const T* src = plane + ih * g.W;
          const OwRange r = ow_range(g, kw);
          std::fill(dst, dst + r.lo, T(0));
          if (g.sw == 1) {
            std::copy(src + (r.lo - r.shift), src + (r.hi - r.shift), dst + r.lo);
          } else {
            for (int64_t ow = r.lo; ow < r.hi; ++ow) dst[ow] = src[ow * g.sw - r.shift];
          }
          std::fill(dst + r.hi, dst + g.Wo, T(0));
        }
      }
}

// x [Cg, H, W] += col2im(col): each column entry is added back to the pixel it came from.
template <class T>
void col2im_add(const Geometry& g, const T* col, T* x) {
  const int64_t cols = g.cols();
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const T* row = col + ((c * g.KH + kh) * g.KW + kw) * cols;
        T* plane = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.Ho; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* src = row + oh * g.Wo;
          T* dst = plane + ih * g.W;
          const OwRange r = ow_range(g, kw);
          for (int64_t ow = r.lo; ow < r.hi; ++ow) dst[ow * g.sw - r.shift] += src[ow];
        }
      }
}

// Work items are (image, group) pairs, f(item, buffer) with one column buffer of `size`
// elements per thread; each thread takes whole items.
template <class T, class F>
void for_each_item(int64_t items, int64_t size, F&& f) {
  auto run = [&](int64_t b, int64_t e) {
    std::vector<T> buffer(static_cast<size_t>(size));
    for (int64_t i = b; i < e; ++i) f(i, buffer.data());
  };
  parallel_for(0, items, 1, run);
}

template <class T>
void forward_typed(const Tensor& out, const Tensor& in, const Tensor& weight, const ConvParams& p) {
  const Geometry g = geometry(in, weight, out, p);
  const T* x = static_cast<const T*>(in.data_ptr());
  const T* w = static_cast<const T*>(weight.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  const int64_t rows = g.rows(), cols = g.cols();
  for_each_item<T>(g.N * g.G, g.pointwise() ? 0 : rows * cols, [&](int64_t item, T* buffer) {
    const int64_t n = item / g.G, grp = item % g.G;
    const T* xg = x + (n * g.C + grp * g.Cg) * g.H * g.W;
    const T* col = xg;
    if (!g.pointwise()) {
      im2col(g, xg, buffer);
      col = buffer;
    }
    T* yg = y + (n * g.Co + grp * g.Cog) * cols;
    std::fill(yg, yg + g.Cog * cols, T(0));
    serial_gemm<T, kRowMajor, kRowMajor>(g.Cog, cols, rows, w + grp * g.Cog * rows, rows, col, cols, yg, cols, T(1));
  });
}

template <class T>
void backward_input_typed(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight, const ConvParams& p) {
  const Geometry g = geometry(grad_in, weight, grad_out, p);
  const T* gy = static_cast<const T*>(grad_out.data_ptr());
  const T* w = static_cast<const T*>(weight.data_ptr());
  T* gx = static_cast<T*>(grad_in.data_ptr());
  const int64_t rows = g.rows(), cols = g.cols();
  for_each_item<T>(g.N * g.G, g.pointwise() ? 0 : rows * cols, [&](int64_t item, T* buffer) {
    const int64_t n = item / g.G, grp = item % g.G;
    T* gxg = gx + (n * g.C + grp * g.Cg) * g.H * g.W;
    // Wg^T: the weights [Cog, rows] read column-major as [rows, Cog].
    const T* wg = w + grp * g.Cog * rows;
    const T* gyg = gy + (n * g.Co + grp * g.Cog) * cols;
    T* col = g.pointwise() ? gxg : buffer;
    std::fill(col, col + rows * cols, T(0));
    serial_gemm<T, kColMajor, kRowMajor>(rows, cols, g.Cog, wg, rows, gyg, cols, col, cols, T(1));
    if (g.pointwise()) return;
    std::fill(gxg, gxg + g.Cg * g.H * g.W, T(0));
    col2im_add(g, buffer, gxg);
  });
}

// The batch is cut into slices that threads take; each slice sums its images into its own
// copy of the weight gradient, and the copies are added at the end in slice order. The
// number of slices does not depend on the number of threads (it did: the gradient then
// changed with the thread count), only on the batch and on the memory the copies take.
template <class T>
void backward_weight_typed(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& in, const ConvParams& p) {
  const Geometry g = geometry(in, grad_weight, grad_out, p);
  const T* gy = static_cast<const T*>(grad_out.data_ptr());
  const T* x = static_cast<const T*>(in.data_ptr());
  T* gw = static_cast<T*>(grad_weight.data_ptr());
  const int64_t rows = g.rows(), cols = g.cols(), wsize = g.Co * rows;
  constexpr int64_t kMaxSlices = 16, kMaxCopyBytes = int64_t{64} << 20;
  const int64_t by_memory = std::max<int64_t>(1, kMaxCopyBytes / std::max<int64_t>(1, wsize * sizeof(T)));
  const int64_t slices = std::max<int64_t>(1, std::min({g.N, kMaxSlices, by_memory}));
  std::vector<T> partial(static_cast<size_t>((slices - 1) * wsize));
  auto run_slice = [&](int64_t s) {
    T* acc = s == 0 ? gw : partial.data() + (s - 1) * wsize;
    std::fill(acc, acc + wsize, T(0));
    std::vector<T> buffer(g.pointwise() ? 0 : static_cast<size_t>(rows * cols));
    const int64_t n0 = g.N * s / slices, n1 = g.N * (s + 1) / slices;
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        const T* xg = x + (n * g.C + grp * g.Cg) * g.H * g.W;
        const T* col = xg;
        if (!g.pointwise()) {
          im2col(g, xg, buffer.data());
          col = buffer.data();
        }
        // col^T: the columns [rows, cols] read column-major as [cols, rows].
        serial_gemm<T, kRowMajor, kColMajor>(g.Cog, rows, cols, gy + (n * g.Co + grp * g.Cog) * cols, cols, col, cols,
                                             acc + grp * g.Cog * rows, rows, T(1));
      }
  };
  if (slices == 1) {
    run_slice(0);
  } else {
    parallel_for(0, slices, 1, [&](int64_t b, int64_t e) {
      for (int64_t s = b; s < e; ++s) run_slice(s);
    });
    for (int64_t s = 1; s < slices; ++s) {
      const T* src = partial.data() + (s - 1) * wsize;
      for (int64_t i = 0; i < wsize; ++i) gw[i] += src[i];
    }
  }
}

// Float16 / bfloat16 run in float32: the tensors are widened, the result rounded once.
template <class F32, class F64>
void run_floating(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, F32&& f32, F64&& f64) {
  if (out.numel() == 0) return;
  switch (out.dtype()) {
    case DType::Float32: return f32(out, a, b);
    case DType::Float64: return f64(out, a, b);
    case DType::Float16:
    case DType::BFloat16: {
      Tensor out32 = empty(out.shape(), DType::Float32);
      f32(out32, a.to(DType::Float32), b.to(DType::Float32));
      Tensor(out).copy_(out32);
      return;
    }
    default: throw_unsupported_dtype(op, Device::cpu(), out.dtype());
  }
}

void conv2d_forward(const Tensor& out, const Tensor& in, const Tensor& weight, const ConvParams& p) {
  run_floating(
      "conv2d", out, in, weight, [&](const Tensor& o, const Tensor& i, const Tensor& w) { forward_typed<float>(o, i, w, p); },
      [&](const Tensor& o, const Tensor& i, const Tensor& w) { forward_typed<double>(o, i, w, p); });
}

void conv2d_backward_input(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight, const ConvParams& p) {
  run_floating(
      "conv2d_backward_input", grad_in, grad_out, weight,
      [&](const Tensor& gi, const Tensor& go, const Tensor& w) { backward_input_typed<float>(gi, go, w, p); },
      [&](const Tensor& gi, const Tensor& go, const Tensor& w) { backward_input_typed<double>(gi, go, w, p); });
}

void conv2d_backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& in, const ConvParams& p) {
  run_floating(
      "conv2d_backward_weight", grad_weight, grad_out, in,
      [&](const Tensor& gw, const Tensor& go, const Tensor& i) { backward_weight_typed<float>(gw, go, i, p); },
      [&](const Tensor& gw, const Tensor& go, const Tensor& i) { backward_weight_typed<double>(gw, go, i, p); });
}

}  // namespace

void register_conv(KernelTable& t) {
  t.conv2d_forward = &conv2d_forward;
  t.conv2d_backward_input = &conv2d_backward_input;
  t.conv2d_backward_weight = &conv2d_backward_weight;
}

}  // namespace wick::cpu
