// Reductions on CUDA: sum, prod, mean, var, p-norms, logsumexp, all/any, max/min, and max/min
// with the index along one dim. Each writes `=` into a fresh output.
//
// One kernel per (op, dtype) covers every layout. The input is seen as outputs x reduced
// elements (kept dims and reduced dims, size-1 dims dropped, contiguous neighbours merged).
// Threads form a 2-d block: "lanes" split one output's reduced elements, and the other
// block dim walks outputs.
// - Row mode (the reduced elements have the smaller stride, e.g. a reduction over the last
//   dim): threadIdx.x are the lanes, a warp or several per output; unit-stride rows are read
//   with 16-byte loads; lanes combine through warp shuffles (and shared memory across warps).
// - Column mode (the outputs have the smaller stride, e.g. a reduction over outer dims):
//   threadIdx.x walks neighbouring outputs, so every load is coalesced, threadIdx.y are the
//   lanes, combined through shared memory.
// When there are too few outputs to fill the GPU (a full reduction of a big tensor), the
// reduced range is also cut into chunks (gridDim.y); each block writes a partial state and a
// second kernel combines them in chunk order.
//
// Column reductions with unit-stride outputs (the sum over the rows of [R, C]: bias and
// norm-weight gradients; [A, R, C] over R) take reduce_columns_kernel: each thread owns V
// neighbouring columns (a 16-byte pack of T where every pack is aligned, at most 64 bytes of
// states; V = 1, element by element, for odd widths and misaligned views) and folds rows with
// kFoldUnroll pack loads in flight; threadIdx.y splits the rows, combined through shared
// memory (all V states in one tree). When the columns alone do not fill the GPU, gridDim.z
// cuts the rows into chunks (the grid one wave: the occupancy API's blocks per
// multiprocessor times their count); each block writes its partial states and the last
// block of its column tile (a ticket) combines them in chunk order: one launch.
//
// Unit-stride rows (the reduced elements of each output contiguous: sums over the last dim,
// full reductions of contiguous tensors) take a faster path: every thread folds its share
// with kFoldUnroll independent accumulators, each fed by its own 16-byte load per step, so
// that several loads are in flight per thread (one accumulator waits on every load).
// - Many rows: one warp per row (reduce_rows_kernel), combined with shuffles only.
// - Few long rows (a full reduction): the blocks of a row each write a partial state and
//   the last block to finish (a ticket counter per row) combines them in block order, in the
//   same launch (reduce_split_kernel).
// Neither uses atomics on the values, so results are deterministic on a given GPU (the
// split depends on its multiprocessor count and occupancy). The split grid is one wave
// (blocks per multiprocessor from the occupancy API, times the multiprocessors).
//
// The tickets of the one-launch splits are zero when made (once per host thread, device and
// stream: zeroed_tickets) and every launch leaves them zero (the last block resets its own),
// so no call clears them.
//
// The math of each op (identity, add, combine, result) is kernels/reduce_math.h, shared with
// the CPU kernels; this file owns the loops and the accumulation types.
// Accumulation: float for 16-bit floats and float32 (each lane folds its elements serially,
// then a tree of depth log2(lanes * chunks)), double for float64, int64 for integers and
// bool. With L elements per lane and T tree levels, a float32 sum's error is bounded by
// (L + T) * 2^-24 * sum |x| (L is at most a few hundred here), where the CPU's double
// accumulation is exact to float32 output precision. Var (Welford per lane, Chan's merge)
// accumulates in double for every floating type: a float running mean is rounded to ulp(mean)/2,
// which costs 3e-3 relative error on float32 columns of 64 values around 1e4 with spread 1
// (found by running CudaReduce.VarIsStableAwayFromZero under the simulator); logsumexp is
// one pass of (running max, sum of exp(x - max)).
#include <wick/tensor/cuda.h>
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/reduce.cuh"

