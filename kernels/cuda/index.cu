// Indexing kernels on CUDA: index_select, gather (=), scatter (= or +=), index_add (+=),
// nonzero.
//
// Each op is one strided loop over the index's (or output's) positions, built like the CPU
// kernels: the indexed operand is viewed with stride 0 along `dim` and the index value times
// its stride along `dim` is added per element, so tensors of any strides need no copies.
// - scatter with `=` and repeated indices: one of the writes wins, which one is unspecified
//   (as in PyTorch on CUDA; the CPU kernel makes the last one win).
// - scatter with += and index_add: atomics. float, double, int32, int64 (as unsigned 64-bit
//   adds, the same bits in two's complement), float16 (sm_70+) and bfloat16 (sm_80+) use
//   the native atomicAdd; uint8 and older GPUs' 16-bit floats use a compare-and-swap loop
//   on the aligned 32-bit word; bool += is a logical or (a plain store of true). Sums of
//   floats with repeated indices are therefore not bitwise deterministic.
// - Bad indices: no out-of-bounds access is made. Every kernel records the first bad value
//   it sees in the device's error slot (device_error.cuh) and skips it; the host raises the
//   CPU kernel's message ("gather: index 5 is out of bounds for dim 1 with size 5") at its
//   next wait, as PyTorch's device-side asserts are asynchronous: no op here synchronises.
// nonzero: per-chunk counts, an exclusive scan of the counts, then each block writes its
// chunk's coordinates in order (a block-wide ballot scan per tile of elements).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <wick/tensor/dispatch.h>
#include <wick/tensor/strided_layout.h>
#include <wick/tensor/tensor.h>

#include <type_traits>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_error.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/reduce.cuh"

namespace wick::cuda_kernels {

namespace {

// Unsigned integer of the same size as T: kernels that only move elements are instantiated
// once per element size.
template <class T>
using bits_t = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// t's storage seen with `shape`, t's strides except 0 along `dim` (the index supplies that
// coordinate).
Tensor without_dim(const Tensor& t, const Shape& shape, int64_t dim) {
  Shape st = t.strides();
  st[dim] = 0;
  return t.as_strided(shape, st, t.offset());
}

// A 1-d index seen with `shape`: index[i] at coordinate i of `dim`, constant elsewhere.
Tensor index_along(const Tensor& index, const Shape& shape, int64_t dim) {
  Shape st(shape.size(), 0);
  st[dim] = index.stride(0);
  return index.as_strided(shape, st, index.offset());
}

// Where a kernel reports a bad index: the device's error slot, and what the message names.
struct BadIndex {
  DeviceErrorSlot slot;
  int64_t size, dim, op;
  __device__ __forceinline__ bool ok(int64_t k) const {
    if (k >= 0 && k < size) return true;
    slot.report(DeviceErrorKind::IndexOutOfBounds, k, dim, size, op);
    return false;
  }
};

BadIndex bad_index(const Tensor& like, int64_t size, int64_t dim, IndexOp op) {
  return {device_error_slot(like.device().index), size, dim, static_cast<int64_t>(op)};
}

// out[p] = in[p + index[p] * in_stride]; operands of L: out, index, in (stride 0 along dim).
template <class B>
__global__ void gather_kernel(StridedLayout<3> L, B* out, const int64_t* index, const B* in, int64_t in_stride,
                              BadIndex bad) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < L.numel; i += step) {
    int64_t off[3];
    L.offsets(i, off);
    const int64_t k = index[off[1]];
    if (bad.ok(k)) out[off[0]] = in[off[2] + k * in_stride];
  }
}

