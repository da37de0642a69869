// Random numbers on the CPU from Philox (wick/tensor/philox.h): element i uses counter
// offset + i, so the result is the same for any thread count and equals the CUDA kernel's;
// stochastic rounding to bfloat16 draws its bits the same way.
#include <wick/tensor/dispatch.h>
#include <wick/tensor/philox.h>
#include <wick/tensor/tensor.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/random_draw.h"

namespace wick::cpu {

namespace {
void random(const Tensor& out, RandomKind kind, double a, double b, PhiloxState state) {
  visit_dtype(out.dtype(), [&]<class T>() {
    T* p = static_cast<T*>(out.data_ptr());
    parallel_for(0, out.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) p[i] = random_draw<T>(kind, a, b, state, static_cast<uint64_t>(i));
    });
  });
}

void stochastic_round(const Tensor& out, const Tensor& in, PhiloxState state) {
  BFloat16* o = out.data<BFloat16>();
  const float* x = in.data<float>();
  parallel_for(0, out.numel(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = stochastic_round_draw(x[i], state, static_cast<uint64_t>(i));
  });
}
}  // namespace

void register_random(KernelTable& t) {
  t.random = &random;
  t.stochastic_round = &stochastic_round;
}

}  // namespace wick::cpu