namespace wick::cuda_kernels {

namespace {

// Each op: identity(), add(acc, x, r) with r the element's index in the reduced space,
// combine(a, b) (associative and commutative), write(o, acc) storing output o.

// A shared reduction (kernels/reduce_math.h) over elements of type T, writing Out.
template <class T, class Fn, class Out = T>
struct FnOp {
  using In = T;
  using Acc = typename Fn::State;
  Fn fn;
  Out* out;
  __device__ Acc identity() const { return fn.identity(); }
  __device__ Acc add(Acc a, T x, int64_t r) const { return fn.add(a, static_cast<compute_t<T>>(x), r); }
  __device__ Acc combine(Acc a, Acc b) const { return fn.combine(a, b); }
  __device__ void write(int64_t o, Acc a) const { out[o] = convert<Out>(fn.result(a)); }
};

// Max or min with its index: values and indices.
template <class T>
struct ArgExtremumOp {
  using In = T;
  using A = acc_t<T>;
  using Fn = ArgExtremumFn<AtRunTime, A>;
  using Acc = typename Fn::State;
  Fn fn;
  T* values;
  int64_t* indices;
  __device__ Acc identity() const { return fn.identity(); }
  __device__ Acc add(Acc a, T x, int64_t r) const { return fn.add(a, static_cast<compute_t<T>>(x), r); }
  __device__ Acc combine(Acc a, Acc b) const { return fn.combine(a, b); }
  __device__ void write(int64_t o, Acc a) const {
    values[o] = convert<T>(a.v);
    indices[o] = a.i;
  }
};

// Row-major index -> element offset over up to kMaxLayoutDims (size, stride) dims.
struct DimList {
  int ndim = 0;
  int64_t sizes[kMaxLayoutDims] = {};
  int64_t strides[kMaxLayoutDims] = {};
  __device__ __forceinline__ int64_t offset(int64_t i) const {
    if (ndim == 1) return i * strides[0];
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / sizes[d];
      off += (i - q * sizes[d]) * strides[d];
      i = q;
    }
    return off;
  }
};

struct ReducePlan {
  DimList kept;     // outputs are row-major over these (in's strides)
  DimList reduced;  // ordered by in's stride, innermost last
  int64_t n_out = 1;
  int64_t n_red = 1;
  int64_t chunk = 1;       // reduced elements per blockIdx.y
  bool columns = false;    // column mode: threadIdx.x walks outputs (see the top of the file)
  bool vectorize = false;  // row mode over unit-stride reduced elements: 16-byte loads
  dim3 block, grid;
};

// Folds this lane's share of [rb, re) of one output's unit-stride reduced elements, with
// 16-byte loads from the first aligned element on.
template <class Op>
__device__ typename Op::Acc fold_vectorized(const Op& op, typename Op::Acc acc, const typename Op::In* row,
                                            int64_t rb, int64_t re, int lane, int lanes) {
  using T = typename Op::In;
  constexpr int V = kVec<T>;
  const int64_t n = re - rb;
  const T* p = row + rb;
  const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) % 16) / sizeof(T);
  const int64_t head = std::min<int64_t>(n, misalign == 0 ? 0 : V - misalign);
  for (int64_t i = lane; i < head; i += lanes) acc = op.add(acc, p[i], rb + i);
  const int64_t packs = (n - head) / V;
  const Pack<T, V>* vp = reinterpret_cast<const Pack<T, V>*>(p + head);
  for (int64_t j = lane; j < packs; j += lanes) {
    const Pack<T, V> v = vp[j];
    const int64_t r = rb + head + j * V;
#pragma unroll
    for (int k = 0; k < V; ++k) acc = op.add(acc, v.v[k], r + k);
  }
  for (int64_t i = head + packs * V + lane; i < n; i += lanes) acc = op.add(acc, p[i], rb + i);
  return acc;
}

// One block: blockDim.x * blockDim.y threads (at least a warp, powers of two). Writes the
// outputs, or with gridDim.y > 1 the partial state of chunk blockIdx.y into `partials`.
template <class Op>
__global__ void reduce_kernel(Op op, const typename Op::In* in, ReducePlan plan, typename Op::Acc* partials) {
  using Acc = typename Op::Acc;
  Acc* smem = dynamic_shared_memory<Acc>();
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
  const int64_t o = plan.columns ? static_cast<int64_t>(blockIdx.x) * bx + tx : static_cast<int64_t>(blockIdx.x) * by + ty;
  const int lane = plan.columns ? ty : tx, lanes = plan.columns ? by : bx;
  const int64_t rb = static_cast<int64_t>(blockIdx.y) * plan.chunk;
  const int64_t re = std::min(plan.n_red, rb + plan.chunk);

  Acc acc = op.identity();
  if (o < plan.n_out) {
    const typename Op::In* base = in + plan.kept.offset(o);
    if (plan.vectorize) {
      acc = fold_vectorized(op, acc, base, rb, re, lane, lanes);
    } else {
      for (int64_t r = rb + lane; r < re; r += lanes) acc = op.add(acc, base[plan.reduced.offset(r)], r);
    }
  }

  const auto combine = [&](const Acc& a, const Acc& b) { return op.combine(a, b); };
  bool leader;
  if (!plan.columns) {
    acc = warp_reduce_down(acc, bx < kWarp ? bx : kWarp, combine);
    if (bx > kWarp) {
      const int warps = bx / kWarp;
      if (tx % kWarp == 0) smem[ty * warps + tx / kWarp] = acc;
      __syncthreads();
      if (tx == 0)
        for (int w = 1; w < warps; ++w) acc = op.combine(acc, smem[ty * warps + w]);
    }
    leader = tx == 0;
  } else {
    smem[ty * bx + tx] = acc;
    __syncthreads();
    for (int s = by / 2; s > 0; s /= 2) {
      if (ty < s) smem[ty * bx + tx] = op.combine(smem[ty * bx + tx], smem[(ty + s) * bx + tx]);
      __syncthreads();
    }
    acc = smem[tx];
    leader = ty == 0;
  }
  if (leader && o < plan.n_out) {
    if (gridDim.y == 1) op.write(o, acc);
    else partials[static_cast<int64_t>(blockIdx.y) * plan.n_out + o] = acc;
  }
}

