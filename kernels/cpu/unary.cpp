// Unary elementwise ops on the CPU: out = f(in) (writes =), f from unary_fn
// (kernels/elementwise_math.h) with VecMath as the math provider so float32 exp, tanh, erf
// and everything built on them vectorise. 16-bit floats compute in float.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include <type_traits>

#include "kernels/cpu/isa_clones.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/elementwise_math.h"

namespace wick::cpu {

namespace {

// A float32 transcendental op over contiguous memory, in the CPU's widest vectors.
template <UnaryOp Op>
WICK_ISA_CLONES void contiguous_float(float* o, const float* x, int64_t n, const UnaryParams& p) {
  for (int64_t i = 0; i < n; ++i) o[i] = unary_fn<Op, float, VecMath>(x[i], p);
}

template <UnaryOp Op, class T>
void unary_typed(const StridedLayout<2>& L, const Tensor& out, const Tensor& in, const UnaryParams& p) {
  using C = compute_t<T>;
  using O = unary_out_t<Op, T>;
  O* o = static_cast<O*>(out.data_ptr());
  const T* x = static_cast<const T*>(in.data_ptr());
  auto f = [&p](T v) __attribute__((always_inline)) { return convert<O>(unary_fn<Op, C, VecMath>(static_cast<C>(v), p)); };
  // Transcendental ops cost far more per element than a copy, so they pay for threads sooner.
  const int64_t grain = unary_op_is_floating(Op) ? kElementwiseGrain / 8 : kElementwiseGrain;
  for_each_row(
      L,
      [&](const int64_t* off, int64_t n, const int64_t* st) {
        O* op = o + off[0];
        const T* xp = x + off[1];
        if (st[0] == 1 && st[1] == 1) {
          if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float> && unary_op_is_floating(Op))
            contiguous_float<Op>(op, xp, n, p);
          else
            for (int64_t i = 0; i < n; ++i) op[i] = f(xp[i]);
        } else if (st[1] == 0) {  // a broadcast input: one value for the whole row
          const O v = f(xp[0]);
          for (int64_t i = 0; i < n; ++i) op[i * st[0]] = v;
        } else {
          for (int64_t i = 0; i < n; ++i) op[i * st[0]] = f(xp[i * st[1]]);
        }
      },
      grain);
}

void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryParams& p) {
  if (out.numel() == 0) return;
  const char* name = unary_op_name(op);
  auto L = make_strided_layout<2>(name, {&out, &in});
  visit_unary_op(op, [&]<UnaryOp Op>() {
    visit_dtype(in.dtype(), [&]<class T>() {
      if constexpr (unary_supports<Op, compute_t<T>>()) unary_typed<Op, T>(L, out, in, p);
      else throw_unsupported_dtype(name, Device::cpu(), in.dtype());
    });
  });
}

}  // namespace

void register_unary(KernelTable& t) { t.unary = &unary; }

}  // namespace wick::cpu
