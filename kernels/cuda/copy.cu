// copy (with dtype conversion and any strides), fill and sequence on CUDA.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <cstring>

#include "kernels/convert.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"

namespace wick::cuda_kernels {

namespace {

template <class D, class S>
struct ConvertFn {
  WICK_HD D operator()(S s) const { return convert<D>(s); }
};

template <class T>
struct ValueFn {
  T value;
  WICK_HD T operator()() const { return value; }
};

template <class T>
struct SequenceFn {
  double start, step;
  WICK_HD T operator()(int64_t i) const { return convert<T>(start + static_cast<double>(i) * step); }
};

// dst = convert(src), elementwise (=). Same dtype and both contiguous: one memcpy.
void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    TensorDeviceGuard guard(dst);
    WICK_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToDevice,
                                    stream_for(dst)));
    return;
  }
  visit_dtype(dst.dtype(), [&]<class D>() {
    visit_dtype(src.dtype(), [&]<class S>() { launch_elementwise<D, S>("copy", dst, {&src}, ConvertFn<D, S>{}); });
  });
}

// out = v converted once to out's dtype (=). A value whose bytes are all equal (zero, for
// one) on a contiguous out is a memset.
void fill(const Tensor& out, const Scalar& v) {
  if (out.numel() == 0) return;
  visit_dtype(out.dtype(), [&]<class T>() {
    const T value = v.to<T>();
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    bool uniform = true;
    for (size_t i = 1; i < sizeof(T); ++i) uniform = uniform && bytes[i] == bytes[0];
    if (uniform && out.is_contiguous()) {
      TensorDeviceGuard guard(out);
      WICK_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), bytes[0], out.nbytes(), stream_for(out)));
      return;
    }
    launch_elementwise<T>("fill", out, {}, ValueFn<T>{value});
  });
}

// out[i] = start + i * step, computed in double (=); out is contiguous.
void sequence(const Tensor& out, double start, double step) {
  visit_dtype(out.dtype(), [&]<class T>() {
    launch_indexed<T>("sequence", out, SequenceFn<T>{start, step});
  });
}

}  // namespace

void register_copy(KernelTable& t) {
  t.copy = &copy;
  t.fill = &fill;
  t.sequence = &sequence;
}

}  // namespace wick::cuda_kernels