// *p += v, atomically. 16-bit and 8-bit types without a native atomic go through a
// compare-and-swap of the aligned 32-bit word holding them.
template <class T, class Add>
__device__ void cas_add_subword(T* p, Add add) {
  static_assert(sizeof(T) < 4, "a sub-word type");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
  const unsigned int shift = static_cast<unsigned int>(addr & 3) * 8;
  const unsigned int mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    bits_t<T> b = static_cast<bits_t<T>>((assumed & mask) >> shift);
    T cur;
    memcpy(static_cast<void*>(&cur), &b, sizeof(T));  // a 16-bit float is its bits
    const T sum = add(cur);
    memcpy(&b, &sum, sizeof(T));
    old = atomicCAS(word, assumed, (assumed & ~mask) | (static_cast<unsigned int>(b) << shift));
  } while (assumed != old);
}

template <class T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v) *p = true;  // bool += is or; concurrent stores of true agree
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    cas_add_subword(p, [&](uint8_t c) { return static_cast<uint8_t>(c + v); });
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<T, Half>) {
#if __CUDA_ARCH__ >= 700
    atomicAdd(reinterpret_cast<__half*>(p), __ushort_as_half(v.bits));
#else
    cas_add_subword(p, [&](Half c) { return Half(static_cast<float>(c) + static_cast<float>(v)); });
#endif
  } else if constexpr (std::is_same_v<T, BFloat16>) {
#if __CUDA_ARCH__ >= 800
    atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), __ushort_as_bfloat16(v.bits));
#else
    cas_add_subword(p, [&](BFloat16 c) { return BFloat16(static_cast<float>(c) + static_cast<float>(v)); });
#endif
  } else {
    atomicAdd(p, v);  // int32, float, double
  }
}

// self[p + index[p] * self_stride] (= or +=) src[p]; operands of L: index, src, self (stride
// 0 along dim). E is the element type for +=, its same-size unsigned integer for =.
template <class E, bool kAccumulate>
__global__ void scatter_kernel(StridedLayout<3> L, const int64_t* index, const E* src, E* self, int64_t self_stride,
                               BadIndex bad) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < L.numel; i += step) {
    int64_t off[3];
    L.offsets(i, off);
    const int64_t k = index[off[0]];
    if (!bad.ok(k)) continue;
    E* dst = self + off[2] + k * self_stride;
    if constexpr (kAccumulate) atomic_add(dst, src[off[1]]);
    else *dst = src[off[1]];
  }
}

// out = in gathered along dim by `index` (already seen with out's shape).
void gather_elements(const char* op, IndexOp code, const Tensor& out, const Tensor& in, int64_t dim,
                     const Tensor& index) {
  if (out.numel() == 0) return;
  TensorDeviceGuard guard(out);
  const cudaStream_t stream = stream_for(out);
  const Tensor base = without_dim(in, out.shape(), dim);
  const auto L = make_strided_layout<3>(op, {&out, &index, &base});
  const BadIndex bad = bad_index(out, in.size(dim), dim, code);
  visit_dtype(out.dtype(), [&]<class T>() {
    using B = bits_t<T>;
    launch_kernel("gather_kernel", &gather_kernel<B>, blocks_for(L.numel), 256, 0, stream, L,
                  static_cast<B*>(out.data_ptr()), static_cast<const int64_t*>(index.data_ptr()),
                  static_cast<const B*>(base.data_ptr()), in.stride(dim), bad);
  });
  WICK_CUDA_CHECK_LAUNCH(op);
}

// self (contiguous) [p with dim -> index[p]] (= or +=) src[p], p over index's shape.
void scatter_elements(const char* op, IndexOp code, const Tensor& self, int64_t dim, const Tensor& index,
                      const Tensor& src, bool accumulate) {
  if (index.numel() == 0) return;
  TensorDeviceGuard guard(self);
  const cudaStream_t stream = stream_for(self);
  const Tensor src_view = src.as_strided(index.shape(), src.strides(), src.offset());
  const Tensor dst = without_dim(self, index.shape(), dim);
  const auto L = make_strided_layout<3>(op, {&index, &src_view, &dst});
  const BadIndex bad = bad_index(self, self.size(dim), dim, code);
  const int64_t* ip = static_cast<const int64_t*>(index.data_ptr());
  visit_dtype(self.dtype(), [&]<class T>() {
    if (accumulate) {
      launch_kernel("scatter_kernel", &scatter_kernel<T, true>, blocks_for(L.numel), 256, 0, stream, L, ip,
                    static_cast<const T*>(src_view.data_ptr()), static_cast<T*>(dst.data_ptr()), self.stride(dim), bad);
    } else {
      using B = bits_t<T>;
      launch_kernel("scatter_kernel", &scatter_kernel<B, false>, blocks_for(L.numel), 256, 0, stream, L, ip,
                    static_cast<const B*>(src_view.data_ptr()), static_cast<B*>(dst.data_ptr()), self.stride(dim), bad);
    }
  });
  WICK_CUDA_CHECK_LAUNCH(op);
}

