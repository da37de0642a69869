// Batch, group, layer and RMS normalisation on the CPU, forward and backward. x and dy are
// contiguous [N, C, S] ([M, D] for layer and RMS norm); every kernel writes its outputs with
// `=`. Statistics are accumulated in double with two passes (mean, then centred squares), so
// large offsets cost no precision.
// Batch norm runs one task per channel, group norm one task per (n, g) row, layer norm one
// per row.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/convert.h"
#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/norm_math.h"
#include "kernels/optional_data.h"
#include "kernels/visit_floating.h"

namespace wick::cpu {

namespace {

struct Dims3 {
  int64_t n, c, s;
};
Dims3 dims3(const Tensor& x) { return {x.size(0), x.size(1), x.size(2)}; }

// Elements per task below which threads are not worth starting.
int64_t grain_for(int64_t work_per_task) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, work_per_task));
}

// Sums of f(i) (and of g(i)) over i in [0, n) in double, kept in 8 partial sums each so
// the additions do not wait for one another: a single running sum is bound by the latency
// of an add, which made batch norm an eighth of the MNIST CNN's training step.
template <class F>
double lane_sum(int64_t n, F&& f) {
  double acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += f(i + k);
  for (int k = 0; i < n; ++i, ++k) acc[k] += f(i);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
template <class F, class G>
std::pair<double, double> lane_sums(int64_t n, F&& f, G&& g) {
  double a[8] = {}, b[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) a[k] += f(i + k), b[k] += g(i + k);
  for (int k = 0; i < n; ++i, ++k) a[k] += f(i), b[k] += g(i);
  return {((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])),
          ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))};
}

// Batch norm forward, per channel c over m = N*S elements:
//   training: mean = sum x / m, var = sum (x - mean)^2 / m, running stats blended with the
//   unbiased var * m / (m - 1); eval: mean, var from the running stats.
//   out = (x - mean) * invstd * w + b, invstd = 1 / sqrt(var + eps).
template <class T>
void batch_norm_typed(const Tensor& out, const Tensor& mean_t, const Tensor& invstd_t, const Tensor& x_t,
                      const Tensor& w_t, const Tensor& b_t, const Tensor& rm_t, const Tensor& rv_t, bool training,
                      double momentum, double eps) {
  using S = stats_t<T>;
  const Dims3 dims = dims3(x_t);  // not a structured binding: clang before 16 cannot capture those
  const int64_t N = dims.n, C = dims.c, Sz = dims.s;
  const T* x = static_cast<const T*>(x_t.data_ptr());
  const T* w = optional_data<T>(w_t);
  const T* b = optional_data<T>(b_t);
  T* rm = optional_mutable_data<T>(rm_t);
  T* rv = optional_mutable_data<T>(rv_t);
  T* y = out.data<T>();
  S* mean_out = mean_t.data<S>();
  S* invstd_out = invstd_t.data<S>();
  const int64_t m = N * Sz;
  parallel_for(0, C, grain_for(m), [&](int64_t c0, int64_t c1) {
    with_isa_clones<T>([&] {
      for (int64_t c = c0; c < c1; ++c) {
        double mu, var;
        if (training) {
          double s = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* xr = x + (n * C + c) * Sz;
            s += lane_sum(Sz, [&](int64_t i) { return convert<double>(xr[i]); });
          }
          mu = m > 0 ? s / static_cast<double>(m) : 0.0;
          double q = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* xr = x + (n * C + c) * Sz;
            q += lane_sum(Sz, [&](int64_t i) {
              const double d = convert<double>(xr[i]) - mu;
              return d * d;
            });
          }
          var = m > 0 ? q / static_cast<double>(m) : 0.0;
          if (rm) rm[c] = convert<T>(norm_math::blend(convert<double>(rm[c]), mu, momentum));
          if (rv)
            rv[c] = convert<T>(norm_math::blend(convert<double>(rv[c]), norm_math::unbiased_variance(q, m), momentum));
        } else {
          mu = convert<double>(rm[c]);
          var = convert<double>(rv[c]);
        }
        const double inv = norm_math::inverse_std(var, eps);
        mean_out[c] = static_cast<S>(mu);
        invstd_out[c] = static_cast<S>(inv);
        const auto [scale, shift] =
            norm_math::affine(mu, inv, w ? convert<double>(w[c]) : 1.0, b ? convert<double>(b[c]) : 0.0);
        for (int64_t n = 0; n < N; ++n) {
          const T* xr = x + (n * C + c) * Sz;
          T* yr = y + (n * C + c) * Sz;
          for (int64_t i = 0; i < Sz; ++i) yr[i] = convert<T>(convert<double>(xr[i]) * scale + shift);
        }
      }
    });
  });
}

