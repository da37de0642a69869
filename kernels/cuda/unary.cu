// out = op(in) for every UnaryOp on CUDA (=). The per-element math is unary_fn from
// kernels/elementwise_math.h, the definition the CPU kernels use too; 16-bit floats are
// computed in float.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include "kernels/convert.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/elementwise_math.h"

namespace wick::cuda_kernels {

namespace {

template <UnaryOp Op, class T>
using unary_storage_out_t = std::conditional_t<Op == UnaryOp::LogicalNot, bool, T>;

template <UnaryOp Op, class T>
struct UnaryFn {
  UnaryParams p;
  WICK_HD unary_storage_out_t<Op, T> operator()(T x) const {
    using C = compute_t<T>;
    return convert<unary_storage_out_t<Op, T>>(unary_fn<Op, C>(static_cast<C>(x), p));
  }
};

void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryParams& p) {
  const char* name = unary_op_name(op);
  const DType out_dtype = op == UnaryOp::LogicalNot ? DType::Bool : in.dtype();
  WICK_CHECK(out.dtype() == out_dtype, name, ": output dtype ", dtype_name(out.dtype()), " for input dtype ",
             dtype_name(in.dtype()), ", expected ", dtype_name(out_dtype));
  visit_dtype(in.dtype(), [&]<class T>() {
    visit_unary_op(op, [&]<UnaryOp Op>() {
      if constexpr (unary_supports<Op, compute_t<T>>()) {
        launch_elementwise<unary_storage_out_t<Op, T>, T>(name, out, {&in}, UnaryFn<Op, T>{p});
      } else {
        throw_unsupported_dtype(name, out.device(), in.dtype());
      }
    });
  });
}

}  // namespace

void register_unary(KernelTable& t) { t.unary = &unary; }

}  // namespace wick::cuda_kernels
