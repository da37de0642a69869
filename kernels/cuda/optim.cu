// The fused multi-tensor optimizer steps and GradScaler's unscale on CUDA, in place; the
// updates are kernels/optim_math.h's (shared with the CPU), one kernel for every optimizer.
// The tensors of each dtype are stepped by ONE launch: a table of (pointers, numel) per
// tensor and (tensor, start) per chunk of kChunk elements is copied to the device, and block
// b updates chunk b. Math in compute_t (float for 16-bit types). For CUDA graphs, Adam's
// capturable step keeps its tables on the device between steps and derives its numbers
// there (adam_step_capturable).
#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/optim_step.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <variant>
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

// One tensor of the step: parameter (or gradient to unscale), gradient and the state
// buffers (null where the step does not use one).
struct Slot {
  void* p;
  const void* g;
  void* state[kMaxFusedStates];
  int64_t n;
};

struct Chunk {
  int64_t slot;
  int64_t start;
};

// A row of WICK_FUSED_OPTIMIZERS over chunk blockIdx.x: the row's update per element.
template <class T, class Hyper>
__device__ void fused_chunk(const Slot* slots, const Chunk* chunks,
                            const optim_math::FusedUpdate<compute_t<T>, Hyper>& u) {
  using C = compute_t<T>;
  constexpr size_t kStates = kFusedStates<Hyper>;
  const Chunk ch = chunks[blockIdx.x];
  const Slot sl = slots[ch.slot];
  T* p = static_cast<T*>(sl.p);
  const T* g = static_cast<const T*>(sl.g);
  const int64_t end = ch.start + kChunk < sl.n ? ch.start + kChunk : sl.n;
  for (int64_t i = ch.start + threadIdx.x; i < end; i += blockDim.x) {
    C pi = static_cast<C>(p[i]);
    C si[kStates];
    for (size_t k = 0; k < kStates; ++k) si[k] = sl.state[k] ? static_cast<C>(static_cast<T*>(sl.state[k])[i]) : C(0);
    u(pi, static_cast<C>(g[i]), si);
    p[i] = static_cast<T>(pi);
    for (size_t k = 0; k < kStates; ++k)
      if (sl.state[k]) static_cast<T*>(sl.state[k])[i] = static_cast<T>(si[k]);
  }
}

// The update's numbers derived on the host (optim_math.h) and passed by value.
template <class T, class Hyper>
__global__ void fused_kernel(const Slot* slots, const Chunk* chunks, optim_math::FusedUpdate<compute_t<T>, Hyper> u) {
  fused_chunk<T, Hyper>(slots, chunks, u);
}

// The update's numbers read from the device, where adam_scalars_kernel wrote them.
template <class T>
__global__ void fused_adam_from_device(const Slot* slots, const Chunk* chunks,
                                       const optim_math::FusedUpdate<compute_t<T>, AdamHyper>* u) {
  const optim_math::FusedUpdate<compute_t<T>, AdamHyper> v = *u;
  fused_chunk<T, AdamHyper>(slots, chunks, v);
}

// One thread: the step count advances and the update's numbers follow from it and the
// learning rate, both kept on the device (scalars = {step, lr}), so a replayed graph advances.
template <class C>
__global__ void adam_scalars_kernel(double* scalars, AdamHyper h, optim_math::FusedUpdate<C, AdamHyper>* out) {
  scalars[0] += 1;
  h.step = static_cast<int64_t>(scalars[0]);
  h.lr = scalars[1];
  *out = optim_math::FusedUpdate<C, AdamHyper>(h);
}