// Batch norm backward, per channel with xhat = (x - mean) * invstd over m = N*S elements:
//   dbias = sum dy, dweight = sum dy * xhat,
//   dx = w * invstd * (dy - dbias / m - xhat * dweight / m) in training, w * invstd * dy in eval.
template <class T>
void batch_norm_backward_typed(const Tensor& dx_t, const Tensor& dw_t, const Tensor& db_t, const Tensor& dy_t,
                               const Tensor& x_t, const Tensor& w_t, const Tensor& mean_t, const Tensor& invstd_t,
                               bool training) {
  using S = stats_t<T>;
  const Dims3 dims = dims3(x_t);  // not a structured binding: clang before 16 cannot capture those
  const int64_t N = dims.n, C = dims.c, Sz = dims.s;
  const T* x = static_cast<const T*>(x_t.data_ptr());
  const T* dy = static_cast<const T*>(dy_t.data_ptr());
  const T* w = optional_data<T>(w_t);
  const S* mean = static_cast<const S*>(mean_t.data_ptr());
  const S* invstd = static_cast<const S*>(invstd_t.data_ptr());
  T* dx = optional_mutable_data<T>(dx_t);
  T* dw = optional_mutable_data<T>(dw_t);
  T* db = optional_mutable_data<T>(db_t);
  const double m = static_cast<double>(N * Sz);
  parallel_for(0, C, grain_for(N * Sz), [&](int64_t c0, int64_t c1) {
    with_isa_clones<T>([&] {
      for (int64_t c = c0; c < c1; ++c) {
        const double mu = mean[c], inv = invstd[c];
        double sdy = 0, sdyx = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* dyr = dy + (n * C + c) * Sz;
          const T* xr = x + (n * C + c) * Sz;
          auto [a, b] = lane_sums(
              Sz, [&](int64_t i) { return convert<double>(dyr[i]); },
              [&](int64_t i) { return convert<double>(dyr[i]) * (convert<double>(xr[i]) - mu) * inv; });
          sdy += a;
          sdyx += b;
        }
        if (db) db[c] = convert<T>(sdy);
        if (dw) dw[c] = convert<T>(sdyx);
        if (!dx) continue;
        const auto grad =
            norm_math::batch_norm_input_grad(inv, w ? convert<double>(w[c]) : 1.0, sdy, sdyx, m, training);
        for (int64_t n = 0; n < N; ++n) {
          const int64_t base = (n * C + c) * Sz;
          for (int64_t i = 0; i < Sz; ++i)
            dx[base + i] = convert<T>(grad(convert<double>(dy[base + i]), (convert<double>(x[base + i]) - mu) * inv));
        }
      }
    });
  });
}

