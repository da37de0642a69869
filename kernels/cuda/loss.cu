// Fused log-softmax + cross-entropy on CUDA, forward and backward; the math is that of
// kernels/cpu/loss.cpp. One block per position (n, s) (a single warp for up to 1024
// classes): a block reduction of the online (max, sum exp) state gives lse, a second one the
// loss sums; backward writes softmax - (smoothed, weighted) target in one pass. Outputs are
// written with `=`. Out-of-range class indices are recorded in a device flag that the host
// reads after the forward launch (which therefore synchronises with the stream) to throw the
// CPU kernel's error; backward skips them.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/optional_data.h"
#include "kernels/visit_floating.h"

namespace wick::cuda_kernels {

namespace {

constexpr int kMaxThreads = 256;

struct Plus {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};

struct LseMerge {
  template <class A>
  __device__ LseState<A> operator()(LseState<A> a, LseState<A> b) const {
    return lse_merge(a, b);
  }
};

int threads_for(int64_t classes) { return classes <= 1024 ? kWarp : kMaxThreads; }

template <class T>
__device__ __forceinline__ stats_t<T> load(const T* p, int64_t i) {
  return static_cast<stats_t<T>>(static_cast<compute_t<T>>(p[i]));
}

// The device record of a bad target: bad[0] != 0 once seen, bad[1] the value, bad[2] where.
__device__ void record_bad_target(unsigned long long* bad, int64_t t, int64_t i) {
  if (atomicCAS(bad, 0ull, 1ull) == 0ull) {
    bad[1] = static_cast<unsigned long long>(t);
    bad[2] = static_cast<unsigned long long>(i);
  }
}

// logits x [N, C, S]; target ti [N, S] (indices) or tq [N, C, S] (probabilities).
template <class T>
__global__ void cross_entropy_kernel(T* loss, stats_t<T>* lse_out, T* tw, const T* x, const int64_t* ti, const T* tq,
                                     const T* w, int64_t C, int64_t S, int64_t ignore_index, double eps,
                                     unsigned long long* bad) {
  using A = stats_t<T>;
  __shared__ LseState<A> lse_smem[kMaxThreads / kWarp];
  __shared__ A smem[kMaxThreads / kWarp];
  const int64_t i = blockIdx.x, n = i / S, s = i % S, base = n * C * S + s;
  LseState<A> st = lse_identity<A>();
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) st = lse_add(st, load(x, base + c * S));
  const A lse = lse_result(block_allreduce(st, lse_smem, LseMerge{}));
  const A smooth = static_cast<A>(eps / static_cast<double>(C)), keep = static_cast<A>(1 - eps);
  if (ti) {
    const int64_t t = ti[i];
    const bool ignored = t == ignore_index, valid = ignored || (t >= 0 && t < C);
    // t is the same in every thread, so the whole block takes this branch or none does.
    A smoothed = 0;
    if (!ignored && valid && eps != 0) {
      A sm = 0;
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
        sm += (w ? load(w, c) : A(1)) * (lse - load(x, base + c * S));
      smoothed = smooth * block_allreduce(sm, smem, Plus{});
    }
    if (threadIdx.x != 0) return;
    lse_out[i] = lse;
    if (!valid) record_bad_target(bad, t, i);
    if (ignored || !valid) {
      loss[i] = convert<T>(0.0);
      tw[i] = convert<T>(0.0);
      return;
    }
    const A wt = w ? load(w, t) : A(1);
    const A hard = keep * wt * (lse - load(x, base + t * S));
    loss[i] = convert<T>(hard + smoothed);
    tw[i] = convert<T>(wt);
    return;
  }
  A l = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    l += (w ? load(w, c) : A(1)) * (keep * load(tq, base + c * S) + smooth) * (lse - load(x, base + c * S));
  l = block_allreduce(l, smem, Plus{});
  if (threadIdx.x == 0) {
    lse_out[i] = lse;
    loss[i] = convert<T>(l);
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(T* dx, const T* grad, bool reduced, const T* x, const stats_t<T>* lse_in,
                                              const int64_t* ti, const T* tq, const T* w, int64_t C, int64_t S,
                                              int64_t ignore_index, double eps) {
  using A = stats_t<T>;
  __shared__ A smem[kMaxThreads / kWarp];
  const int64_t i = blockIdx.x, n = i / S, s = i % S, base = n * C * S + s;
  const A g = load(grad, reduced ? 0 : i), lse = lse_in[i];
  const A smooth = static_cast<A>(eps / static_cast<double>(C)), keep = static_cast<A>(1 - eps);
  auto wc = [&](int64_t c) { return w ? load(w, c) : A(1); };
  if (ti) {
    const int64_t t = ti[i];
    if (t == ignore_index || t < 0 || t >= C) {
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dx[base + c * S] = convert<T>(0.0);
      return;
    }
    A W = 0;
    if (eps != 0) {
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) W += wc(c);
      W = block_allreduce(W, smem, Plus{});
    }
    const A hard = keep * wc(t);
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
      const A p = exp(load(x, base + c * S) - lse);
      dx[base + c * S] = convert<T>(g * (hard * (p - (c == t ? A(1) : A(0))) + smooth * (W * p - wc(c))));
    }
    return;
  }
  A wq = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) wq += wc(c) * (keep * load(tq, base + c * S) + smooth);
  wq = block_allreduce(wq, smem, Plus{});
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const A p = exp(load(x, base + c * S) - lse);
    dx[base + c * S] = convert<T>(g * (p * wq - wc(c) * (keep * load(tq, base + c * S) + smooth)));
  }
}