// out[o] = the partial states of every chunk combined in chunk order.
template <class Op>
__global__ void combine_partials_kernel(Op op, const typename Op::Acc* partials, int chunks, int64_t n_out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < n_out; o += step) {
    typename Op::Acc a = partials[o];
    for (int c = 1; c < chunks; ++c) a = op.combine(a, partials[static_cast<int64_t>(c) * n_out + o]);
    op.write(o, a);
  }
}

// Independent accumulators (and 16-byte loads in flight) per thread in the unit-stride paths.
inline constexpr int kFoldUnroll = 4;

// Folds this lane's share of row[0, n) (reduced indices r0, r0 + 1, ...): the elements before
// the first 16-byte boundary one by one, then packs p = lane, lane + lanes, ... with
// kFoldUnroll packs loaded before any is folded, then the rest one by one.
template <class Op>
__device__ __forceinline__ typename Op::Acc fold_row(const Op& op, const typename Op::In* row, int64_t n, int64_t r0,
                                                     int lane, int lanes) {
  using T = typename Op::In;
  using Acc = typename Op::Acc;
  constexpr int V = kVec<T>, U = kFoldUnroll;
  const int64_t misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(row) % 16) / sizeof(T);
  const int64_t head = min(n, misalign == 0 ? int64_t{0} : V - misalign);
  Acc acc[U];
#pragma unroll
  for (int u = 0; u < U; ++u) acc[u] = op.identity();
  for (int64_t i = lane; i < head; i += lanes) acc[0] = op.add(acc[0], row[i], r0 + i);
  const int64_t packs = (n - head) / V;
  const Pack<T, V>* vp = reinterpret_cast<const Pack<T, V>*>(row + head);
  const int64_t rp = r0 + head;  // reduced index of the first pack's first element
  int64_t j = lane;
  for (; j + (U - 1) * int64_t{lanes} < packs; j += U * int64_t{lanes}) {
    Pack<T, V> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = vp[j + u * lanes];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < V; ++k) acc[u] = op.add(acc[u], v[u].v[k], rp + (j + u * lanes) * V + k);
  }
  for (; j < packs; j += lanes) {
    const Pack<T, V> v = vp[j];
#pragma unroll
    for (int k = 0; k < V; ++k) acc[0] = op.add(acc[0], v.v[k], rp + j * V + k);
  }
  for (int64_t i = head + packs * V + lane; i < n; i += lanes) acc[0] = op.add(acc[0], row[i], r0 + i);
#pragma unroll
  for (int w = U / 2; w > 0; w /= 2)
#pragma unroll
    for (int u = 0; u < w; ++u) acc[u] = op.combine(acc[u], acc[u + w]);
  return acc[0];
}

inline constexpr int kRowThreads = 256;  // 8 warps, 8 rows per block

// One warp per output; its reduced elements are unit-stride (plan.vectorize).
template <class Op>
__global__ void __launch_bounds__(kRowThreads) reduce_rows_kernel(Op op, const typename Op::In* in, DimList kept,
                                                                  int64_t n_out, int64_t n) {
  const int lane = threadIdx.x % kWarp;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * (kRowThreads / kWarp) + threadIdx.x / kWarp;
  if (o >= n_out) return;  // whole warps leave together
  typename Op::Acc acc = fold_row(op, in + kept.offset(o), n, 0, lane, kWarp);
  const auto combine = [&](const typename Op::Acc& a, const typename Op::Acc& b) { return op.combine(a, b); };
  acc = warp_reduce_down(acc, kWarp, combine);
  if (lane == 0) op.write(o, acc);
}

inline constexpr int kSplitThreads = 512;

