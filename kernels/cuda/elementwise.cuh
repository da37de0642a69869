#pragma once
// The launchers every CUDA elementwise kernel runs on.
//
// launch_elementwise<Out, In...>(op, out, {&in...}, f) writes out[i] = f(in_1[i], ...) for
// operands already expanded to out's shape (any strides, broadcast stride 0 included; out
// may alias an input exactly). Two paths:
// - every operand contiguous and 16-byte aligned (after merging dims, see
//   wick/tensor/strided_layout.h): each thread loads and stores packs of V elements, V chosen so
//   the widest operand moves 16 bytes. A loop step of a thread loads kUnroll packs of every
//   input into registers (by value: a pack read through a reference into global memory is
//   loaded element by element) before it computes and stores any, so several 16-byte loads
//   are in flight per thread; tools/kernel_gates checks the load width in the SASS;
// - a broadcast over rows (bias add [R, C] + [C], a row scale [R, C] * [R, 1], masks): the
//   innermost dim has unit stride in out and stride 1 or 0 in every input, its size a
//   multiple of V and every row start 16-byte aligned: packs of V elements as above, the
//   row's offsets computed once per pack, a stride-0 input loaded once and repeated;
// - otherwise one element per step, its offsets computed from the linear index with 32-bit
//   arithmetic when every offset fits (64-bit division is slow on GPUs), else 64-bit. The
//   32-bit paths divide by the dims' sizes through FastDivider (kernels/fast_divider.h): a
//   multiply-high and a shift instead of an emulated division per dim per element.
// launch_indexed<T>(op, out, g) writes out[i] = g(i) into a contiguous out.
// f and g are functors with a __device__ call operator (WICK_HD); they are copied to the GPU.
#include <array>
#include <cstdint>
#include <utility>

#include <wick/tensor/strided_layout.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/fast_divider.h"
#include "kernels/cuda/launch.cuh"

namespace wick::cuda_kernels {

inline constexpr int kThreads = 256;

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Offsets of every operand for a linear index, in 32-bit arithmetic (the index and every
// offset below 2^31: fits_32bit).
template <int N>
struct OffsetCalculator32 {
  int ndim = 0;
  FastDivider sizes[kMaxLayoutDims] = {};
  uint32_t strides[N][kMaxLayoutDims] = {};

  __device__ __forceinline__ void offsets(uint32_t i, uint32_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      uint32_t idx;
      i = sizes[d].divmod(i, idx);
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
  }
};

namespace detail {

// Packs of one input for the kUnroll steps of a tile, held in registers.
template <class T, int V, int U>
struct PackRun {
  Pack<T, V> p[U];
};

template <int V, int U, class T>
__device__ __forceinline__ PackRun<T, V, U> load_run(const T* in, int64_t first, int64_t stride) {
  PackRun<T, V, U> r;
  const Pack<T, V>* packs = reinterpret_cast<const Pack<T, V>*>(in);
#pragma unroll
  for (int u = 0; u < U; ++u) r.p[u] = packs[first + u * stride];
  return r;
}

// Computes and stores the tile whose input packs `runs` (taken by value: already loaded).
template <int V, int U, class F, class Out, class... R>
__device__ __forceinline__ void store_run(const F& f, Out* out, int64_t first, int64_t stride, R... runs) {
  Pack<Out, V>* packs = reinterpret_cast<Pack<Out, V>*>(out);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    Pack<Out, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = f(runs.p[u].v[k]...);
    packs[first + u * stride] = r;
  }
}

// Packs [first + u * stride] for u < U of every input, then of out: the loads are the
// arguments of store_run, so all of them are issued before the first result is computed.
template <int V, int U, class F, class Out, class... In>
__device__ __forceinline__ void apply_run(const F& f, Out* out, int64_t first, int64_t stride, const In*... in) {
  store_run<V, U>(f, out, first, stride, load_run<V, U>(in, first, stride)...);
}

template <class F, class Out, class Index, class... In, size_t... K>
__device__ __forceinline__ void apply_at(const F& f, Out* out, const Index* off, std::index_sequence<K...>,
                                         const In*... in) {
  out[off[0]] = f(in[off[K + 1]]...);
}

// Computes one pack from the input packs (taken by value: already loaded) and stores it.
template <int V, class F, class Out, class... P>
__device__ __forceinline__ void store_row_pack(const F& f, Out* out, P... packs) {
  Pack<Out, V> r;
#pragma unroll
  for (int k = 0; k < V; ++k) r.v[k] = f(packs.v[k]...);
  *reinterpret_cast<Pack<Out, V>*>(out) = r;
}

// Packs per thread per loop step of the contiguous path.
inline constexpr int kUnroll = 4;

// Tiles of kThreads * kUnroll packs: thread t takes packs tile + t + u * kThreads (so each
// load instruction of a warp covers 512 contiguous bytes), whole tiles first, then single
// packs, then the elements after the last whole pack.
template <int V, class F, class Out, class... In>
__global__ void __launch_bounds__(kThreads) contiguous_kernel(int64_t n, F f, Out* out, const In*... in) {
  const int64_t packs = n / V;
  constexpr int64_t kTile = int64_t{kThreads} * kUnroll;
  const int64_t tiles = packs / kTile;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x)
    apply_run<V, kUnroll>(f, out, t * kTile + threadIdx.x, kThreads, in...);
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (int64_t v = tiles * kTile + tid; v < packs; v += step) apply_run<V, 1>(f, out, v, 0, in...);
  for (int64_t i = packs * V + tid; i < n; i += step) out[i] = f(in[i]...);
}

template <class Calc, class Index, class F, class Out, class... In>
__global__ void strided_kernel(Index n, Calc calc, F f, Out* out, const In*... in) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[1 + sizeof...(In)];
    calc.offsets(i, off);
    apply_at(f, out, off, std::index_sequence_for<In...>{}, in...);
  }
}

