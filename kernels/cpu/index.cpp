// Indexing kernels on the CPU: index_select, gather, scatter (= and +=), index_add, nonzero.
//
// Reads (index_select, gather) run one thread per range of output elements. Writes
// (scatter, index_add) split the work by position in every dim except `dim`: two index
// entries can only hit the same element of self when they share that position, so each
// thread owns its destinations, and within a position entries are applied in index order,
// which makes += (and = with repeated indices: the last one wins) deterministic.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/loops.h"

namespace wick::cpu {

namespace {

// t's storage seen with `shape`, t's strides except `stride_at_dim` at `dim`.
Tensor restrided(const Tensor& t, const Shape& shape, int64_t dim, int64_t stride_at_dim) {
  Shape st = t.strides();
  st[dim] = stride_at_dim;
  return Tensor(t.storage(), shape, st, t.offset(), t.dtype());
}

[[noreturn]] void throw_bad_index(const char* op, int64_t idx, int64_t dim, int64_t size) {
  detail::throw_error(op, ": index ", idx, " is out of bounds for dim ", dim, " with size ", size);
}

// out[p] = in[p with coordinate `dim` replaced by index[p]]; index has out's shape (any
// strides, 0 included), in any strides. Bad indices throw.
void gather_elements(const char* op, const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  if (out.numel() == 0) return;
  const Tensor base = restrided(in, out.shape(), dim, 0);
  auto L = make_strided_layout<3>(op, {&out, &index, &base});
  const int64_t size = in.size(dim), sdim = in.stride(dim);
  const int64_t* ip = index.data<int64_t>();
  visit_dtype(out.dtype(), [&]<class T>() {
    T* outp = static_cast<T*>(out.data_ptr());
    const T* inp = static_cast<const T*>(in.data_ptr());
    for_each_row(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
      T* o = outp + off[0];
      const int64_t* ix = ip + off[1];
      const T* b = inp + off[2];
      if (st[1] == 0) {  // one index for the whole row (index_select): a strided row copy
        const int64_t idx = *ix;
        if (idx < 0 || idx >= size) throw_bad_index(op, idx, dim, size);
        const T* s = b + idx * sdim;
        for (int64_t i = 0; i < n; ++i) o[i * st[0]] = s[i * st[2]];
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t idx = ix[i * st[1]];
        if (idx < 0 || idx >= size) throw_bad_index(op, idx, dim, size);
        o[i * st[0]] = b[i * st[2] + idx * sdim];
      }
    });
  });
}

// self[p with coordinate `dim` replaced by index[p]] (= or +=) src[p], for p over index's
// shape; src is at least that large, self contiguous. Bad indices throw.
void scatter_elements(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      bool accumulate) {
  if (index.numel() == 0) return;
  Shape positions = index.shape();
  const int64_t len = positions[dim];
  positions[dim] = 1;
  const Tensor dst1 = restrided(self, positions, dim, 0), idx1 = restrided(index, positions, dim, 0),
               src1 = restrided(src, positions, dim, 0);
  auto L = make_strided_layout<3>(op, {&dst1, &idx1, &src1});
  const int64_t size = self.size(dim), dst_sd = self.stride(dim), idx_sd = index.stride(dim),
                src_sd = src.stride(dim);
  const int64_t* ip = index.data<int64_t>();
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / len);
  visit_dtype(self.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    T* dp = static_cast<T*>(self.data_ptr());
    const T* sp = static_cast<const T*>(src.data_ptr());
    for_each_row(
        L,
        [&](const int64_t* off, int64_t n, const int64_t* st) {
          T* d = dp + off[0];
          for (int64_t j = 0; j < len; ++j) {
            const int64_t* ix = ip + off[1] + j * idx_sd;
            const T* s = sp + off[2] + j * src_sd;
            for (int64_t i = 0; i < n; ++i) {
              const int64_t idx = ix[i * st[1]];
              if (idx < 0 || idx >= size) throw_bad_index(op, idx, dim, size);
              T& t = d[i * st[0] + idx * dst_sd];
              const T v = s[i * st[2]];
              t = accumulate ? static_cast<T>(static_cast<C>(t) + static_cast<C>(v)) : v;
            }
          }
        },
        grain);
  });
}

// out = in.index_select(dim, index): index (1-d) is seen with out's shape, stride 0 off `dim`.
void index_select(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  Shape st(out.dim(), 0);
  st[dim] = index.stride(0);
  gather_elements("index_select", out, in, dim, Tensor(index.storage(), out.shape(), st, index.offset(), DType::Int64));
}

// out[p] = in[p with coordinate dim -> index[p]] (=).
void gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  gather_elements("gather", out, in, dim, index);
}

// self[p with coordinate dim -> index[p]] = src[p], or += when accumulate.
void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate) {
  scatter_elements(accumulate ? "scatter_add" : "scatter", self, dim, index, src, accumulate);
}

// self.select(dim, index[i]) += src.select(dim, i): a scatter-add whose index is the 1-d
// index seen with src's shape.
void index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  Shape st(src.dim(), 0);
  st[dim] = index.stride(0);
  const Tensor idx(index.storage(), src.shape(), st, index.offset(), DType::Int64);
  scatter_elements("index_add", self, dim, idx, src, true);
}

// Counts the nonzero elements of contiguous `in`; when out is defined, also writes their
// coordinates (row-major order) into out [count, in.dim()]. Chunks are counted in parallel,
// then each chunk writes its rows from its prefix offset.
int64_t nonzero(const Tensor& out, const Tensor& in) {
  const int64_t n = in.numel();
  if (n == 0) return 0;
  constexpr int64_t kChunk = int64_t{1} << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<int64_t> starts(static_cast<size_t>(chunks) + 1, 0);
  return visit_dtype(in.dtype(), [&]<class T>() {
    const T* p = static_cast<const T*>(in.data_ptr());
    auto nonzero_at = [&](int64_t i) { return static_cast<compute_t<T>>(p[i]) != compute_t<T>(0); };
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t count = 0;
        for (int64_t i = c * kChunk, end = std::min(n, i + kChunk); i < end; ++i) count += nonzero_at(i);
        starts[c + 1] = count;
      }
    });
    for (int64_t c = 0; c < chunks; ++c) starts[c + 1] += starts[c];
    if (!out.defined()) return starts[chunks];
    const int64_t nd = in.dim();
    const Shape& shape = in.shape();
    int64_t* o = out.data<int64_t>();
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      std::vector<int64_t> coord(static_cast<size_t>(nd));
      for (int64_t c = b; c < e; ++c) {
        int64_t i = c * kChunk;
        for (int64_t d = nd - 1, rest = i; d >= 0; --d) {
          coord[d] = rest % shape[d];
          rest /= shape[d];
        }
        int64_t* row = o + starts[c] * nd;
        for (const int64_t end = std::min(n, i + kChunk); i < end; ++i) {
          if (nonzero_at(i)) {
            for (int64_t d = 0; d < nd; ++d) row[d] = coord[d];
            row += nd;
          }
          for (int64_t d = nd - 1; d >= 0 && ++coord[d] == shape[d]; --d) coord[d] = 0;
        }
      }
    });
    return starts[chunks];
  });
}

}  // namespace

void register_index(KernelTable& t) {
  t.index_select = &index_select;
  t.gather = &gather;
  t.scatter = &scatter;
  t.index_add = &index_add;
  t.nonzero = &nonzero;
}

}  // namespace wick::cpu