// Rows too few to fill the GPU: gridDim.x blocks share row blockIdx.y, block b folding the
// `chunk` elements from b * chunk. Each block stores its partial state; the last block of
// the row to finish (tickets[row] counts finished blocks; zero before the launch, left
// zero after it) combines the partials in block order and writes the output.
template <class Op>
__global__ void __launch_bounds__(kSplitThreads) reduce_split_kernel(Op op, const typename Op::In* in, DimList kept,
                                                                    int64_t n, int64_t chunk,
                                                                    typename Op::Acc* partials, unsigned* tickets) {
  using Acc = typename Op::Acc;
  __shared__ Acc smem[kSplitThreads / kWarp];
  __shared__ bool last;
  const int64_t o = blockIdx.y;
  const int64_t rb = static_cast<int64_t>(blockIdx.x) * chunk, re = min(n, rb + chunk);
  const auto combine = [&](const Acc& a, const Acc& b) { return op.combine(a, b); };
  Acc acc = fold_row(op, in + kept.offset(o) + rb, max(re - rb, int64_t{0}), rb, threadIdx.x, kSplitThreads);
  acc = block_allreduce(acc, smem, combine);
  Acc* row_partials = partials + o * gridDim.x;
  if (threadIdx.x == 0) {
    store_volatile(&row_partials[blockIdx.x], acc);
    __threadfence();  // the partial is visible to every block before the ticket is taken
    last = atomicAdd(&tickets[o], 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The last block: its threads fold strided runs of the partials, then the block combines
  // them; every grouping is fixed by gridDim.x, so the result does not depend on timing.
  Acc total = op.identity();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kSplitThreads)
    total = op.combine(total, load_volatile(&row_partials[b]));
  total = block_allreduce(total, smem, combine);
  if (threadIdx.x == 0) {
    op.write(o, total);
    tickets[o] = 0;
  }
}

// Columns of a unit-stride column reduction: outputs [outer, C] (output a * C + c), input
// element (a, r, c) at a * sa + r * sr + c.
struct ColumnPlan {
  int64_t C, rows, sa, sr;
  int64_t n_out;  // outer * C
  int64_t chunk;  // rows per blockIdx.z
};

inline constexpr int kColumnThreads = 512;

// Columns per thread: a 16-byte pack of T, fewer where the pack's states would pass 64 bytes
// (Welford, (value, index), int64 sums of bytes), so that the states stay in registers.
template <class Op>
inline constexpr int kColumnVec = std::max<int>(1, std::min<int>(kVec<typename Op::In>, 64 / sizeof(typename Op::Acc)));

// The V states of the blockDim.y lanes of each column combined, all V in one tree of fixed
// shape (the grouping is the same every run); every lane ends with the results. Every
// thread of the block calls it; smem holds V * blockDim.x * blockDim.y states.
template <class Op, int V>
__device__ __forceinline__ void combine_lanes(const Op& op, typename Op::Acc (&a)[V], typename Op::Acc* smem) {
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
#pragma unroll
  for (int k = 0; k < V; ++k) smem[(k * by + ty) * bx + tx] = a[k];
  __syncthreads();
  for (int s = by / 2; s > 0; s /= 2) {
    if (ty < s)
#pragma unroll
      for (int k = 0; k < V; ++k)
        smem[(k * by + ty) * bx + tx] = op.combine(smem[(k * by + ty) * bx + tx], smem[(k * by + ty + s) * bx + tx]);
    __syncthreads();
  }
#pragma unroll
  for (int k = 0; k < V; ++k) a[k] = smem[k * by * bx + tx];
  __syncthreads();  // smem is written again by the next call
}

// out[a * C + c] = op over r of in[a * sa + r * sr + c] (writes =). blockDim = (column groups
// of V columns, row lanes), both powers of two; blockIdx = (column tile, a, row chunk). With
// gridDim.z > 1 each block stores its V partial states per column, and the last block of the
// tile to finish (tickets[tile] counts finished chunks; zero before, left zero after)
// combines the chunks in order and writes.
template <class Op, int V>
__global__ void __launch_bounds__(kColumnThreads) reduce_columns_kernel(Op op, const typename Op::In* in, ColumnPlan p,
                                                                       typename Op::Acc* partials, unsigned* tickets) {
  using T = typename Op::In;
  using Acc = typename Op::Acc;
  constexpr int U = kFoldUnroll;
  Acc* smem = dynamic_shared_memory<Acc>();
  __shared__ bool last;
  const int tx = threadIdx.x, ty = threadIdx.y, by = blockDim.y;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + tx) * V;
  const bool live = c0 < p.C;  // C is a multiple of V
  const int64_t rb = static_cast<int64_t>(blockIdx.z) * p.chunk, re = min(p.rows, rb + p.chunk);
  Acc acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = op.identity();
  if (live) {
    const T* col = in + static_cast<int64_t>(blockIdx.y) * p.sa + c0;
    int64_t r = rb + ty;
    // U rows' packs loaded before any is folded: U 16-byte loads in flight per thread.
    for (; r + (U - 1) * int64_t{by} < re; r += U * int64_t{by}) {
      Pack<T, V> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = *reinterpret_cast<const Pack<T, V>*>(col + (r + u * int64_t{by}) * p.sr);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = op.add(acc[k], v[u].v[k], r + u * int64_t{by});
    }
    // The last few rows one at a time (not unrolled: an unrolled remainder needs its trip
    // count, a 64-bit division).
#pragma unroll 1
    for (; r < re; r += by) {
      const Pack<T, V> v = *reinterpret_cast<const Pack<T, V>*>(col + r * p.sr);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = op.add(acc[k], v.v[k], r);
    }
  }
  const int64_t o = static_cast<int64_t>(blockIdx.y) * p.C + c0;
  combine_lanes(op, acc, smem);
  if (gridDim.z == 1) {
    if (ty == 0 && live)
#pragma unroll
      for (int k = 0; k < V; ++k) op.write(o + k, acc[k]);
    return;
  }
  if (ty == 0 && live)
#pragma unroll
    for (int k = 0; k < V; ++k) store_volatile(&partials[static_cast<int64_t>(blockIdx.z) * p.n_out + o + k], acc[k]);
  __threadfence();  // every partial is visible to every block before the ticket is taken
  __syncthreads();
  const unsigned tile = blockIdx.y * gridDim.x + blockIdx.x;
  if (tx == 0 && ty == 0) last = atomicAdd(&tickets[tile], 1u) == gridDim.z - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The last block: lane ty folds chunks ty, ty + by, ... of each column, then the lanes
  // combine; the grouping depends on gridDim.z and blockDim.y only.
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = op.identity();
  if (live)
#pragma unroll 1
    for (unsigned z = ty; z < gridDim.z; z += by)
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = op.combine(acc[k], load_volatile(&partials[z * p.n_out + o + k]));
  combine_lanes(op, acc, smem);
  if (ty == 0 && live)
#pragma unroll
    for (int k = 0; k < V; ++k) op.write(o + k, acc[k]);
  if (tx == 0 && ty == 0) tickets[tile] = 0;
}