// One pack of V elements of an input at `off`: a row of unit stride, or (stride 0) one
// element repeated.
template <int V, class T>
__device__ __forceinline__ Pack<T, V> load_row_pack(const T* in, uint32_t off, bool unit_stride) {
  if (unit_stride) return *reinterpret_cast<const Pack<T, V>*>(in + off);
  Pack<T, V> p;
  const T x = in[off];
#pragma unroll
  for (int k = 0; k < V; ++k) p.v[k] = x;
  return p;
}

template <int V, class Out, class F, class... In, size_t... K>
__device__ __forceinline__ void apply_row_pack(const F& f, Out* out, const uint32_t* off, uint32_t col,
                                               uint32_t unit_mask, std::index_sequence<K...>, const In*... in) {
  store_row_pack<V>(f, out + off[0] + col, load_row_pack<V>(in, off[K + 1] + ((unit_mask >> K) & 1u) * col,
                                                             (unit_mask >> K) & 1u)...);
}

// Packs of out's rows (the innermost dim, `row_packs` packs long): pack p is row
// p / row_packs, whose offsets `rows` gives over the outer dims. Bit k of unit_mask: input
// k has unit inner stride (else 0). Every input pack is loaded before the result is stored.
template <int V, class Calc, class F, class Out, class... In>
__global__ void __launch_bounds__(kThreads) rows_kernel(uint32_t packs, FastDivider row_packs, Calc rows,
                                                        uint32_t unit_mask, F f, Out* out, const In*... in) {
  const uint32_t step = gridDim.x * kThreads;
  for (uint32_t p = blockIdx.x * kThreads + threadIdx.x; p < packs; p += step) {
    uint32_t col;
    const uint32_t row = row_packs.divmod(p, col);
    uint32_t off[1 + sizeof...(In)];
    rows.offsets(row, off);
    apply_row_pack<V, Out>(f, out, off, col * V, unit_mask, std::index_sequence_for<In...>{}, in...);
  }
}

template <class T, class G>
__global__ void indexed_kernel(int64_t n, G g, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) out[i] = g(i);
}

template <class... T>
constexpr size_t widest() {
  size_t m = 1;
  ((m = sizeof(T) > m ? sizeof(T) : m), ...);
  return m;
}

inline bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Whether every offset (and the element count) of L fits in 31 bits.
template <int N>
bool fits_32bit(const StridedLayout<N>& L) {
  constexpr int64_t kMax = int64_t{1} << 31;
  if (L.numel >= kMax) return false;
  for (int k = 0; k < N; ++k) {
    int64_t reach = 0;
    for (int d = 0; d < L.ndim; ++d) reach += (L.sizes[d] - 1) * L.strides[k][d];
    if (reach >= kMax) return false;
  }
  return true;
}

// The calculator over L's first `ndim` dims (all of them by default).
template <int N>
OffsetCalculator32<N> to_32bit(const StridedLayout<N>& L, int ndim = -1) {
  OffsetCalculator32<N> c;
  c.ndim = ndim < 0 ? L.ndim : ndim;
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = FastDivider(static_cast<uint32_t>(L.sizes[d]));
    for (int k = 0; k < N; ++k) c.strides[k][d] = static_cast<uint32_t>(L.strides[k][d]);
  }
  return c;
}