void index_select(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  if (out.numel() == 0) return;
  gather_elements("index_select", IndexOp::IndexSelect, out, in, dim, index_along(index, out.shape(), dim));
}

void gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  gather_elements("gather", IndexOp::Gather, out, in, dim, index);
}

void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate) {
  scatter_elements(accumulate ? "scatter_add" : "scatter", accumulate ? IndexOp::ScatterAdd : IndexOp::Scatter, self,
                   dim, index, src, accumulate);
}

// self.select(dim, index[i]) += src.select(dim, i): a scatter-add whose index is the 1-d
// index seen with src's shape.
void index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (src.numel() == 0) return;
  scatter_elements("index_add", IndexOp::IndexAdd, self, dim, index_along(index, src.shape(), dim), src, true);
}

// --- nonzero --------------------------------------------------------------------------

inline constexpr int kNonzeroThreads = 256;
inline constexpr int64_t kMaxChunks = 1024;  // one block scans the chunk counts
inline constexpr int kMaxNonzeroDims = 16;

struct NonzeroShape {
  int ndim;
  int64_t sizes[kMaxNonzeroDims];
};

template <class T>
__device__ __forceinline__ bool is_nonzero(T v) {
  return static_cast<compute_t<T>>(v) != compute_t<T>(0);
}

struct SumInt64 {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a + b; }
};

// counts[c] = the number of nonzeros in chunk c (one block per chunk).
template <class T>
__global__ void count_chunks_kernel(const T* in, int64_t n, int64_t chunk, int64_t* counts) {
  __shared__ int64_t smem[kNonzeroThreads / kWarp];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk, end = min(n, begin + chunk);
  int64_t c = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) c += is_nonzero(in[i]);
  c = block_allreduce(c, smem, SumInt64{});
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

// starts[c] = counts[0] + ... + counts[c - 1] for c <= chunks (starts[chunks] is the total);
// one block of kMaxChunks threads.
__global__ void scan_counts_kernel(const int64_t* counts, int64_t chunks, int64_t* starts) {
  __shared__ int64_t warp_totals[kMaxChunks / kWarp];
  const int t = threadIdx.x, lane = t % kWarp, warp = t / kWarp;
  const int64_t v = t < chunks ? counts[t] : 0;
  const int64_t inclusive = warp_inclusive_scan(v, lane);
  if (lane == kWarp - 1) warp_totals[warp] = inclusive;
  __syncthreads();
  int64_t before = 0;
  for (int w = 0; w < warp; ++w) before += warp_totals[w];
  if (t < chunks) starts[t + 1] = before + inclusive;
  if (t == 0) starts[0] = 0;
}