// Tickets of the one-launch splits (reduce_split_kernel, reduce_columns_kernel) on this
// thread's current stream of `device`: at least `count`, all zero. Made (and zeroed, the only
// memset) once per host thread, device and stream, grown when a launch needs more; every
// kernel that takes them leaves them zero, and launches on one stream run in order, so no
// call clears them. Dropped when their stream is destroyed, or with the thread.
struct TicketBuffer {
  int device;
  uint64_t stream_id;
  Tensor tickets;  // uint8, 4 bytes per ticket
};
thread_local std::vector<TicketBuffer> t_tickets;

unsigned* zeroed_tickets(int device, cudaStream_t stream, int64_t count) {
  t_tickets.erase(std::remove_if(t_tickets.begin(), t_tickets.end(),
                                 [](const TicketBuffer& b) { return !stream_alive(b.stream_id); }),
                  t_tickets.end());
  const uint64_t id = stream_id_for(device);
  auto it = std::find_if(t_tickets.begin(), t_tickets.end(),
                         [&](const TicketBuffer& b) { return b.device == device && b.stream_id == id; });
  const int64_t bytes = count * static_cast<int64_t>(sizeof(unsigned));
  if (it == t_tickets.end() || it->tickets.numel() < bytes) {
    // The old buffer goes back to the caching allocator on this stream: a launch still
    // queued here that uses it runs before any later use of its memory on the stream.
    const int64_t grown = std::max<int64_t>({bytes, it == t_tickets.end() ? 0 : 2 * it->tickets.numel(), 4096});
    Tensor t = empty({grown}, Options(DType::UInt8, Device::cuda(device)));
    WICK_CUDA_CHECK(cudaMemsetAsync(t.data_ptr(), 0, static_cast<size_t>(grown), stream));
    if (it == t_tickets.end()) it = t_tickets.insert(t_tickets.end(), TicketBuffer{device, id, t});
    else it->tickets = t;
  }
  return static_cast<unsigned*>(it->tickets.data_ptr());
}

// Blocks of `kernel` (blocks of `threads` threads with `smem` bytes of dynamic shared
// memory) that one wave runs on `device`: the occupancy API's blocks per multiprocessor times
// the multiprocessors. Asked once per device by each caller (`known`: one per kernel).
template <class Kernel>
int64_t one_wave(Kernel kernel, int threads, size_t smem, int device, std::atomic<int>* known, int known_size) {
  int per_sm = device >= 0 && device < known_size ? known[device].load(std::memory_order_relaxed) : 0;
  if (per_sm == 0) {
    WICK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    per_sm = std::max(per_sm, 1);
    if (device >= 0 && device < known_size) known[device].store(per_sm, std::memory_order_relaxed);
  }
  return static_cast<int64_t>(per_sm) * device_attribute<cudaDevAttrMultiProcessorCount>(device);
}

struct SizeStride {
  int64_t size, stride;
};

