// Multi-tensor optimizer steps and GradScaler's unscale on CUDA, in place; the updates are kernels/optim_math.h's
// (shared with the CPU). The tensors of each dtype are stepped by ONE launch: a table of
// (pointers, numel) per tensor and (tensor, start) per chunk of kChunk elements is copied to
// the device, and block b updates chunk b. Math in compute_t (float for 16-bit types).
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/optim_math.h"
#include "kernels/visit_floating.h"

namespace wick::cuda_kernels {

namespace {

constexpr int64_t kChunk = 16384;
constexpr int kThreads = 256;

// One tensor of the step: parameter, gradient and up to two state tensors.
struct Slot {
  void* p;
  const void* g;
  void* a;
  void* b;
  int64_t n;
};

struct Chunk {
  int64_t slot;
  int64_t start;
};

// Scalars derived on the host (optim_math.h), passed by value.
template <class T>
__global__ void sgd_kernel(const Slot* slots, const Chunk* chunks, optim_math::SgdScalars<compute_t<T>> s) {
  using C = compute_t<T>;
  const Chunk ch = chunks[blockIdx.x];
  const Slot sl = slots[ch.slot];
  T* p = static_cast<T*>(sl.p);
  const T* g = static_cast<const T*>(sl.g);
  T* buf = static_cast<T*>(sl.a);
  const int64_t end = ch.start + kChunk < sl.n ? ch.start + kChunk : sl.n;
  for (int64_t i = ch.start + threadIdx.x; i < end; i += blockDim.x) {
    C m = buf ? static_cast<C>(buf[i]) : C(0);
    p[i] = static_cast<T>(optim_math::sgd_update(static_cast<C>(p[i]), static_cast<C>(g[i]), buf ? &m : nullptr, s));
    if (buf) buf[i] = static_cast<T>(m);
  }
}

template <class T>
__global__ void adam_kernel(const Slot* slots, const Chunk* chunks, optim_math::AdamScalars<compute_t<T>> s) {
  using C = compute_t<T>;
  const Chunk ch = chunks[blockIdx.x];
  const Slot sl = slots[ch.slot];
  T* p = static_cast<T*>(sl.p);
  const T* g = static_cast<const T*>(sl.g);
  T* m = static_cast<T*>(sl.a);
  T* v = static_cast<T*>(sl.b);
  const int64_t end = ch.start + kChunk < sl.n ? ch.start + kChunk : sl.n;
  for (int64_t i = ch.start + threadIdx.x; i < end; i += blockDim.x) {
    C pi = static_cast<C>(p[i]), mi = static_cast<C>(m[i]), vi = static_cast<C>(v[i]);
    optim_math::adam_update(pi, static_cast<C>(g[i]), mi, vi, s);
    p[i] = static_cast<T>(pi);
    m[i] = static_cast<T>(mi);
    v[i] = static_cast<T>(vi);
  }
}

// g *= inv_scale; *found_inf = 1 when any g was inf or NaN (every writer stores the same 1,
// so the race is benign; nothing is written when all are finite).
template <class T>
__global__ void unscale_kernel(const Slot* slots, const Chunk* chunks, float* found_inf, compute_t<T> inv_scale) {
  using C = compute_t<T>;
  const Chunk ch = chunks[blockIdx.x];
  const Slot sl = slots[ch.slot];
  T* g = static_cast<T*>(sl.p);
  const int64_t end = ch.start + kChunk < sl.n ? ch.start + kChunk : sl.n;
  bool non_finite = false;
  for (int64_t i = ch.start + threadIdx.x; i < end; i += blockDim.x)
    g[i] = static_cast<T>(optim_math::unscale(static_cast<C>(g[i]), inv_scale, non_finite));
  if (non_finite) *found_inf = 1.0f;
}

// The device copy of one dtype group's slot and chunk tables.
struct Tables {
  Tensor storage;  // keeps the device memory alive until the launch is queued
  const Slot* slots;
  const Chunk* chunks;
  int64_t blocks;
};

Tables upload(const std::vector<Slot>& slots, const Device& device, cudaStream_t stream) {
  std::vector<Chunk> chunks;
  for (size_t s = 0; s < slots.size(); ++s)
    for (int64_t start = 0; start < slots[s].n; start += kChunk) chunks.push_back({static_cast<int64_t>(s), start});
  WICK_CHECK(chunks.size() < (size_t{1} << 31), "optimizer step: too many chunks (", chunks.size(), ")");
  const size_t slot_bytes = slots.size() * sizeof(Slot), chunk_bytes = chunks.size() * sizeof(Chunk);
  std::vector<unsigned char> host(slot_bytes + chunk_bytes);
  std::memcpy(host.data(), slots.data(), slot_bytes);
  std::memcpy(host.data() + slot_bytes, chunks.data(), chunk_bytes);
  Tables t;
  t.storage = empty({static_cast<int64_t>(host.size())}, Options(DType::UInt8, device));
  // Pageable source: the call returns once the bytes are staged, so `host` may go.
  WICK_CUDA_CHECK(cudaMemcpyAsync(t.storage.data_ptr(), host.data(), host.size(), cudaMemcpyHostToDevice, stream));
  auto* base = static_cast<unsigned char*>(t.storage.data_ptr());
  t.slots = reinterpret_cast<const Slot*>(base);
  t.chunks = reinterpret_cast<const Chunk*>(base + slot_bytes);
  t.blocks = static_cast<int64_t>(chunks.size());
  return t;
}

// Calls f(dtype, indices of the tensors of that dtype) for each dtype present, in order.
template <class F>
void for_each_dtype_group(const std::vector<Tensor>& params, F&& f) {
  std::vector<DType> seen;
  for (const Tensor& p : params) {
    if (p.numel() == 0 || std::find(seen.begin(), seen.end(), p.dtype()) != seen.end()) continue;
    seen.push_back(p.dtype());
    std::vector<size_t> group;
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].dtype() == p.dtype() && params[i].numel() > 0) group.push_back(i);
    f(p.dtype(), group);
  }
}