// The bytes of a table, carried by a launch's arguments: a graph captures them with the
// launch, where a copy from pageable memory cannot be captured. Within the 4 KiB that kernel
// parameters have on every architecture.
constexpr int kTableBytesPerLaunch = 3968;
struct TableBytes {
  unsigned char b[kTableBytesPerLaunch];
};
__global__ void write_table_kernel(unsigned char* dst, TableBytes bytes, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = bytes.b[i];
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

// The slot and chunk tables as the device reads them: slots, then chunks.
std::vector<unsigned char> table_bytes(const std::vector<Slot>& slots, int64_t* blocks) {
  std::vector<Chunk> chunks;
  for (size_t s = 0; s < slots.size(); ++s)
    for (int64_t start = 0; start < slots[s].n; start += kChunk) chunks.push_back({static_cast<int64_t>(s), start});
  WICK_CHECK(chunks.size() < (size_t{1} << 31), "optimizer step: too many chunks (", chunks.size(), ")");
  const size_t slot_bytes = slots.size() * sizeof(Slot), chunk_bytes = chunks.size() * sizeof(Chunk);
  std::vector<unsigned char> host(slot_bytes + chunk_bytes);
  std::memcpy(host.data(), slots.data(), slot_bytes);
  std::memcpy(host.data() + slot_bytes, chunks.data(), chunk_bytes);
  *blocks = static_cast<int64_t>(chunks.size());
  return host;
}

Tables upload(const std::vector<Slot>& slots, const Device& device, cudaStream_t stream) {
  int64_t blocks = 0;
  const std::vector<unsigned char> host = table_bytes(slots, &blocks);
  const size_t slot_bytes = slots.size() * sizeof(Slot);
  WICK_CHECK(!cuda::is_capturing(device.index), "optimizer step: copies its tables from pageable memory at every ",
             "step, which a CUDA graph cannot capture (AdamW and Adam step in a graph with capturable = true)");
  Tables t;
  t.storage = empty({static_cast<int64_t>(host.size())}, Options(DType::UInt8, device));
  // Pageable source: the call returns once the bytes are staged, so `host` may go.
  WICK_CUDA_CHECK(cudaMemcpyAsync(t.storage.data_ptr(), host.data(), host.size(), cudaMemcpyHostToDevice, stream));
  auto* base = static_cast<unsigned char*>(t.storage.data_ptr());
  t.slots = reinterpret_cast<const Slot*>(base);
  t.chunks = reinterpret_cast<const Chunk*>(base + slot_bytes);
  t.blocks = blocks;
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

void fused_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const FusedStateLists& state,
                const FusedHyper& hyper) {
  if (params.empty()) return;
  TensorDeviceGuard guard(params[0]);
  const cudaStream_t stream = stream_for(params[0]);
  for_each_dtype_group(params, [&](DType dt, const std::vector<size_t>& group) {
    std::vector<Slot> slots;
    for (size_t i : group) {
      Slot sl{params[i].data_ptr(), grads[i].data_ptr(), {}, params[i].numel()};
      for (size_t k = 0; k < kMaxFusedStates; ++k)
        if (!state[k].empty()) sl.state[k] = state[k][i].data_ptr();
      slots.push_back(sl);
    }
    const Tables t = upload(slots, params[0].device(), stream);
    std::visit(
        [&]<class Hyper>(const Hyper& h) {
          const char* name = fused_step_name<Hyper>;
          visit_floating(name, params[0].device(), dt, [&]<class T>() {
            launch_kernel(name, &fused_kernel<T, Hyper>, static_cast<unsigned>(t.blocks), kThreads, 0, stream, t.slots,
                          t.chunks, optim_math::FusedUpdate<compute_t<T>, Hyper>(h));
            WICK_CUDA_CHECK_LAUNCH(name);
          });
        },
        hyper);
  });
}

// The tables stay in `cache` while the tensors' addresses do (a training step's gradients
// come back at the same addresses); otherwise, and in a capture, they are written again by
// kernels, whose arguments a capture records.
void adam_step_capturable(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                          const FusedStateLists& state, const AdamHyper& h, const Tensor& scalars, FusedTables& cache) {
  TensorDeviceGuard guard(params[0]);
  const cudaStream_t stream = stream_for(params[0]);
  std::vector<Slot> slots;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].numel() == 0) continue;
    Slot sl{params[i].data_ptr(), grads[i].data_ptr(), {}, params[i].numel()};
    for (size_t k = 0; k < kFusedStates<AdamHyper>; ++k) sl.state[k] = state[k][i].data_ptr();
    slots.push_back(sl);
  }
  if (slots.empty()) return;
  int64_t blocks = 0;
  std::vector<unsigned char> key = table_bytes(slots, &blocks);
  const size_t update_at = (key.size() + 15) / 16 * 16;
  // A capture writes tables of its own (from the graph's pool), which only its replays use:
  // tables made eagerly are freed, and their memory handed out, when an eager step of other
  // tensors replaces them, while a graph would go on reading them.
  if (key != cache.key || !cache.device.defined() || cuda::is_capturing(params[0].device().index)) {
    cache.device = empty({static_cast<int64_t>(update_at + sizeof(optim_math::FusedUpdate<double, AdamHyper>))},
                         Options(DType::UInt8, params[0].device()));
    auto* dst = static_cast<unsigned char*>(cache.device.data_ptr());
    for (size_t at = 0; at < key.size(); at += kTableBytesPerLaunch) {
      TableBytes piece;
      const size_t n = std::min(key.size() - at, static_cast<size_t>(kTableBytesPerLaunch));
      std::memcpy(piece.b, key.data() + at, n);
      launch_kernel("write_table_kernel", &write_table_kernel, 1, kThreads, 0, stream, dst + at, piece,
                    static_cast<int>(n));
      WICK_CUDA_CHECK_LAUNCH("adam_step_capturable");
    }
    cache.key = std::move(key);
  }
  auto* base = static_cast<unsigned char*>(cache.device.data_ptr());
  const auto* table_slots = reinterpret_cast<const Slot*>(base);
  const auto* table_chunks = reinterpret_cast<const Chunk*>(base + slots.size() * sizeof(Slot));
  visit_floating("adam_step_capturable", params[0].device(), params[0].dtype(), [&]<class T>() {
    using Update = optim_math::FusedUpdate<compute_t<T>, AdamHyper>;
    auto* update = reinterpret_cast<Update*>(base + update_at);
    launch_kernel("adam_scalars_kernel", &adam_scalars_kernel<compute_t<T>>, 1, 1, 0, stream, scalars.data<double>(), h,
                  update);
    WICK_CUDA_CHECK_LAUNCH("adam_step_capturable");
    launch_kernel("adam_step_capturable", &fused_adam_from_device<T>, static_cast<unsigned>(blocks), kThreads, 0,
                  stream, table_slots, table_chunks, static_cast<const Update*>(update));
    WICK_CUDA_CHECK_LAUNCH("adam_step_capturable");
  });
}

void unscale_grads(const std::vector<Tensor>& grads, const Tensor& found_inf, double inv_scale) {
  if (grads.empty()) return;
  TensorDeviceGuard guard(grads[0]);
  const cudaStream_t stream = stream_for(grads[0]);
  for_each_dtype_group(grads, [&](DType dt, const std::vector<size_t>& group) {
    std::vector<Slot> slots;
    for (size_t i : group) slots.push_back({grads[i].data_ptr(), nullptr, {}, grads[i].numel()});
    const Tables t = upload(slots, grads[0].device(), stream);
    visit_floating("unscale_grads", grads[0].device(), dt, [&]<class T>() {
      launch_kernel("unscale_kernel", &unscale_kernel<T>, static_cast<unsigned>(t.blocks), kThreads, 0, stream, t.slots,
                    t.chunks, found_inf.data<float>(), static_cast<compute_t<T>>(inv_scale));
      WICK_CUDA_CHECK_LAUNCH("unscale_grads");
    });
  });
}

}  // namespace

void register_optim(KernelTable& t) {
  t.fused_step = &fused_step;
  t.adam_step_capturable = &adam_step_capturable;
  t.unscale_grads = &unscale_grads;
}

}  // namespace wick::cuda_kernels