// Merges neighbours (outer to inner) that are contiguous with each other into `list`.
void merge_into(const char* name, const Tensor& in, std::vector<SizeStride> dims, DimList& list) {
  std::vector<SizeStride> merged;
  for (const SizeStride& d : dims) {
    if (!merged.empty() && merged.back().stride == d.stride * d.size) {
      merged.back().size *= d.size;
      merged.back().stride = d.stride;
    } else {
      merged.push_back(d);
    }
  }
  WICK_CHECK(merged.size() <= static_cast<size_t>(kMaxLayoutDims), name, ": the input of shape ",
             shape_str(in.shape()), " needs ", merged.size(), " dims after merging, more than the ", kMaxLayoutDims,
             " supported on CUDA");
  list.ndim = static_cast<int>(merged.size());
  for (size_t k = 0; k < merged.size(); ++k) {
    list.sizes[k] = merged[k].size;
    list.strides[k] = merged[k].stride;
  }
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int multiprocessors(int device) { return device_attribute<cudaDevAttrMultiProcessorCount>(device); }

// The layout, launch shape and chunking of a reduction of the dims in `mask` of `in`, whose
// elements are `elem` bytes.
ReducePlan make_plan(const char* name, const Tensor& in, uint64_t mask, size_t elem) {
  ReducePlan p;
  std::vector<SizeStride> kept, reduced;
  for (int64_t d = 0; d < in.dim(); ++d) {
    const bool is_reduced = (mask >> d) & 1;
    const SizeStride s{in.shape()[d], in.strides()[d]};
    (is_reduced ? p.n_red : p.n_out) *= s.size;
    if (s.size != 1) (is_reduced ? reduced : kept).push_back(s);
  }
  std::stable_sort(reduced.begin(), reduced.end(), [](const SizeStride& a, const SizeStride& b) { return a.stride > b.stride; });
  merge_into(name, in, kept, p.kept);
  merge_into(name, in, reduced, p.reduced);

  const int64_t kept_stride = p.kept.ndim ? p.kept.strides[p.kept.ndim - 1] : 0;
  const int64_t red_stride = p.reduced.ndim ? p.reduced.strides[p.reduced.ndim - 1] : 0;
  p.columns = p.kept.ndim > 0 && (p.reduced.ndim == 0 || kept_stride < red_stride);
  p.vectorize = !p.columns && p.reduced.ndim == 1 && red_stride == 1 && elem <= 16;

  // Lanes per output aim at >= 16 elements each before the block grows; blocks hold at most
  // 512 threads and at least a warp.
  constexpr int64_t kMaxThreads = 512, kPerLane = 16;
  const int64_t want_lanes = pow2_at_least(std::max<int64_t>(1, (p.n_red + kPerLane - 1) / kPerLane));
  int64_t lanes, outs;
  if (!p.columns) {
    lanes = std::min(want_lanes, kMaxThreads);
    outs = std::min(std::max<int64_t>(1, 256 / lanes), pow2_at_least(p.n_out));
    if (lanes * outs < kWarp) lanes = kWarp / outs;
    p.block = dim3(static_cast<unsigned>(lanes), static_cast<unsigned>(outs));
  } else {
    outs = std::min<int64_t>(kWarp, pow2_at_least(p.n_out));
    lanes = std::min(want_lanes, kMaxThreads / outs);
    if (lanes * outs < kWarp) lanes = kWarp / outs;
    p.block = dim3(static_cast<unsigned>(outs), static_cast<unsigned>(lanes));
  }
  const int64_t blocks_x = (p.n_out + outs - 1) / outs;
  WICK_CHECK(blocks_x < (int64_t{1} << 31), name, ": too many outputs (", p.n_out, ") for one launch");

  // Split the reduced range when the outputs alone leave the GPU idle and lanes would each
  // fold long runs. Chunks are multiples of 16 elements so unit-stride chunks stay aligned.
  const int64_t target_blocks = 4 * static_cast<int64_t>(multiprocessors(in.device().index));
  int64_t chunks = 1;
  if (blocks_x < target_blocks && p.n_red > lanes * 4 * kPerLane) {
    chunks = std::min((target_blocks + blocks_x - 1) / blocks_x, (p.n_red + lanes * kPerLane - 1) / (lanes * kPerLane));
    chunks = std::min<int64_t>(chunks, 65535);
  }
  p.chunk = std::max<int64_t>(1, (p.n_red + chunks - 1) / chunks);
  if (chunks > 1) {
    p.chunk = (p.chunk + 15) / 16 * 16;
    chunks = (p.n_red + p.chunk - 1) / p.chunk;
  }
  p.grid = dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(chunks));
  return p;
}

// The unit-stride paths (see the top of the file); false when the plan is not for them.
template <class Op>
bool launch_unit_stride(const char* name, const Op& op, const Tensor& in, const ReducePlan& plan, cudaStream_t stream) {
  using Acc = typename Op::Acc;
  if (!plan.vectorize || !cuda::kernel_tuning().reduce_unit_stride) return false;
  const auto* data = static_cast<const typename Op::In*>(in.data_ptr());
  const int64_t n = plan.n_red;
  const int device = in.device().index;
  const int64_t sms = multiprocessors(device);
  // A warp per row when the rows fill the GPU (32 warps per multiprocessor) or are short.
  if (plan.n_out >= 32 * sms || n <= 32 * 64) {
    constexpr int64_t kRows = kRowThreads / kWarp;
    const int64_t blocks = (plan.n_out + kRows - 1) / kRows;
    WICK_CHECK(blocks < (int64_t{1} << 31), name, ": too many outputs (", plan.n_out, ") for one launch");
    launch_kernel("reduce_rows_kernel", &reduce_rows_kernel<Op>, static_cast<unsigned>(blocks), kRowThreads, 0, stream,
                  op, data, plan.kept, plan.n_out, n);
    WICK_CUDA_CHECK_LAUNCH(name);
    return true;
  }
  if (plan.n_out > 65535) return false;  // gridDim.y's limit
  // Blocks per row: one wave in all (more would queue a second wave behind the first), each
  // thread folding at least one unrolled step of packs; chunks are whole packs so every
  // block's loads stay aligned.
  constexpr int64_t kStep = int64_t{kSplitThreads} * kFoldUnroll;  // packs per block step
  const int64_t v = kVec<typename Op::In>;
  static std::atomic<int> known[64] = {};
  const int64_t wave = one_wave(&reduce_split_kernel<Op>, kSplitThreads, 0, device, known, 64);
  const int64_t want = std::max<int64_t>(1, wave / plan.n_out);
  const int64_t blocks = std::max<int64_t>(1, std::min(want, n / (kStep * v)));
  const int64_t chunk = ((n + blocks - 1) / blocks + v - 1) / v * v;
  const int64_t grid_x = (n + chunk - 1) / chunk;
  Tensor scratch = empty({static_cast<int64_t>(plan.n_out * grid_x * sizeof(Acc))}, Options(DType::UInt8, in.device()));
  auto* partials = static_cast<Acc*>(scratch.data_ptr());
  unsigned* tickets = zeroed_tickets(device, stream, plan.n_out);
  launch_kernel("reduce_split_kernel", &reduce_split_kernel<Op>,
                dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(plan.n_out)), kSplitThreads, 0, stream, op,
                data, plan.kept, n, chunk, partials, tickets);
  WICK_CUDA_CHECK_LAUNCH(name);
  return true;
}