// Group norm forward, per row r = (n, g) of D = C/G * S contiguous elements:
//   mean = sum x / D, var = sum (x - mean)^2 / D, out = (x - mean) * invstd * w[c] + b[c].
// LayerNorm is the case S = 1, G = 1 (a row is the normalised dims).
template <class T>
void group_norm_typed(const Tensor& out, const Tensor& mean_t, const Tensor& invstd_t, const Tensor& x_t,
                      const Tensor& w_t, const Tensor& b_t, int64_t G, double eps) {
  using S = stats_t<T>;
  const Dims3 dims = dims3(x_t);  // not a structured binding: clang before 16 cannot capture those
  const int64_t N = dims.n, C = dims.c, Sz = dims.s;
  const int64_t cg = C / G, D = cg * Sz;
  const T* x = static_cast<const T*>(x_t.data_ptr());
  const T* w = optional_data<T>(w_t);
  const T* b = optional_data<T>(b_t);
  T* y = out.data<T>();
  S* mean_out = mean_t.data<S>();
  S* invstd_out = invstd_t.data<S>();
  parallel_for(0, N * G, grain_for(D), [&](int64_t r0, int64_t r1) {
    with_isa_clones<T>([&] {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * D;
        T* yr = y + r * D;
        const double mu =
            D > 0 ? lane_sum(D, [&](int64_t i) { return convert<double>(xr[i]); }) / static_cast<double>(D) : 0.0;
        const double q = lane_sum(D, [&](int64_t i) {
          const double d = convert<double>(xr[i]) - mu;
          return d * d;
        });
        const double inv = norm_math::inverse_std(D > 0 ? q / static_cast<double>(D) : 0.0, eps);
        mean_out[r] = static_cast<S>(mu);
        invstd_out[r] = static_cast<S>(inv);
        const int64_t c_first = (r % G) * cg;
        const auto scale_of = [&](int64_t c) { return inv * (w ? convert<double>(w[c]) : 1.0); };
        const auto shift_of = [&](int64_t c, double scale) { return (b ? convert<double>(b[c]) : 0.0) - mu * scale; };
        if (Sz == 1) {  // LayerNorm: one flat loop over the row (the same arithmetic, vectorised)
          for (int64_t c = 0; c < cg; ++c) {
            const double scale = scale_of(c_first + c);
            yr[c] = convert<T>(convert<double>(xr[c]) * scale + shift_of(c_first + c, scale));
          }
          continue;
        }
        for (int64_t j = 0; j < cg; ++j) {
          const int64_t c = c_first + j;
          const double scale = scale_of(c), shift = shift_of(c, scale);
          const T* xc = xr + j * Sz;
          T* yc = yr + j * Sz;
          for (int64_t i = 0; i < Sz; ++i) yc[i] = convert<T>(convert<double>(xc[i]) * scale + shift);
        }
      }
    });
  });
}

// Group norm backward. Per row, with gw = dy * w[c] and xhat = (x - mean) * invstd:
//   dx = invstd * (gw - sum(gw) / D - xhat * sum(gw * xhat) / D).
// Per channel c over n and s: dweight = sum dy * xhat, dbias = sum dy: partial sums over
// blocks of rows (samples), all channels of a chunk at once so rows are read in order, then
// the blocks' sums in order. Block and chunk sizes depend on the shape only, so the bits do
// not depend on the number of threads; at most kNormMaxRowBlocks blocks bound the partials.
constexpr int64_t kNormRowBlock = 32, kNormMaxRowBlocks = 256, kNormChannelChunk = 64;

