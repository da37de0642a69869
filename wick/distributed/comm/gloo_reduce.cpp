#include <wick/distributed/comm/gloo_reduce.h>

#include <algorithm>

#include <wick/tensor/error.h>

namespace wick::distributed::detail {

namespace {

template <class T, class Combine>
GlooReduceFunction elementwise(Combine combine) {
  return [combine](void* out, const void* a, const void* b, size_t n) {
    T* o = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i) {
      using C = compute_t<T>;
      o[i] = static_cast<T>(combine(static_cast<C>(x[i]), static_cast<C>(y[i])));
    }
  };
}

template <class T>
GlooReduceFunction function_for(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: return elementwise<T>([](auto x, auto y) { return x + y; });
    case ReduceOp::Max: return elementwise<T>([](auto x, auto y) { return std::max(x, y); });
    case ReduceOp::Min: return elementwise<T>([](auto x, auto y) { return std::min(x, y); });
    default: break;
  }
  wick::detail::throw_error("GlooCommunicator: ", reduce_op_name(op),
                            " is not a collective reduction (sum, mean, max or min)");
}

}  // namespace

GlooReduceFunction gloo_reduce_function(DType dtype, ReduceOp op) {
  WICK_CHECK(dtype != DType::Bool, "GlooCommunicator: cannot reduce bool tensors");
  return visit_dtype(dtype, [&]<class T>() -> GlooReduceFunction {
    if constexpr (std::is_same_v<T, bool>) {
      return nullptr;
    } else {
      return function_for<T>(op);
    }
  });
}

void divide_in_place(void* data, DType dtype, size_t n, int divisor) {
  WICK_CHECK(is_floating(dtype), "GlooCommunicator: mean needs a floating dtype, got ", dtype_name(dtype));
  visit_dtype(dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      return;
    } else {
      T* x = static_cast<T*>(data);
      using C = compute_t<T>;
      const C d = static_cast<C>(divisor);
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<T>(static_cast<C>(x[i]) / d);
    }
  });
}

}  // namespace wick::distributed::detail