// The column path (see the top of the file); false when the plan is not for it: row mode,
// outputs not unit-stride, reduced or kept dims that do not merge into one (and an outer) dim.
template <class Op>
bool launch_columns(const char* name, const Op& op, const Tensor& in, const ReducePlan& plan, cudaStream_t stream) {
  using T = typename Op::In;
  using Acc = typename Op::Acc;
  if (!plan.columns || plan.reduced.ndim != 1 || plan.kept.ndim < 1 || plan.kept.ndim > 2 ||
      plan.kept.strides[plan.kept.ndim - 1] != 1 || !cuda::kernel_tuning().reduce_unit_stride)
    return false;
  ColumnPlan p;
  p.C = plan.kept.sizes[plan.kept.ndim - 1];
  p.rows = plan.reduced.sizes[0];
  p.sr = plan.reduced.strides[0];
  p.sa = plan.kept.ndim == 2 ? plan.kept.strides[0] : 0;
  p.n_out = plan.n_out;
  const int64_t outer = plan.kept.ndim == 2 ? plan.kept.sizes[0] : 1;
  if (outer > 65535) return false;  // gridDim.y's limit
  const T* data = static_cast<const T*>(in.data_ptr());
  constexpr int V = kColumnVec<Op>;
  const bool packed = V > 1 && p.C % V == 0 && p.sr % V == 0 && p.sa % V == 0 &&
                      reinterpret_cast<uintptr_t>(data) % (sizeof(T) * V) == 0;
  const int64_t v = packed ? V : 1;
  // Column groups across threadIdx.x (a warp reads 32 neighbouring packs of a row), row lanes
  // across threadIdx.y: enough lanes that each folds at least two unrolled steps, at most 16.
  constexpr int U = kFoldUnroll;
  const int64_t groups = (p.C + v - 1) / v;
  int64_t by = std::min<int64_t>(16, pow2_at_least(std::max<int64_t>(1, p.rows / (2 * U))));
  int64_t bx = std::min<int64_t>(pow2_at_least(groups), kColumnThreads / by);
  if (bx * by < kWarp) by = kWarp / bx;
  const int64_t tiles = (groups + bx - 1) / bx;
  WICK_CHECK(tiles < (int64_t{1} << 31), name, ": too many outputs (", plan.n_out, ") for one launch");
  const size_t smem = static_cast<size_t>(bx * by * v) * sizeof(Acc);
  // Chunks of rows when the column tiles leave most of one wave idle; each chunk at least
  // two unrolled steps of every lane.
  const int device = in.device().index;
  static std::atomic<int> known[64] = {};
  const int64_t wave = one_wave(&reduce_columns_kernel<Op, V>, kColumnThreads, kColumnThreads * V * sizeof(Acc), device,
                                known, 64);
  const int64_t blocks = tiles * outer;
  int64_t chunks = 1;
  if (blocks < wave / 2) chunks = std::min<int64_t>({wave / blocks, p.rows / (2 * U * by), 65535});
  chunks = std::max<int64_t>(chunks, 1);
  p.chunk = (p.rows + chunks - 1) / chunks;
  chunks = (p.rows + p.chunk - 1) / p.chunk;
  Tensor scratch;
  Acc* partials = nullptr;
  unsigned* tickets = nullptr;
  if (chunks > 1) {
    scratch = empty({static_cast<int64_t>(chunks * plan.n_out * sizeof(Acc))}, Options(DType::UInt8, in.device()));
    partials = static_cast<Acc*>(scratch.data_ptr());
    tickets = zeroed_tickets(device, stream, blocks);
  }
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(outer), static_cast<unsigned>(chunks));
  const dim3 block(static_cast<unsigned>(bx), static_cast<unsigned>(by));
  if (packed)
    launch_kernel("reduce_columns_kernel<V>", &reduce_columns_kernel<Op, V>, grid, block, smem, stream, op, data, p, partials,
                  tickets);
  else
    launch_kernel("reduce_columns_kernel<1>", &reduce_columns_kernel<Op, 1>, grid, block, smem, stream, op, data, p, partials,
                  tickets);
  WICK_CUDA_CHECK_LAUNCH(name);
  return true;
}

