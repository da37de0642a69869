// Batch and group normalisation on CUDA, forward and backward; the math is that of
// kernels/cpu/norm.cpp. x and dy are contiguous [N, C, S]; every kernel writes with `=`.
// Group norm: one block per (n, g) row (a single warp for short rows); batch norm and group
// norm's weight / bias gradients: one block per channel, each thread summing a strided share
// of the channel's N*S elements before the block reduction (two levels). Statistics
// accumulate in stats_t<T> (double for float64, float otherwise), two-pass.
// (Layer norm and RMS norm: layer_norm.cu.)
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <utility>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/norm_math.h"
#include "kernels/optional_data.h"
#include "kernels/visit_floating.h"
#include "kernels/cuda/norm_common.cuh"

namespace wick::cuda_kernels {

namespace {

using namespace norm_common;

constexpr int kMaxThreads = 256;

// One warp for rows up to 1024 elements, else a full block.
int threads_for(int64_t elements) { return elements <= 1024 ? kWarp : kMaxThreads; }

// Element e (0 <= e < N*S) of channel c in [N, C, S].
__device__ __forceinline__ int64_t channel_offset(int64_t e, int64_t c, int64_t C, int64_t S) {
  return ((e / S) * C + c) * S + e % S;
}

template <class T>
__device__ __forceinline__ stats_t<T> load(const T* p, int64_t i) {
  return static_cast<stats_t<T>>(static_cast<compute_t<T>>(p[i]));
}

// Batch norm forward, one block per channel (see the CPU kernel for the formulas).
template <class T>
__global__ void batch_norm_kernel(T* y, stats_t<T>* mean_out, stats_t<T>* invstd_out, const T* x, const T* w,
                                  const T* b, T* rm, T* rv, int64_t N, int64_t C, int64_t S, bool training,
                                  double momentum, double eps) {
  using A = stats_t<T>;
  __shared__ A smem[kMaxThreads / kWarp];
  const int64_t c = blockIdx.x, m = N * S;
  A mu, var;
  if (training) {
    A s = 0;
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) s += load(x, channel_offset(e, c, C, S));
    mu = block_allreduce(s, smem, Plus{}) / static_cast<A>(m);
    A q = 0;
    for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
      const A d = load(x, channel_offset(e, c, C, S)) - mu;
      q += d * d;
    }
    q = block_allreduce(q, smem, Plus{});
    var = q / static_cast<A>(m);
    if (threadIdx.x == 0) {
      if (rm) rm[c] = convert<T>(norm_math::blend(static_cast<double>(load(rm, c)), mu, momentum));
      if (rv)
        rv[c] = convert<T>(norm_math::blend(static_cast<double>(load(rv, c)),
                                            norm_math::unbiased_variance(static_cast<double>(q), m), momentum));
    }
  } else {
    mu = load(rm, c);
    var = load(rv, c);
  }
  const A inv = norm_math::inverse_std(var, eps);
  if (threadIdx.x == 0) {
    mean_out[c] = mu;
    invstd_out[c] = inv;
  }
  const norm_math::Affine<A> t = norm_math::affine(mu, inv, w ? load(w, c) : A(1), b ? load(b, c) : A(0));
  const A scale = t.scale, shift = t.shift;
  for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
    const int64_t i = channel_offset(e, c, C, S);
    y[i] = convert<T>(load(x, i) * scale + shift);
  }
}