void* mut(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
              const std::vector<Tensor>& bufs, const SgdHyper& h) {
  if (params.empty()) return;
  TensorDeviceGuard guard(params[0]);
  const cudaStream_t stream = stream_for(params[0]);
  for_each_dtype_group(params, [&](DType dt, const std::vector<size_t>& group) {
    std::vector<Slot> slots;
    for (size_t i : group)
      slots.push_back({params[i].data_ptr(), grads[i].data_ptr(), h.momentum != 0 ? mut(bufs[i]) : nullptr, nullptr,
                       params[i].numel()});
    const Tables t = upload(slots, params[0].device(), stream);
    visit_floating("sgd_step", params[0].device(), dt, [&]<class T>() {
      launch_kernel("sgd_kernel", &sgd_kernel<T>, static_cast<unsigned>(t.blocks), kThreads, 0, stream, t.slots,
                    t.chunks, optim_math::SgdScalars<compute_t<T>>(h));
      WICK_CUDA_CHECK_LAUNCH("sgd_step");
    });
  });
}

void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
               const std::vector<Tensor>& v, const AdamHyper& h) {
  if (params.empty()) return;
  TensorDeviceGuard guard(params[0]);
  const cudaStream_t stream = stream_for(params[0]);
  for_each_dtype_group(params, [&](DType dt, const std::vector<size_t>& group) {
    std::vector<Slot> slots;
    for (size_t i : group)
      slots.push_back({params[i].data_ptr(), grads[i].data_ptr(), m[i].data_ptr(), v[i].data_ptr(), params[i].numel()});
    const Tables t = upload(slots, params[0].device(), stream);
    visit_floating("adam_step", params[0].device(), dt, [&]<class T>() {
      launch_kernel("adam_kernel", &adam_kernel<T>, static_cast<unsigned>(t.blocks), kThreads, 0, stream, t.slots,
                    t.chunks, optim_math::AdamScalars<compute_t<T>>(h));
      WICK_CUDA_CHECK_LAUNCH("adam_step");
    });
  });
}

void unscale_grads(const std::vector<Tensor>& grads, const Tensor& found_inf, double inv_scale) {
  if (grads.empty()) return;
  TensorDeviceGuard guard(grads[0]);
  const cudaStream_t stream = stream_for(grads[0]);
  for_each_dtype_group(grads, [&](DType dt, const std::vector<size_t>& group) {
    std::vector<Slot> slots;
    for (size_t i : group) slots.push_back({grads[i].data_ptr(), nullptr, nullptr, nullptr, grads[i].numel()});
    const Tables t = upload(slots, grads[0].device(), stream);
    visit_floating("unscale_grads", grads[0].device(), dt, [&]<class T>() {
      launch_kernel("unscale_kernel", &unscale_kernel<T>, static_cast<unsigned>(t.blocks), kThreads, 0, stream,
                    t.slots, t.chunks, found_inf.data<float>(), static_cast<compute_t<T>>(inv_scale));
      WICK_CUDA_CHECK_LAUNCH("unscale_grads");
    });
  });
}

}  // namespace

void register_optim(KernelTable& t) {
  t.sgd_step = &sgd_step;
  t.adam_step = &adam_step;
  t.unscale_grads = &unscale_grads;
}

}  // namespace wick::cuda_kernels
