// Stable sort of the rows of a contiguous [rows, n] tensor on the CPU: each task sorts
// whole rows, a row's positions ordered by std::stable_sort on keys read once into the
// compute type (16-bit floats as float), so equal keys keep their input order.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/sort_order.h"

namespace wick::cpu {

namespace {

template <class T>
void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  using C = compute_t<T>;
  const int64_t n = in.dim() == 0 ? 1 : in.shape().back();
  const int64_t rows = in.numel() / n;
  const T* x = static_cast<const T*>(in.data_ptr());
  T* v = values.data<T>();
  int64_t* ix = indices.data<int64_t>();
  // A comparison sort costs about n log n per row: fewer rows per task than elementwise ops.
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (4 * n));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<C> keys(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * n;
      for (int64_t i = 0; i < n; ++i) keys[i] = static_cast<C>(xr[i]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return key_before<C>(keys[a], keys[b], descending); });
      for (int64_t i = 0; i < n; ++i) {
        v[r * n + i] = xr[order[i]];
        ix[r * n + i] = order[i];
      }
    }
  });
}

void sort(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  if (in.numel() == 0) return;
  visit_dtype(in.dtype(), [&]<class T>() { sort_rows<T>(values, indices, in, descending); });
}

}  // namespace

void register_sort(KernelTable& t) { t.sort = &sort; }

}  // namespace wick::cpu
