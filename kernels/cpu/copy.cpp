// copy (with dtype conversion and any strides), fill and sequence on the CPU.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <cstring>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/loops.h"

namespace wick::cpu {

// dst = convert(src), elementwise.
void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    char* d = static_cast<char*>(dst.data_ptr());
    const char* s = static_cast<const char*>(src.data_ptr());
    const int64_t es = static_cast<int64_t>(dst.element_size());
    parallel_for(0, dst.numel(), 1 << 18, [&](int64_t b, int64_t e) { std::memcpy(d + b * es, s + b * es, (e - b) * es); });
    return;
  }
  auto L = make_strided_layout<2>("copy", {&dst, &src});
  visit_dtype(dst.dtype(), [&]<class D>() {
    visit_dtype(src.dtype(), [&]<class S>() {
      D* d = static_cast<D*>(dst.data_ptr());
      const S* s = static_cast<const S*>(src.data_ptr());
      for_each_row(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
        D* dp = d + off[0];
        const S* sp = s + off[1];
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i) dp[i] = convert<D>(sp[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = convert<D>(sp[i * st[1]]);
        }
      });
    });
  });
}

// out = v, converted once to out's dtype.
void fill(const Tensor& out, const Scalar& v) {
  auto L = make_strided_layout<1>("fill", {&out});
  visit_dtype(out.dtype(), [&]<class T>() {
    const T value = v.to<T>();
    T* p = static_cast<T*>(out.data_ptr());
    for_each_row(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
      T* q = p + off[0];
      if (st[0] == 1) {
        for (int64_t i = 0; i < n; ++i) q[i] = value;
      } else {
        for (int64_t i = 0; i < n; ++i) q[i * st[0]] = value;
      }
    });
  });
}

// out[i] = start + i * step, computed in double.
void sequence(const Tensor& out, double start, double step) {
  visit_dtype(out.dtype(), [&]<class T>() {
    T* p = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = convert<T>(start + static_cast<double>(i) * step);
    });
  });
}

}  // namespace wick::cpu

namespace wick::cpu {
void register_copy(KernelTable& t) {
  t.copy = &copy;
  t.fill = &fill;
  t.sequence = &sequence;
}
}  // namespace wick::cpu