template <class T>
void group_norm_backward_typed(const Tensor& dx_t, const Tensor& dw_t, const Tensor& db_t, const Tensor& dy_t,
                               const Tensor& x_t, const Tensor& w_t, const Tensor& mean_t, const Tensor& invstd_t,
                               int64_t G) {
  using S = stats_t<T>;
  const Dims3 dims = dims3(x_t);  // not a structured binding: clang before 16 cannot capture those
  const int64_t N = dims.n, C = dims.c, Sz = dims.s;
  const int64_t cg = C / G, D = cg * Sz;
  const T* x = static_cast<const T*>(x_t.data_ptr());
  const T* dy = static_cast<const T*>(dy_t.data_ptr());
  const T* w = optional_data<T>(w_t);
  const S* mean = static_cast<const S*>(mean_t.data_ptr());
  const S* invstd = static_cast<const S*>(invstd_t.data_ptr());
  T* dw = optional_mutable_data<T>(dw_t);
  T* db = optional_mutable_data<T>(db_t);
  if (dx_t.defined()) {
    T* dx = dx_t.data<T>();
    parallel_for(0, N * G, grain_for(D), [&](int64_t r0, int64_t r1) {
      with_isa_clones<T>([&] {
        const size_t stored = Sz == 1 ? 0 : static_cast<size_t>(D);
        std::vector<double> g(stored), xhat(stored);
        for (int64_t r = r0; r < r1; ++r) {
          const double mu = mean[r], inv = invstd[r];
          const int64_t c_first = (r % G) * cg, base = r * D;
          if (Sz == 1) {  // LayerNorm: g and xhat computed where used, not stored (the same values)
            const T* dyr = dy + base;
            const T* xr = x + base;
            const T* wr = w ? w + c_first : nullptr;
            const auto g_at = [&](int64_t i) { return convert<double>(dyr[i]) * (wr ? convert<double>(wr[i]) : 1.0); };
            const auto xhat_at = [&](int64_t i) { return (convert<double>(xr[i]) - mu) * inv; };
            const auto [sg, sgx] = lane_sums(D, g_at, [&](int64_t i) { return g_at(i) * xhat_at(i); });
            const double a = sg / static_cast<double>(D), bq = sgx / static_cast<double>(D);
            for (int64_t i = 0; i < D; ++i) dx[base + i] = convert<T>(inv * (g_at(i) - a - xhat_at(i) * bq));
            continue;
          }
          for (int64_t i = 0; i < D; ++i) xhat[static_cast<size_t>(i)] = (convert<double>(x[base + i]) - mu) * inv;
          for (int64_t j = 0; j < cg; ++j) {
            const double wc = w ? convert<double>(w[c_first + j]) : 1.0;
            for (int64_t i = j * Sz; i < (j + 1) * Sz; ++i)
              g[static_cast<size_t>(i)] = convert<double>(dy[base + i]) * wc;
          }
          const auto [sg, sgx] = lane_sums(
              D, [&](int64_t i) { return g[static_cast<size_t>(i)]; },
              [&](int64_t i) { return g[static_cast<size_t>(i)] * xhat[static_cast<size_t>(i)]; });
          const double a = sg / static_cast<double>(D), bq = sgx / static_cast<double>(D);
          for (int64_t i = 0; i < D; ++i)
            dx[base + i] = convert<T>(inv * (g[static_cast<size_t>(i)] - a - xhat[static_cast<size_t>(i)] * bq));
        }
      });
    });
  }
  if (!dw && !db) return;
  const int64_t rows_per_block = std::max(kNormRowBlock, (N + kNormMaxRowBlocks - 1) / kNormMaxRowBlocks);
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  const int64_t chunks = (C + kNormChannelChunk - 1) / kNormChannelChunk;
  std::vector<double> part(static_cast<size_t>(blocks * 2 * C), 0.0);  // [block][sum dy | sum dy xhat][C]
  parallel_for(0, blocks * chunks, 1, [&](int64_t t0, int64_t t1) {
    with_isa_clones<T>([&] {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t k = t / chunks, c0 = t % chunks * kNormChannelChunk, c1 = std::min(C, c0 + kNormChannelChunk);
        double* sdy = part.data() + k * 2 * C;
        double* sdyx = sdy + C;
        for (int64_t n = k * rows_per_block; n < std::min(N, (k + 1) * rows_per_block); ++n) {
          if (Sz == 1 && G == 1) {  // LayerNorm: the row's channels in one flat loop (same sums)
            const double mu = mean[n], inv = invstd[n];
            const T* dyn = dy + n * C;
            const T* xn = x + n * C;
            for (int64_t c = c0; c < c1; ++c) {
              const double g = convert<double>(dyn[c]);
              sdy[c] += g;
              sdyx[c] += g * (convert<double>(xn[c]) - mu) * inv;
            }
            continue;
          }
          for (int64_t gi = c0 / cg; gi * cg < c1; ++gi) {
            const double mu = mean[n * G + gi], inv = invstd[n * G + gi];
            for (int64_t c = std::max(c0, gi * cg); c < std::min(c1, (gi + 1) * cg); ++c) {
              const int64_t base = (n * C + c) * Sz;
              double a = 0, bq = 0;
              for (int64_t i = 0; i < Sz; ++i) {
                const double g = convert<double>(dy[base + i]);
                a += g;
                bq += g * (convert<double>(x[base + i]) - mu) * inv;
              }
              sdy[c] += a;
              sdyx[c] += bq;
            }
          }
        }
      }
    });
  });
  for (int64_t c = 0; c < C; ++c) {
    double sdy = 0, sdyx = 0;
    for (int64_t k = 0; k < blocks; ++k) {
      sdy += part[static_cast<size_t>(k * 2 * C + c)];
      sdyx += part[static_cast<size_t>(k * 2 * C + C + c)];
    }
    if (db) db[c] = convert<T>(sdy);
    if (dw) dw[c] = convert<T>(sdyx);
  }
}