// Whether L is a broadcast over rows the packs of V elements can take (see the top of the
// file): out's innermost dim of unit stride, every input's 1 or 0 (bit k-1 of *unit_mask
// set for operand k of unit stride), the row a multiple of V, and each row of a unit-stride
// operand starting on a pack (its base aligned, its outer strides multiples of V).
template <int V, int N>
bool rows_of_packs(const StridedLayout<N>& L, void* const (&base)[N], size_t pack_bytes[N], uint32_t* unit_mask) {
  if (L.ndim < 1 || L.sizes[L.ndim - 1] % V != 0) return false;
  const int inner = L.ndim - 1;
  *unit_mask = 0;
  for (int k = 0; k < N; ++k) {
    const int64_t s = L.strides[k][inner];
    if (s == 0 && k > 0) continue;
    if (s != 1 || !aligned_to(base[k], pack_bytes[k])) return false;
    for (int d = 0; d < inner; ++d)
      if (L.strides[k][d] % V != 0) return false;
    if (k > 0) *unit_mask |= 1u << (k - 1);
  }
  return true;
}

// Launches are named by kernel (the simulator's diagnostics and cudasimLastLaunchName, which
// the dispatch tests read); a launch error names the op (WICK_CUDA_CHECK_LAUNCH).
template <class Out, class... In, class F, size_t... K>
void launch(const char* op, const Tensor& out, const std::array<const Tensor*, sizeof...(In)>& ins, const F& f,
            std::index_sequence<K...>) {
  constexpr int N = 1 + static_cast<int>(sizeof...(In));
  const int64_t n = out.numel();
  if (n == 0) return;
  TensorDeviceGuard guard(out);
  cudaStream_t stream = stream_for(out);
  const StridedLayout<N> L = make_strided_layout<N>(op, {&out, ins[K]...});
  Out* o = static_cast<Out*>(out.data_ptr());
  constexpr int V = static_cast<int>(16 / widest<Out, In...>());
  const bool aligned = aligned_to(o, sizeof(Pack<Out, V>)) && (aligned_to(ins[K]->data_ptr(), sizeof(Pack<In, V>)) && ...);
  if (L.all_contiguous() && aligned) {
    launch_kernel("contiguous_kernel", &contiguous_kernel<V, F, Out, In...>, blocks_for(n, kThreads, V * kUnroll), kThreads, 0, stream, n, f, o,
                  static_cast<const In*>(ins[K]->data_ptr())...);
    WICK_CUDA_CHECK_LAUNCH(op);
    return;
  }
  const bool small = fits_32bit(L);
  if constexpr (N >= 3 && V > 1) {  // broadcasts take two operands or more
    void* const base[N] = {o, ins[K]->data_ptr()...};
    size_t pack_bytes[N] = {sizeof(Pack<Out, V>), sizeof(Pack<In, V>)...};
    uint32_t unit_mask = 0;
    if (small && rows_of_packs<V>(L, base, pack_bytes, &unit_mask)) {
      const uint32_t packs = static_cast<uint32_t>(n / V);
      launch_kernel("rows_kernel", &rows_kernel<V, OffsetCalculator32<N>, F, Out, In...>, blocks_for(packs, kThreads), kThreads, 0,
                    stream, packs, FastDivider(static_cast<uint32_t>(L.sizes[L.ndim - 1] / V)), to_32bit(L, L.ndim - 1),
                    unit_mask, f, o, static_cast<const In*>(ins[K]->data_ptr())...);
      WICK_CUDA_CHECK_LAUNCH(op);
      return;
    }
  }
  if (small) {
    launch_kernel("strided_kernel", &strided_kernel<OffsetCalculator32<N>, uint32_t, F, Out, In...>, blocks_for(n, kThreads), kThreads,
                  0, stream, static_cast<uint32_t>(n), to_32bit(L), f, o, static_cast<const In*>(ins[K]->data_ptr())...);
  } else {
    launch_kernel("strided_kernel", &strided_kernel<StridedLayout<N>, int64_t, F, Out, In...>, blocks_for(n, kThreads), kThreads, 0,
                  stream, n, L, f, o, static_cast<const In*>(ins[K]->data_ptr())...);
  }
  WICK_CUDA_CHECK_LAUNCH(op);
}

}  // namespace detail

template <class Out, class... In, class F>
void launch_elementwise(const char* op, const Tensor& out, const std::array<const Tensor*, sizeof...(In)>& ins,
                        const F& f) {
  detail::launch<Out, In...>(op, out, ins, f, std::index_sequence_for<In...>{});
}

template <class T, class G>
void launch_indexed(const char* op, const Tensor& out, const G& g) {
  const int64_t n = out.numel();
  if (n == 0) return;
  TensorDeviceGuard guard(out);
  launch_kernel(op, &detail::indexed_kernel<T, G>, blocks_for(n, kThreads), kThreads, 0, stream_for(out), n, g,
                static_cast<T*>(out.data_ptr()));
  WICK_CUDA_CHECK_LAUNCH(op);
}

}  // namespace wick::cuda_kernels