template <class Op>
void launch_reduce(const char* name, const Op& op, const Tensor& in, uint64_t mask) {
  using Acc = typename Op::Acc;
  ReducePlan plan = make_plan(name, in, mask, sizeof(typename Op::In));
  if (plan.n_out == 0) return;
  const cudaStream_t stream = stream_for(in);
  if (plan.n_red > 0 && launch_unit_stride(name, op, in, plan, stream)) return;
  if (plan.n_red > 0 && launch_columns(name, op, in, plan, stream)) return;
  const size_t smem = static_cast<size_t>(plan.block.x) * plan.block.y * sizeof(Acc);
  // Nothing to read: the kernel writes the identities. An empty view's address (its storage's,
  // null for no bytes, plus its offset) need not point anywhere, so none is passed.
  const auto* data = plan.n_red == 0 ? nullptr : static_cast<const typename Op::In*>(in.data_ptr());
  if (plan.grid.y == 1) {
    launch_kernel("reduce_kernel", &reduce_kernel<Op>, plan.grid, plan.block, smem, stream, op, data, plan, nullptr);
    WICK_CUDA_CHECK_LAUNCH(name);
    return;
  }
  // Scratch for the partial states, from the caching allocator.
  Tensor scratch = empty({static_cast<int64_t>(plan.grid.y * plan.n_out * sizeof(Acc))}, Options(DType::UInt8, in.device()));
  Acc* partials = static_cast<Acc*>(scratch.data_ptr());
  launch_kernel("reduce_kernel", &reduce_kernel<Op>, plan.grid, plan.block, smem, stream, op, data, plan, partials);
  WICK_CUDA_CHECK_LAUNCH(name);
  launch_kernel("combine_partials_kernel", &combine_partials_kernel<Op>, blocks_for(plan.n_out), 256, 0, stream, op, partials, static_cast<int>(plan.grid.y), plan.n_out);
  WICK_CUDA_CHECK_LAUNCH(name);
}

template <class Out>
Out* out_ptr(const char* name, const Tensor& out) {
  WICK_CHECK(out.dtype() == dtype_v<Out>, name, ": the output of shape ", shape_str(out.shape()), " is ",
             dtype_name(out.dtype()), ", expected ", dtype_name(dtype_v<Out>));
  return static_cast<Out*>(out.data_ptr());
}

// CUDA's accumulators (kernels/reduce_math.h's reduce_fn): acc_t (float for 16-bit floats and
// float32), int for all/any (a shuffle moves one word), and the end of max/min and all/any
// chosen at run time, so that one kernel serves both (which halves the kernels compiled here;
// selecting between two whole combines instead cost ArgExtremumOp<int> a register spill).
using CudaReduce = ReducePolicy<acc_t, acc_t, int, /*kEndAtRunTime=*/true>;

template <ReduceOp Op, class T>
void reduce_op(const char* name, const Tensor& out, const Tensor& in, uint64_t mask, double param) {
  int64_t n = 1;
  for (int64_t d = 0; d < in.dim(); ++d)
    if ((mask >> d) & 1) n *= in.shape()[d];
  using Out = reduce_out_t<Op, T>;
  auto fn = reduce_fn<Op, CudaReduce, T>(param, n);
  launch_reduce(name, FnOp<T, decltype(fn), Out>{fn, out_ptr<Out>(name, out)}, in, mask);
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& in, uint64_t mask, double param) {
  const char* name = reduce_op_name(op);
  switch (op) {
#define WICK_REDUCE_CASE(e, ...)                                                                         \
  case ReduceOp::e:                                                                                      \
    if constexpr (reduce_accepts<ReduceOp::e, T>) return reduce_op<ReduceOp::e, T>(name, out, in, mask, param); \
    break;
    WICK_REDUCE_OPS(WICK_REDUCE_CASE)
#undef WICK_REDUCE_CASE
  }
  throw_unsupported_dtype(name, in.device(), in.dtype());
}

// out = op over the dims in dims_mask of in (see KernelTable::reduce).
void reduce(ReduceOp op, const Tensor& out, const Tensor& in, uint64_t dims_mask, double param) {
  if (out.numel() == 0) return;
  TensorDeviceGuard guard(in);
  visit_dtype(in.dtype(), [&]<class T>() { reduce_typed<T>(op, out, in, dims_mask, param); });
}

// values, indices = max (or min) of in along dim; the first index wins ties, NaN wins.
void reduce_with_index(ReduceOp op, const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim) {
  WICK_CHECK(op == ReduceOp::Max || op == ReduceOp::Min, "reduce_with_index: ", reduce_op_name(op),
             " has no index form");
  if (values.numel() == 0) return;
  TensorDeviceGuard guard(in);
  const char* name = reduce_op_name(op);
  visit_dtype(in.dtype(), [&]<class T>() {
    ArgExtremumOp<T> f{{{op == ReduceOp::Max}}, out_ptr<T>(name, values), out_ptr<int64_t>(name, indices)};
    launch_reduce(name, f, in, uint64_t{1} << dim);
  });
}

}  // namespace

void register_reduce(KernelTable& t) {
  t.reduce = &reduce;
  t.reduce_with_index = &reduce_with_index;
}

}  // namespace wick::cuda_kernels
