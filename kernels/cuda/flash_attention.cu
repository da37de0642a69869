// Launches the tensor-core attention kernels of flash_attention.cuh (bfloat16, float16):
// operands read through their strides, more than 48 KiB of shared memory allowed once per
// device, the grid checked.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <atomic>
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/flash_attention.cuh"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/launch.cuh"

namespace wick::cuda_kernels {

namespace {

using namespace flash;

template <class T>
Heads<T> heads(const Tensor& t) {
  return {static_cast<T*>(t.data_ptr()), t.stride(0), t.stride(1), t.stride(2)};
}

Bias bias_of(const Tensor& t) {
  if (!t.defined()) return {nullptr, 0, 0, 0, 0};
  return {static_cast<const float*>(t.data_ptr()), t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// Allows a kernel more than 48 KiB of dynamic shared memory, once per device (the call
// costs host time).
template <auto kKernel>
void allow_shared(size_t bytes, int device) {
  constexpr int kMaxDevices = 64;
  static std::atomic<bool> done[kMaxDevices] = {};
  if (bytes <= 48 * 1024 || (device >= 0 && device < kMaxDevices && done[device].load(std::memory_order_relaxed)))
    return;
  WICK_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  if (device >= 0 && device < kMaxDevices) done[device].store(true, std::memory_order_relaxed);
}

dim3 grid_for(const char* op, int64_t pairs, int64_t rows) {
  const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
  WICK_CHECK(pairs < (int64_t{1} << 31) && blocks <= 65535, op, ": too many heads (", pairs, ") or rows (", rows,
             ") for one launch");
  return dim3(static_cast<unsigned>(pairs), static_cast<unsigned>(blocks));
}

// Calls f.template operator()<T, D>() for the tensor-core kernels' dtype and head dim.
template <class F>
void with_flash(const Tensor& q, F&& f) {
  const int64_t d = q.size(3);
  auto by_dim = [&]<class T>() {
    switch (d) {
      case 32: return f.template operator()<T, 32>();
      case 64: return f.template operator()<T, 64>();
      case 96: return f.template operator()<T, 96>();
      default: return f.template operator()<T, 128>();
    }
  };
  if (q.dtype() == DType::BFloat16) return by_dim.template operator()<BFloat16>();
  return by_dim.template operator()<Half>();
}

Sizes sizes_of(const Tensor& q, const Tensor& k, const AttentionParams& p) {
  return {q.size(1), k.size(1), q.size(2), k.size(2), static_cast<float>(p.scale), p.causal,
          attention_math::Dropout<float>::of(p)};
}

// Calls f.template operator()<kDropout>() for whether p drops weights: the kernels without
// dropout are compiled without its code (and registers).
template <class F>
void with_dropout(const AttentionParams& p, F&& f) {
  if (p.dropout > 0) return f.template operator()<true>();
  return f.template operator()<false>();
}

}  // namespace

// 16-byte copies need every row 16-byte aligned: the base and each stride in whole 8-element packs.
bool flash_rows_aligned(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0 && t.stride(3) == 1 && t.stride(0) % 8 == 0 &&
         t.stride(1) % 8 == 0 && t.stride(2) % 8 == 0;
}

bool flash_attention_supported(DType dtype, int64_t e, int64_t ev) {
  return (dtype == DType::BFloat16 || dtype == DType::Float16) && e == ev && (e == 32 || e == 64 || e == 96 || e == 128);
}

void flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& bias, const AttentionParams& p) {
  const Sizes sh = sizes_of(q, k, p);
  const int64_t b = q.size(0);
  with_flash(q, [&]<class T, int D>() {
    with_dropout(p, [&]<bool kDropout>() {
      constexpr auto kernel = &flash_forward_kernel<T, D, kDropout>;
      const size_t smem = forward_smem<D>(sizeof(T));
      allow_shared<kernel>(smem, q.device().index);
      launch_kernel("flash_forward_kernel", kernel, grid_for("attention_forward", b * sh.hq, sh.l), kThreads, smem,
                    stream_for(q), heads<T>(out), lse.data<float>(), heads<const T>(q), heads<const T>(k),
                    heads<const T>(v), bias_of(bias), sh);
    });
  });
  WICK_CUDA_CHECK_LAUNCH("attention_forward");
}

void flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                              const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lse,
                              const Tensor& delta, const Tensor& bias, const AttentionParams& p) {
  const Sizes sh = sizes_of(q, k, p);
  const int64_t b = q.size(0);
  const float* lp = static_cast<const float*>(lse.data_ptr());
  const float* dp = static_cast<const float*>(delta.data_ptr());
  with_flash(q, [&]<class T, int D>() {
    with_dropout(p, [&]<bool kDropout>() {
      if (dq.numel() > 0) {
        constexpr auto kernel = &flash_dq_kernel<T, D, kDropout>;
        const size_t smem = dq_smem<D>(sizeof(T));
        allow_shared<kernel>(smem, q.device().index);
        launch_kernel("flash_dq_kernel", kernel, grid_for("attention_backward", b * sh.hq, sh.l), kThreads, smem,
                      stream_for(q), heads<T>(dq), heads<const T>(dout), heads<const T>(q), heads<const T>(k),
                      heads<const T>(v), lp, dp, bias_of(bias), sh);
      }
      if (dk.numel() > 0) {
        constexpr auto kernel = &flash_dkdv_kernel<T, D, kDropout>;
        const size_t smem = dkdv_smem<D>(sizeof(T));
        allow_shared<kernel>(smem, q.device().index);
        launch_kernel("flash_dkdv_kernel", kernel, grid_for("attention_backward", b * sh.hk, sh.s), kThreads, smem,
                      stream_for(q), heads<T>(dk), heads<T>(dv), heads<const T>(dout), heads<const T>(q),
                      heads<const T>(k), heads<const T>(v), lp, dp, bias_of(bias), sh);
      }
    });
  });
  WICK_CUDA_CHECK_LAUNCH("attention_backward");
}

}  // namespace wick::cuda_kernels