// Layer norm and RMS norm over the rows of x [M, D]: group norm's arithmetic with G = 1 and
// S = 1 (the same sums in the same order, so layer norm's bits are those group norm gave it):
//   mean = sum x / D, var = sum (x - mean)^2 / D, out = x * scale + (b - mean * scale) with
//   scale = invstd * w; rms takes mean = 0 (var is then the mean square) and has no bias.
template <class T>
void layer_norm_typed(const Tensor& out, const Tensor& mean_t, const Tensor& invstd_t, const Tensor& x_t,
                      const Tensor& w_t, const Tensor& b_t, bool rms, double eps) {
  using S = stats_t<T>;
  const int64_t M = x_t.size(0), D = x_t.size(1);
  const T* x = static_cast<const T*>(x_t.data_ptr());
  const T* w = optional_data<T>(w_t);
  const T* b = optional_data<T>(b_t);
  T* y = out.data<T>();
  S* mean_out = optional_mutable_data<S>(mean_t);
  S* invstd_out = invstd_t.data<S>();
  parallel_for(0, M, grain_for(D), [&](int64_t r0, int64_t r1) {
    with_isa_clones<T>([&] {
      for (int64_t r = r0; r < r1; ++r) {
        const T* xr = x + r * D;
        T* yr = y + r * D;
        const double mu = rms || D == 0
                              ? 0.0
                              : lane_sum(D, [&](int64_t i) { return convert<double>(xr[i]); }) / static_cast<double>(D);
        const double q = lane_sum(D, [&](int64_t i) {
          const double d = convert<double>(xr[i]) - mu;
          return d * d;
        });
        const double inv = norm_math::inverse_std(D > 0 ? q / static_cast<double>(D) : 0.0, eps);
        if (mean_out) mean_out[r] = static_cast<S>(mu);
        invstd_out[r] = static_cast<S>(inv);
        for (int64_t c = 0; c < D; ++c) {
          const double scale = inv * (w ? convert<double>(w[c]) : 1.0);
          yr[c] = convert<T>(convert<double>(xr[c]) * scale + ((b ? convert<double>(b[c]) : 0.0) - mu * scale));
        }
      }
    });
  });
}

// Per row, with g = dy * w and xhat = (x - mean) * invstd:
//   dx = invstd * (g - sum(g) / D - xhat * sum(g xhat) / D)   (rms: mean = 0, no sum(g) term);
// dweight = sum dy * xhat, dbias = sum dy over the rows: partial sums per block of rows (all
// columns of a chunk at once), then the blocks' sums in order, as group norm's.
template <class T>
void layer_norm_backward_typed(const Tensor& dx_t, const Tensor& dw_t, const Tensor& db_t, const Tensor& dy_t,
                               const Tensor& x_t, const Tensor& w_t, const Tensor& mean_t, const Tensor& invstd_t,
                               bool rms) {
  using S = stats_t<T>;
  const int64_t M = x_t.size(0), D = x_t.size(1);
  const T* x = static_cast<const T*>(x_t.data_ptr());
  const T* dy = static_cast<const T*>(dy_t.data_ptr());
  const T* w = optional_data<T>(w_t);
  const S* mean = rms ? nullptr : static_cast<const S*>(mean_t.data_ptr());
  const S* invstd = static_cast<const S*>(invstd_t.data_ptr());
  T* dw = optional_mutable_data<T>(dw_t);
  T* db = optional_mutable_data<T>(db_t);
  const auto mean_of = [&](int64_t r) { return mean ? static_cast<double>(mean[r]) : 0.0; };
  if (dx_t.defined()) {
    T* dx = dx_t.data<T>();
    parallel_for(0, M, grain_for(D), [&](int64_t r0, int64_t r1) {
      with_isa_clones<T>([&] {
        for (int64_t r = r0; r < r1; ++r) {
          const double mu = mean_of(r), inv = invstd[r];
          const T* dyr = dy + r * D;
          const T* xr = x + r * D;
          T* dxr = dx + r * D;
          const auto g_at = [&](int64_t i) { return convert<double>(dyr[i]) * (w ? convert<double>(w[i]) : 1.0); };
          const auto xhat_at = [&](int64_t i) { return (convert<double>(xr[i]) - mu) * inv; };
          const auto [sg, sgx] = lane_sums(D, g_at, [&](int64_t i) { return g_at(i) * xhat_at(i); });
          const double a = rms ? 0.0 : sg / static_cast<double>(D), bq = sgx / static_cast<double>(D);
          for (int64_t i = 0; i < D; ++i) dxr[i] = convert<T>(inv * (g_at(i) - a - xhat_at(i) * bq));
        }
      });
    });
  }
  if (!dw && !db) return;
  const int64_t rows_per_block = std::max(kNormRowBlock, (M + kNormMaxRowBlocks - 1) / kNormMaxRowBlocks);
  const int64_t blocks = (M + rows_per_block - 1) / rows_per_block;
  const int64_t chunks = (D + kNormChannelChunk - 1) / kNormChannelChunk;
  std::vector<double> part(static_cast<size_t>(blocks * 2 * D), 0.0);  // [block][sum dy | sum dy xhat][D]
  parallel_for(0, blocks * chunks, 1, [&](int64_t t0, int64_t t1) {
    with_isa_clones<T>([&] {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t k = t / chunks, c0 = t % chunks * kNormChannelChunk, c1 = std::min(D, c0 + kNormChannelChunk);
        double* sdy = part.data() + k * 2 * D;
        double* sdyx = sdy + D;
        for (int64_t n = k * rows_per_block; n < std::min(M, (k + 1) * rows_per_block); ++n) {
          const double mu = mean_of(n), inv = invstd[n];
          const T* dyn = dy + n * D;
          const T* xn = x + n * D;
          for (int64_t c = c0; c < c1; ++c) {
            const double g = convert<double>(dyn[c]);
            sdy[c] += g;
            sdyx[c] += g * (convert<double>(xn[c]) - mu) * inv;
          }
        }
      }
    });
  });
  for (int64_t c = 0; c < D; ++c) {
    double sdy = 0, sdyx = 0;
    for (int64_t k = 0; k < blocks; ++k) {
      sdy += part[static_cast<size_t>(k * 2 * D + c)];
      sdyx += part[static_cast<size_t>(k * 2 * D + D + c)];
    }
    if (db) db[c] = convert<T>(sdy);
    if (dw) dw[c] = convert<T>(sdyx);
  }
}

void batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& w,
                const Tensor& b, const Tensor& rm, const Tensor& rv, bool training, double momentum, double eps) {
  visit_floating("batch_norm", Device::cpu(), x.dtype(),
                 [&]<class T>() { batch_norm_typed<T>(out, mean, invstd, x, w, b, rm, rv, training, momentum, eps); });
}

void batch_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                         const Tensor& w, const Tensor& mean, const Tensor& invstd, bool training) {
  visit_floating("batch_norm_backward", Device::cpu(), x.dtype(),
                 [&]<class T>() { batch_norm_backward_typed<T>(dx, dw, db, dy, x, w, mean, invstd, training); });
}

void group_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& w,
                const Tensor& b, int64_t groups, double eps) {
  visit_floating("group_norm", Device::cpu(), x.dtype(),
                 [&]<class T>() { group_norm_typed<T>(out, mean, invstd, x, w, b, groups, eps); });
}

void group_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                         const Tensor& w, const Tensor& mean, const Tensor& invstd, int64_t groups) {
  visit_floating("group_norm_backward", Device::cpu(), x.dtype(),
                 [&]<class T>() { group_norm_backward_typed<T>(dx, dw, db, dy, x, w, mean, invstd, groups); });
}

void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& w,
                const Tensor& b, bool rms, double eps) {
  visit_floating(rms ? "rms_norm" : "layer_norm", Device::cpu(), x.dtype(),
                 [&]<class T>() { layer_norm_typed<T>(out, mean, invstd, x, w, b, rms, eps); });
}

void layer_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                         const Tensor& w, const Tensor& mean, const Tensor& invstd, bool rms) {
  visit_floating(rms ? "rms_norm_backward" : "layer_norm_backward", Device::cpu(), x.dtype(),
                 [&]<class T>() { layer_norm_backward_typed<T>(dx, dw, db, dy, x, w, mean, invstd, rms); });
}

}  // namespace

void register_norm(KernelTable& t) {
  t.batch_norm = &batch_norm;
  t.batch_norm_backward = &batch_norm_backward;
  t.group_norm = &group_norm;
  t.group_norm_backward = &group_norm_backward;
  t.layer_norm = &layer_norm;
  t.layer_norm_backward = &layer_norm_backward;
}

}  // namespace wick::cpu
