// out = op(a, b) for every BinaryOp, and where(cond, a, b), on CUDA (=). The per-element
// math is binary_fn from kernels/elementwise_math.h, shared with the CPU kernels; 16-bit
// floats are computed in float. Integer remainder and floor_divide by zero give 0 here
// (the CPU kernel throws instead): a kernel cannot report it, and it must not trap.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include "kernels/convert.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/elementwise_math.h"

namespace wick::cuda_kernels {

namespace {

template <BinaryOp Op, class T>
using binary_storage_out_t = std::conditional_t<(Op >= BinaryOp::Eq), bool, T>;

template <BinaryOp Op, class T>
struct BinaryFn {
  WICK_HD binary_storage_out_t<Op, T> operator()(T a, T b) const {
    using C = compute_t<T>;
    return convert<binary_storage_out_t<Op, T>>(binary_fn<Op, C>(static_cast<C>(a), static_cast<C>(b)));
  }
};

template <class T>
struct WhereFn {
  WICK_HD T operator()(bool c, T a, T b) const { return c ? a : b; }
};

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const char* name = binary_op_name(op);
  const DType out_dtype = binary_op_is_comparison(op) ? DType::Bool : a.dtype();
  WICK_CHECK(a.dtype() == b.dtype() && out.dtype() == out_dtype, name, ": dtypes ", dtype_name(a.dtype()), " and ",
             dtype_name(b.dtype()), " -> ", dtype_name(out.dtype()), " do not fit the kernel (expected equal inputs and ",
             dtype_name(out_dtype), " output)");
  visit_dtype(a.dtype(), [&]<class T>() {
    visit_binary_op(op, [&]<BinaryOp Op>() {
      if constexpr (binary_supports<Op, compute_t<T>>()) {
        launch_elementwise<binary_storage_out_t<Op, T>, T, T>(name, out, {&a, &b}, BinaryFn<Op, T>{});
      } else {
        throw_unsupported_dtype(name, out.device(), a.dtype());
      }
    });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  WICK_CHECK(cond.dtype() == DType::Bool && a.dtype() == out.dtype() && b.dtype() == out.dtype(),
             "where: dtypes ", dtype_name(cond.dtype()), ", ", dtype_name(a.dtype()), ", ", dtype_name(b.dtype()),
             " -> ", dtype_name(out.dtype()), " do not fit the kernel (expected bool and two of the output's)");
  visit_dtype(out.dtype(), [&]<class T>() {
    launch_elementwise<T, bool, T, T>("where", out, {&cond, &a, &b}, WhereFn<T>{});
  });
}

}  // namespace

void register_binary(KernelTable& t) {
  t.binary = &binary;
  t.where = &where;
}

}  // namespace wick::cuda_kernels