void check_positions(const char* op, int64_t positions) {
  WICK_CHECK(positions < (int64_t{1} << 31), op, ": too many positions (", positions, ")");
}

void cross_entropy(const Tensor& loss, const Tensor& lse, const Tensor& tw, const Tensor& logits, const Tensor& target,
                   const Tensor& weight, int64_t ignore_index, double eps) {
  const int64_t N = logits.size(0), C = logits.size(1), S = logits.size(2);
  if (N * S == 0) return;
  check_positions("cross_entropy", N * S);
  TensorDeviceGuard guard(logits);
  const cudaStream_t stream = stream_for(logits);
  const bool by_index = target.dtype() == DType::Int64;
  Tensor bad = by_index ? empty({3}, Options(DType::Int64, logits.device())) : Tensor();
  if (by_index) WICK_CUDA_CHECK(cudaMemsetAsync(bad.data_ptr(), 0, 3 * sizeof(int64_t), stream));
  visit_floating("cross_entropy", logits.device(), logits.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    launch_kernel("cross_entropy_kernel", &cross_entropy_kernel<T>, static_cast<unsigned>(N * S), threads_for(C), 0, stream, 
        loss.data<T>(), lse.data<A>(), by_index ? tw.data<T>() : nullptr, optional_data<T>(logits),
        by_index ? optional_data<int64_t>(target) : nullptr, by_index ? nullptr : optional_data<T>(target),
        optional_data<T>(weight), C, S, ignore_index, eps,
        by_index ? static_cast<unsigned long long*>(bad.data_ptr()) : nullptr);
    WICK_CUDA_CHECK_LAUNCH("cross_entropy");
  });
  if (!by_index) return;
  int64_t host[3];
  WICK_CUDA_CHECK(cudaMemcpyAsync(host, bad.data_ptr(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  WICK_CUDA_CHECK(cudaStreamSynchronize(stream));
  WICK_CHECK(host[0] == 0, "cross_entropy: target ", host[1], " at position ", host[2], " is out of range for ", C,
             " classes (ignore_index is ", ignore_index, ")");
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& grad, const Tensor& logits, const Tensor& lse,
                            const Tensor& target, const Tensor& weight, int64_t ignore_index, double eps) {
  const int64_t N = logits.size(0), C = logits.size(1), S = logits.size(2);
  if (dlogits.numel() == 0) return;
  check_positions("cross_entropy_backward", N * S);
  TensorDeviceGuard guard(logits);
  const bool by_index = target.dtype() == DType::Int64;
  visit_floating("cross_entropy_backward", logits.device(), logits.dtype(), [&]<class T>() {
    using A = stats_t<T>;
    launch_kernel("cross_entropy_backward_kernel", &cross_entropy_backward_kernel<T>, static_cast<unsigned>(N * S), threads_for(C), 0, stream_for(logits), 
        dlogits.data<T>(), optional_data<T>(grad), grad.numel() == 1, optional_data<T>(logits), optional_data<A>(lse),
        by_index ? optional_data<int64_t>(target) : nullptr, by_index ? nullptr : optional_data<T>(target),
        optional_data<T>(weight), C, S,
        ignore_index, eps);
    WICK_CUDA_CHECK_LAUNCH("cross_entropy_backward");
  });
}

}  // namespace

void register_loss(KernelTable& t) {
  t.cross_entropy = &cross_entropy;
  t.cross_entropy_backward = &cross_entropy_backward;
}

}  // namespace wick::cuda_kernels