// Batch norm backward, one block per channel.
template <class T>
__global__ void batch_norm_backward_kernel(T* dx, T* dw, T* db, const T* dy, const T* x, const T* w,
                                           const stats_t<T>* mean, const stats_t<T>* invstd, int64_t N, int64_t C,
                                           int64_t S, bool training) {
  using A = stats_t<T>;
  __shared__ Pair<A> smem[kMaxThreads / kWarp];
  const int64_t c = blockIdx.x, m = N * S;
  const A mu = mean[c], inv = invstd[c];
  Pair<A> s{0, 0};
  for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
    const int64_t i = channel_offset(e, c, C, S);
    const A g = load(dy, i);
    s.a += g;
    s.b += g * (load(x, i) - mu) * inv;
  }
  s = block_allreduce(s, smem, PairPlus{});
  if (threadIdx.x == 0) {
    if (db) db[c] = convert<T>(s.a);
    if (dw) dw[c] = convert<T>(s.b);
  }
  if (!dx) return;
  const auto grad = norm_math::batch_norm_input_grad(inv, w ? load(w, c) : A(1), s.a, s.b, static_cast<A>(m), training);
  for (int64_t e = threadIdx.x; e < m; e += blockDim.x) {
    const int64_t i = channel_offset(e, c, C, S);
    dx[i] = convert<T>(grad(load(dy, i), (load(x, i) - mu) * inv));
  }
}

// Group norm forward, one block per row r = (n, g) of D = cg * S elements.
template <class T>
__global__ void group_norm_kernel(T* y, stats_t<T>* mean_out, stats_t<T>* invstd_out, const T* x, const T* w,
                                  const T* b, int64_t G, int64_t cg, int64_t S, double eps) {
  using A = stats_t<T>;
  __shared__ A smem[kMaxThreads / kWarp];
  const int64_t r = blockIdx.x, D = cg * S, base = r * D, c_first = (r % G) * cg;
  A s = 0;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) s += load(x, base + i);
  const A mu = block_allreduce(s, smem, Plus{}) / static_cast<A>(D);
  A q = 0;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const A d = load(x, base + i) - mu;
    q += d * d;
  }
  const A inv = norm_math::inverse_std(block_allreduce(q, smem, Plus{}) / static_cast<A>(D), eps);
  if (threadIdx.x == 0) {
    mean_out[r] = mu;
    invstd_out[r] = inv;
  }
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const int64_t c = c_first + i / S;
    const A v = (load(x, base + i) - mu) * inv * (w ? load(w, c) : A(1)) + (b ? load(b, c) : A(0));
    y[base + i] = convert<T>(v);
  }
}

// Group norm input gradient, one block per row.
template <class T>
__global__ void group_norm_backward_kernel(T* dx, const T* dy, const T* x, const T* w, const stats_t<T>* mean,
                                           const stats_t<T>* invstd, int64_t G, int64_t cg, int64_t S) {
  using A = stats_t<T>;
  __shared__ Pair<A> smem[kMaxThreads / kWarp];
  const int64_t r = blockIdx.x, D = cg * S, base = r * D, c_first = (r % G) * cg;
  const A mu = mean[r], inv = invstd[r];
  Pair<A> s{0, 0};
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const A g = load(dy, base + i) * (w ? load(w, c_first + i / S) : A(1));
    s.a += g;
    s.b += g * (load(x, base + i) - mu) * inv;
  }
  s = block_allreduce(s, smem, PairPlus{});
  const A a = s.a / static_cast<A>(D), bq = s.b / static_cast<A>(D);
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const A g = load(dy, base + i) * (w ? load(w, c_first + i / S) : A(1));
    dx[base + i] = convert<T>(inv * (g - a - (load(x, base + i) - mu) * inv * bq));
  }
}

// Group norm weight / bias gradients, one block per channel over its N*S elements.
template <class T>
__global__ void group_norm_param_grad_kernel(T* dw, T* db, const T* dy, const T* x, const stats_t<T>* mean,
                                             const stats_t<T>* invstd, int64_t N, int64_t C, int64_t G, int64_t S) {
  using A = stats_t<T>;
  __shared__ Pair<A> smem[kMaxThreads / kWarp];
  const int64_t c = blockIdx.x, cg = C / G;
  Pair<A> s{0, 0};
  for (int64_t e = threadIdx.x; e < N * S; e += blockDim.x) {
    const int64_t n = e / S, i = channel_offset(e, c, C, S), r = n * G + c / cg;
    const A g = load(dy, i);
    s.a += g;
    s.b += g * (load(x, i) - mean[r]) * invstd[r];
  }
  s = block_allreduce(s, smem, PairPlus{});
  if (threadIdx.x == 0) {
    if (db) db[c] = convert<T>(s.a);
    if (dw) dw[c] = convert<T>(s.b);
  }
}

void batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& w,
                const Tensor& b, const Tensor& rm, const Tensor& rv, bool training, double momentum, double eps) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  check_grid("batch_norm", C);
  TensorDeviceGuard guard(x);
  visit_floating("batch_norm", x.device(), x.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    launch_kernel("batch_norm_kernel", &batch_norm_kernel<T>, static_cast<unsigned>(C), threads_for(N * S), 0,
                  stream_for(x), out.data<T>(), mean.data<A>(), invstd.data<A>(), optional_data<T>(x),
                  optional_data<T>(w), optional_data<T>(b), optional_mutable_data<T>(rm), optional_mutable_data<T>(rv),
                  N, C, S, training, momentum, eps);
    WICK_CUDA_CHECK_LAUNCH("batch_norm");
  });
}

void batch_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                         const Tensor& w, const Tensor& mean, const Tensor& invstd, bool training) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2);
  check_grid("batch_norm_backward", C);
  TensorDeviceGuard guard(x);
  visit_floating("batch_norm_backward", x.device(), x.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    launch_kernel("batch_norm_backward_kernel", &batch_norm_backward_kernel<T>, static_cast<unsigned>(C),
                  threads_for(N * S), 0, stream_for(x), optional_mutable_data<T>(dx), optional_mutable_data<T>(dw),
                  optional_mutable_data<T>(db), optional_data<T>(dy), optional_data<T>(x), optional_data<T>(w),
                  optional_data<A>(mean), optional_data<A>(invstd), N, C, S, training);
    WICK_CUDA_CHECK_LAUNCH("batch_norm_backward");
  });
}

void group_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& x, const Tensor& w,
                const Tensor& b, int64_t groups, double eps) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2), cg = C / groups;
  check_grid("group_norm", N * groups);
  TensorDeviceGuard guard(x);
  visit_floating("group_norm", x.device(), x.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    launch_kernel("group_norm_kernel", &group_norm_kernel<T>, static_cast<unsigned>(N * groups), threads_for(cg * S), 0,
                  stream_for(x), out.data<T>(), mean.data<A>(), invstd.data<A>(), optional_data<T>(x),
                  optional_data<T>(w), optional_data<T>(b), groups, cg, S, eps);
    WICK_CUDA_CHECK_LAUNCH("group_norm");
  });
}

void group_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& dy, const Tensor& x,
                         const Tensor& w, const Tensor& mean, const Tensor& invstd, int64_t groups) {
  const int64_t N = x.size(0), C = x.size(1), S = x.size(2), cg = C / groups;
  check_grid("group_norm_backward", std::max(N * groups, C));
  TensorDeviceGuard guard(x);
  const cudaStream_t stream = stream_for(x);
  visit_floating("group_norm_backward", x.device(), x.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    if (dx.defined())
      launch_kernel("group_norm_backward_kernel", &group_norm_backward_kernel<T>, static_cast<unsigned>(N * groups),
                    threads_for(cg * S), 0, stream, dx.data<T>(), optional_data<T>(dy), optional_data<T>(x),
                    optional_data<T>(w), optional_data<A>(mean), optional_data<A>(invstd), groups, cg, S);
    if (dw.defined() || db.defined())
      launch_kernel("group_norm_param_grad_kernel", &group_norm_param_grad_kernel<T>, static_cast<unsigned>(C),
                    threads_for(N * S), 0, stream, optional_mutable_data<T>(dw), optional_mutable_data<T>(db),
                    optional_data<T>(dy), optional_data<T>(x), optional_data<A>(mean), optional_data<A>(invstd), N, C,
                    groups, S);
    WICK_CUDA_CHECK_LAUNCH("group_norm_backward");
  });
}

}  // namespace

void register_norm(KernelTable& t) {
  t.batch_norm = &batch_norm;
  t.batch_norm_backward = &batch_norm_backward;
  t.group_norm = &group_norm;
  t.group_norm_backward = &group_norm_backward;
}

}  // namespace wick::cuda_kernels
