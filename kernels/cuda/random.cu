// Random numbers on CUDA from Philox: element i of out = random_draw(counter offset + i)
// (kernels/random_draw.h, the function the CPU kernel calls), so for the same seed and
// offset both devices produce the same numbers; stochastic rounding to bfloat16 the same way.
// Writes out (=), contiguous.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/tensor.h>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/kernels.h"
#include "kernels/random_draw.h"

namespace wick::cuda_kernels {

namespace {

template <class T>
struct DrawFn {
  RandomKind kind;
  double a, b;
  PhiloxState state;
  WICK_HD T operator()(int64_t i) const { return random_draw<T>(kind, a, b, state, static_cast<uint64_t>(i)); }
};

void random(const Tensor& out, RandomKind kind, double a, double b, PhiloxState state) {
  visit_dtype(out.dtype(), [&]<class T>() { launch_indexed<T>("random", out, DrawFn<T>{kind, a, b, state}); });
}

struct StochasticRoundFn {
  const float* in;
  PhiloxState state;
  WICK_HD BFloat16 operator()(int64_t i) const { return stochastic_round_draw(in[i], state, static_cast<uint64_t>(i)); }
};

void stochastic_round(const Tensor& out, const Tensor& in, PhiloxState state) {
  launch_indexed<BFloat16>("stochastic_round", out, StochasticRoundFn{in.data<float>(), state});
}

}  // namespace

void register_random(KernelTable& t) {
  t.random = &random;
  t.stochastic_round = &stochastic_round;
}

}  // namespace wick::cuda_kernels
