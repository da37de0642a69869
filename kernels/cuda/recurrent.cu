// The element-wise part of a recurrent time step on CUDA (kernels/recurrent_math.h has the
// math, shared with the CPU): one thread per (row, feature), grid-stride, writing = every
// output of its element (h, c and the saved gates forward; the gate and state gradients
// backward), so one launch does the work of the ten to twenty element-wise ops the step is
// composed of.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/recurrent_math.h"
#include "kernels/visit_floating.h"

namespace wick::cuda_kernels {

namespace {

constexpr int kThreads = 256;

template <RecurrentCell kCell, class T>
__global__ void recurrent_forward_kernel(recurrent_math::ForwardArgs<T> a, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (a.saved) recurrent_math::forward_at<kCell, T, emath::LibMath, true>(a, i / a.hidden, i % a.hidden);
    else recurrent_math::forward_at<kCell, T, emath::LibMath, false>(a, i / a.hidden, i % a.hidden);
}

template <RecurrentCell kCell, class T>
__global__ void recurrent_backward_kernel(recurrent_math::BackwardArgs<T> a, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    recurrent_math::backward_at<kCell, T, emath::LibMath>(a, i / a.hidden, i % a.hidden);
}

void recurrent_cell_forward(RecurrentCell cell, const Tensor& h, const Tensor& c, const Tensor& saved,
                            const Tensor& gi, const Tensor& gh, const Tensor& state) {
  const int64_t count = h.numel();
  if (count == 0) return;
  TensorDeviceGuard guard(h);
  const cudaStream_t stream = stream_for(h);
  visit_floating("recurrent_cell_forward", h.device(), h.dtype(), [&]<class T>() {
    const auto a = recurrent_math::forward_args<T>(h, c, saved, gi, gh, state);
    recurrent_math::visit_cell(cell, [&]<RecurrentCell kCell>() {
      launch_kernel("recurrent_forward_kernel", &recurrent_forward_kernel<kCell, T>, blocks_for(count, kThreads),
                    kThreads, 0, stream, a, count);
    });
    WICK_CUDA_CHECK_LAUNCH("recurrent_cell_forward");
  });
}

void recurrent_cell_backward(RecurrentCell cell, const Tensor& dgi, const Tensor& dgh, const Tensor& dstate,
                             const Tensor& dh, const Tensor& dc, const Tensor& h, const Tensor& c,
                             const Tensor& saved, const Tensor& state) {
  const int64_t hidden = dgi.size(1) / recurrent_gates(cell), count = dgi.size(0) * hidden;
  if (count == 0) return;
  TensorDeviceGuard guard(dgi);
  const cudaStream_t stream = stream_for(dgi);
  visit_floating("recurrent_cell_backward", dgi.device(), dgi.dtype(), [&]<class T>() {
    const auto a = recurrent_math::backward_args<T>(cell, dgi, dgh, dstate, dh, dc, h, c, saved, state);
    recurrent_math::visit_cell(cell, [&]<RecurrentCell kCell>() {
      launch_kernel("recurrent_backward_kernel", &recurrent_backward_kernel<kCell, T>, blocks_for(count, kThreads),
                    kThreads, 0, stream, a, count);
    });
    WICK_CUDA_CHECK_LAUNCH("recurrent_cell_backward");
  });
}

}  // namespace

void register_recurrent(KernelTable& t) {
  t.recurrent_cell_forward = &recurrent_cell_forward;
  t.recurrent_cell_backward = &recurrent_cell_backward;
}

}  // namespace wick::cuda_kernels
