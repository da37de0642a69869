// Binary elementwise ops and where on the CPU.
//   binary: out = f(a, b) (writes =), f from binary_fn (kernels/elementwise_math.h);
//           16-bit floats compute in float.
//   where:  out = cond ? a : b (writes =).
// Contiguous rows and rows where one operand is a broadcast scalar (stride 0) get their own
// plain loops so the compiler vectorises them.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/loops.h"
#include "kernels/elementwise_math.h"

namespace wick::cpu {

namespace {

template <BinaryOp Op, class T>
void binary_typed(const StridedLayout<3>& L, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = compute_t<T>;
  using O = binary_out_t<Op, T>;
  O* o = static_cast<O*>(out.data_ptr());
  const T* ap = static_cast<const T*>(a.data_ptr());
  const T* bp = static_cast<const T*>(b.data_ptr());
  auto f = [](T x, T y) __attribute__((always_inline)) {
    return convert<O>(binary_fn<Op, C>(static_cast<C>(x), static_cast<C>(y)));
  };
  // Integer division by zero has no value to give (and would trap), so it is an error, as
  // PyTorch's CPU raises (remainder, floor_divide and fmod alike).
  constexpr bool kCheckZero =
      std::is_integral_v<T> && (Op == BinaryOp::Remainder || Op == BinaryOp::FloorDivide || Op == BinaryOp::Fmod);
  for_each_row(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
    O* op = o + off[0];
    const T* x = ap + off[1];
    const T* y = bp + off[2];
    if constexpr (kCheckZero) {
      for (int64_t i = 0; i < n; ++i)
        WICK_CHECK(y[i * st[2]] != T(0), binary_op_name(Op), ": integer division by zero");
    }
    // The residual adds, biases and gradient sums of a training step: in the widest vectors.
    with_isa_clones<T>([&] {
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (int64_t i = 0; i < n; ++i) op[i] = f(x[i], y[i]);
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        const T yv = y[0];
        for (int64_t i = 0; i < n; ++i) op[i] = f(x[i], yv);
      } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
        const T xv = x[0];
        for (int64_t i = 0; i < n; ++i) op[i] = f(xv, y[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) op[i * st[0]] = f(x[i * st[1]], y[i * st[2]]);
      }
    });
  });
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  const char* name = binary_op_name(op);
  auto L = make_strided_layout<3>(name, {&out, &a, &b});
  visit_binary_op(op, [&]<BinaryOp Op>() {
    visit_dtype(a.dtype(), [&]<class T>() {
      if constexpr (binary_supports<Op, compute_t<T>>()) binary_typed<Op, T>(L, out, a, b);
      else throw_unsupported_dtype(name, Device::cpu(), a.dtype());
    });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  auto L = make_strided_layout<4>("where", {&out, &cond, &a, &b});
  visit_dtype(out.dtype(), [&]<class T>() {
    T* o = static_cast<T*>(out.data_ptr());
    const bool* c = static_cast<const bool*>(cond.data_ptr());
    const T* ap = static_cast<const T*>(a.data_ptr());
    const T* bp = static_cast<const T*>(b.data_ptr());
    for_each_row(L, [&](const int64_t* off, int64_t n, const int64_t* st) {
      T* op = o + off[0];
      const bool* cp = c + off[1];
      const T* x = ap + off[2];
      const T* y = bp + off[3];
      if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
        for (int64_t i = 0; i < n; ++i) op[i] = cp[i] ? x[i] : y[i];
      } else {
        for (int64_t i = 0; i < n; ++i) op[i * st[0]] = cp[i * st[1]] ? x[i * st[2]] : y[i * st[3]];
      }
    });
  });
}

}  // namespace

void register_binary(KernelTable& t) {
  t.binary = &binary;
  t.where = &where;
}

}  // namespace wick::cpu
