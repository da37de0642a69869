// Stable sort of the rows of a contiguous [rows, n] tensor on CUDA: a bitonic sort of each
// row padded to P = the next power of two, over (key, position) pairs compared
// lexicographically (key order of kernels/sort_order.h, then position), so the order is
// total: the result is the stable order whatever the network does, NaN included, and the
// padding (positions >= n) sorts after every element. One launch per (k, j) stage of the
// network covers every row, log2(P) (log2(P) + 1) / 2 launches in all, each thread one
// compare-exchange; rows of any length and any number of rows take the same path.
// When n is a power of two the rows are sorted in the outputs themselves; otherwise in
// padded buffers from the caching allocator, copied out at the end.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/tensor.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/sort_order.h"

namespace wick::cuda_kernels {

namespace {

// Whether element (ka, ia) goes before (kb, ib) in a row of n: padding last, then keys,
// then positions.
template <class T>
__device__ __forceinline__ bool pair_before(T ka, int64_t ia, T kb, int64_t ib, int64_t n, bool descending) {
  using C = compute_t<T>;
  const bool pad_a = ia >= n, pad_b = ib >= n;
  if (pad_a || pad_b) return pad_a == pad_b ? ia < ib : pad_b;
  const C a = static_cast<C>(ka), b = static_cast<C>(kb);
  if (key_before<C>(a, b, descending)) return true;
  if (key_before<C>(b, a, descending)) return false;
  return ia < ib;
}

// keys/idx [rows, P] from in [rows, n]: positions 0..P-1, padding keys left unread.
template <class T>
__global__ void sort_init_kernel(const T* in, T* keys, int64_t* idx, int64_t rows, int64_t n, int64_t p) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < rows * p; t += step) {
    const int64_t r = t / p, j = t % p;
    idx[t] = j;
    if (j < n) keys[t] = in[r * n + j];
  }
}

// One stage of the bitonic network: pairs (i, i + j) inside blocks of k, ascending where
// i & k == 0; one thread per pair, rows * P / 2 pairs.
template <class T>
__global__ void sort_stage_kernel(T* keys, int64_t* idx, int64_t rows, int64_t n, int64_t p, int64_t k, int64_t j,
                                  bool descending) {
  const int64_t half = p / 2;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < rows * half; t += step) {
    const int64_t r = t / half, q = t % half;
    const int64_t i = 2 * j * (q / j) + q % j;
    const int64_t a = r * p + i, b = a + j;
    const bool up = (i & k) == 0;
    const bool swap = up ? pair_before(keys[b], idx[b], keys[a], idx[a], n, descending)
                         : pair_before(keys[a], idx[a], keys[b], idx[b], n, descending);
    if (swap) {
      const T kt = keys[a];
      keys[a] = keys[b];
      keys[b] = kt;
      const int64_t it = idx[a];
      idx[a] = idx[b];
      idx[b] = it;
    }
  }
}

// The first n of each padded row into values/indices [rows, n].
template <class T>
__global__ void sort_copy_out_kernel(const T* keys, const int64_t* idx, T* values, int64_t* indices, int64_t rows,
                                     int64_t n, int64_t p) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < rows * n; t += step) {
    const int64_t src = (t / n) * p + t % n;
    values[t] = keys[src];
    indices[t] = idx[src];
  }
}

void sort(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  if (in.numel() == 0) return;
  TensorDeviceGuard guard(in);
  const cudaStream_t stream = stream_for(in);
  const int64_t n = in.dim() == 0 ? 1 : in.shape().back();
  const int64_t rows = in.numel() / n;
  int64_t p = 1;
  while (p < n) p *= 2;
  visit_dtype(in.dtype(), [&]<class T>() {
    const bool padded = p != n;
    const Tensor key_buffer = padded ? empty({rows, p}, in.options()) : values;
    const Tensor index_buffer = padded ? empty({rows, p}, indices.options()) : indices;
    T* keys = static_cast<T*>(key_buffer.data_ptr());
    int64_t* idx = static_cast<int64_t*>(index_buffer.data_ptr());
    launch_kernel("sort_init_kernel", &sort_init_kernel<T>, blocks_for(rows * p), 256, 0, stream,
                  static_cast<const T*>(in.data_ptr()), keys, idx, rows, n, p);
    WICK_CUDA_CHECK_LAUNCH("sort");
    for (int64_t k = 2; k <= p; k *= 2)
      for (int64_t j = k / 2; j > 0; j /= 2) {
        launch_kernel("sort_stage_kernel", &sort_stage_kernel<T>, blocks_for(rows * p / 2), 256, 0, stream, keys, idx,
                      rows, n, p, k, j, descending);
        WICK_CUDA_CHECK_LAUNCH("sort");
      }
    if (padded) {
      launch_kernel("sort_copy_out_kernel", &sort_copy_out_kernel<T>, blocks_for(rows * n), 256, 0, stream, keys, idx,
                    static_cast<T*>(values.data_ptr()), static_cast<int64_t*>(indices.data_ptr()), rows, n, p);
      WICK_CUDA_CHECK_LAUNCH("sort");
    }
  });
}

}  // namespace

void register_sort(KernelTable& t) { t.sort = &sort; }

}  // namespace wick::cuda_kernels