// Writes the coordinates of chunk blockIdx.x's nonzeros from row starts[blockIdx.x] on, in
// order: per tile of blockDim elements, a ballot gives each thread its rank in the warp and
// the warp counts give each warp its offset in the tile.
template <class T>
__global__ void write_nonzero_kernel(const T* in, int64_t n, int64_t chunk, const int64_t* starts, NonzeroShape shape,
                                     int64_t* out, int64_t rows) {
  __shared__ int warp_counts[kNonzeroThreads / kWarp];
  const int t = threadIdx.x, lane = t % kWarp, warp = t / kWarp, warps = blockDim.x / kWarp;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk, end = min(n, begin + chunk);
  int64_t row = starts[blockIdx.x];
  for (int64_t tile = begin; tile < end; tile += blockDim.x) {
    const int64_t i = tile + t;
    const bool nz = i < end && is_nonzero(in[i]);
    const unsigned ballot = __ballot_sync(0xffffffffu, nz);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < warps; ++w) {
      if (w < warp) before += warp_counts[w];
      total += warp_counts[w];
    }
    __syncthreads();  // warp_counts is rewritten by the next tile
    if (nz) {
      const int64_t r = row + before + __popc(ballot & ((1u << lane) - 1u));
      if (r < rows) {  // out was sized by the counting call
        int64_t rest = i;
        for (int d = shape.ndim - 1; d >= 0; --d) {
          out[r * shape.ndim + d] = rest % shape.sizes[d];
          rest /= shape.sizes[d];
        }
      }
    }
    row += total;
  }
}

// The number of nonzeros of contiguous `in`; with a defined out [count, in.dim()], also their
// coordinates in row-major order.
int64_t nonzero(const Tensor& out, const Tensor& in) {
  const int64_t n = in.numel();
  if (n == 0) return 0;
  WICK_CHECK(in.dim() <= kMaxNonzeroDims, "nonzero: the input of shape ", shape_str(in.shape()), " has ", in.dim(),
             " dims, more than the ", kMaxNonzeroDims, " supported on CUDA");
  TensorDeviceGuard guard(in);
  const cudaStream_t stream = stream_for(in);
  const int64_t chunks = std::min(kMaxChunks, (n + 4095) / 4096);
  const int64_t chunk = (n + chunks - 1) / chunks;
  Tensor scratch = empty({2 * chunks + 1}, Options(DType::Int64, in.device()));
  int64_t* counts = static_cast<int64_t*>(scratch.data_ptr());
  int64_t* starts = counts + chunks;
  visit_dtype(in.dtype(), [&]<class T>() {
    launch_kernel("count_chunks_kernel", &count_chunks_kernel<T>, static_cast<unsigned>(chunks), kNonzeroThreads, 0,
                  stream, static_cast<const T*>(in.data_ptr()), n, chunk, counts);
  });
  WICK_CUDA_CHECK_LAUNCH("nonzero");
  launch_kernel("scan_counts_kernel", &scan_counts_kernel, 1, kMaxChunks, 0, stream, counts, chunks, starts);
  WICK_CUDA_CHECK_LAUNCH("nonzero");
  if (!out.defined()) {
    int64_t total = 0;
    WICK_CUDA_CHECK(cudaMemcpyAsync(&total, starts + chunks, sizeof(total), cudaMemcpyDeviceToHost, stream));
    WICK_CUDA_CHECK(cudaStreamSynchronize(stream));
    return total;
  }
  const int64_t rows = out.size(0);
  if (rows == 0 || in.dim() == 0) return rows;
  NonzeroShape shape{static_cast<int>(in.dim()), {}};
  for (int64_t d = 0; d < in.dim(); ++d) shape.sizes[d] = in.shape()[d];
  visit_dtype(in.dtype(), [&]<class T>() {
    launch_kernel("write_nonzero_kernel", &write_nonzero_kernel<T>, static_cast<unsigned>(chunks), kNonzeroThreads, 0,
                  stream, static_cast<const T*>(in.data_ptr()), n, chunk, starts, shape,
                  static_cast<int64_t*>(out.data_ptr()), rows);
  });
  WICK_CUDA_CHECK_LAUNCH("nonzero");
  return rows;
}

}  // namespace

void register_index(KernelTable& t) {
  t.index_select = &index_select;
  t.gather = &gather;
  t.scatter = &scatter;
  t.index_add = &index_add;
  t.nonzero = &nonzero;
}

}  // namespace wick::cuda_kernels
