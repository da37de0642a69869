// The arithmetic of every simulated cuDNN convolution algorithm: the direct convolution and
// its two adjoints on contiguous NCHW buffers (cudnn.cpp packs, converts and rounds around it).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cudnn_model.h"

namespace cudasim::cudnn {

namespace {

struct Range {
  int64_t lo, hi;
};

// The output positions o in [0, out) whose input position o * stride + off lies in [0, in).
Range valid(int64_t off, int64_t stride, int64_t in, int64_t out) {
  const int64_t lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  const int64_t hi = in - 1 - off < 0 ? 0 : std::min(out, (in - 1 - off) / stride + 1);
  return {lo, std::max(lo, hi)};
}

// The filter element that tap (r, s) multiplies.
int64_t tap(const Conv& g, int64_t r, int64_t s) { return g.flip ? (g.R - 1 - r) * g.S + (g.S - 1 - s) : r * g.S + s; }

}  // namespace

template <class T>
void forward(const Conv& g, const T* __restrict x, const T* __restrict w, T* __restrict y) {
  const int64_t Kg = g.K / g.G, plane = g.OH * g.OW;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k) {
      T* __restrict acc = y + (n * g.K + k) * plane;
      std::fill(acc, acc + plane, T(0));
      for (int64_t c = 0; c < g.Cg; ++c) {
        const T* __restrict xp = x + (n * g.C + (k / Kg) * g.Cg + c) * g.H * g.W;
        const T* wk = w + (k * g.Cg + c) * g.R * g.S;
        for (int64_t r = 0; r < g.R; ++r) {
          const int64_t offh = r * g.dh - g.ph;
          const Range rh = valid(offh, g.sh, g.H, g.OH);
          for (int64_t s = 0; s < g.S; ++s) {
            const int64_t offw = s * g.dw - g.pw;
            const Range rw = valid(offw, g.sw, g.W, g.OW);
            const T wv = wk[tap(g, r, s)];
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              const T* __restrict xr = xp + (oh * g.sh + offh) * g.W;
              T* __restrict ar = acc + oh * g.OW;
              if (g.sw == 1) {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * xr[ow + offw];
              } else {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * xr[ow * g.sw + offw];
              }
            }
          }
        }
      }
    }
}

// The adjoint of forward: each dy element scatters into the dx positions it was made from.
template <class T>
void backward_data(const Conv& g, const T* __restrict w, const T* __restrict dy, T* __restrict dx) {
  const int64_t Kg = g.K / g.G, plane = g.H * g.W;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t ci = 0; ci < g.C; ++ci) {
      T* __restrict acc = dx + (n * g.C + ci) * plane;
      std::fill(acc, acc + plane, T(0));
      const int64_t group = ci / g.Cg, c = ci % g.Cg;
      for (int64_t kk = 0; kk < Kg; ++kk) {
        const int64_t k = group * Kg + kk;
        const T* __restrict dyp = dy + (n * g.K + k) * g.OH * g.OW;
        const T* wk = w + (k * g.Cg + c) * g.R * g.S;
        for (int64_t r = 0; r < g.R; ++r) {
          const int64_t offh = r * g.dh - g.ph;
          const Range rh = valid(offh, g.sh, g.H, g.OH);
          for (int64_t s = 0; s < g.S; ++s) {
            const int64_t offw = s * g.dw - g.pw;
            const Range rw = valid(offw, g.sw, g.W, g.OW);
            const T wv = wk[tap(g, r, s)];
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              T* __restrict ar = acc + (oh * g.sh + offh) * g.W;
              const T* __restrict dyr = dyp + oh * g.OW;
              if (g.sw == 1) {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow + offw] += wv * dyr[ow];
              } else {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow * g.sw + offw] += wv * dyr[ow];
              }
            }
          }
        }
      }
    }
}

// dw(k, c, tap) = sum over n, oh, ow of dy * x. Partial sums per output column (a lane)
// keep the inner loop an element-wise multiply-add; the lanes are summed at the end.
template <class T>
void backward_filter(const Conv& g, const T* __restrict x, const T* __restrict dy, T* __restrict dw) {
  const int64_t Kg = g.K / g.G;
  thread_local std::vector<T> lanes;
  lanes.resize(static_cast<size_t>(g.OW));
  T* __restrict lane = lanes.data();
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t c = 0; c < g.Cg; ++c) {
      const int64_t ci = (k / Kg) * g.Cg + c;
      for (int64_t r = 0; r < g.R; ++r) {
        const int64_t offh = r * g.dh - g.ph;
        const Range rh = valid(offh, g.sh, g.H, g.OH);
        for (int64_t s = 0; s < g.S; ++s) {
          const int64_t offw = s * g.dw - g.pw;
          const Range rw = valid(offw, g.sw, g.W, g.OW);
          std::fill(lane, lane + g.OW, T(0));
          for (int64_t n = 0; n < g.N; ++n) {
            const T* __restrict xp = x + (n * g.C + ci) * g.H * g.W;
            const T* __restrict dyp = dy + (n * g.K + k) * g.OH * g.OW;
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              const T* __restrict xr = xp + (oh * g.sh + offh) * g.W;
              const T* __restrict dyr = dyp + oh * g.OW;
              if (g.sw == 1) {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) lane[ow] += dyr[ow] * xr[ow + offw];
              } else {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) lane[ow] += dyr[ow] * xr[ow * g.sw + offw];
              }
            }
          }
          T sum = 0;
          for (int64_t ow = rw.lo; ow < rw.hi; ++ow) sum += lane[ow];
          dw[(k * g.Cg + c) * g.R * g.S + tap(g, r, s)] = sum;
        }
      }
    }
}

template void forward<float>(const Conv&, const float*, const float*, float*);
template void forward<double>(const Conv&, const double*, const double*, double*);
template void backward_data<float>(const Conv&, const float*, const float*, float*);
template void backward_data<double>(const Conv&, const double*, const double*, double*);
template void backward_filter<float>(const Conv&, const float*, const float*, float*);
template void backward_filter<double>(const Conv&, const double*, const double*, double*);

}  // namespace cudasim::cudnn
