// Not a test program: tools/check_vectorised.py compiles this with the CPU kernels' flags
// and fails unless GCC vectorises each loop marked [simd]: the float32 loops of the
// transcendental unary ops (what unary.cpp's contiguous case runs) with vec_math.h's exp,
// tanh and erf. A loop that stops vectorising (GELU did not, before -fno-trapping-math) is
// several times slower. Then the float32 row loops of the fused LSTM and GRU steps (what
// kernels/cpu/recurrent.cpp runs; their many pointers need its ivdep, or GCC gives up on
// the alias checks). And the unit-stride fold of a reduction whose step is a select (float
// max; the loop is reduce_loops.h's fold_run, marked there): as 16 reductions GCC left it
// scalar, 3-5x slower. And the float updates of the fused optimizers (kernels/cpu/optim.cpp's
// loop, per row: Adam's and RMSprop's sqrt is a call, and the loop scalar, without
// -fno-math-errno; SGD's momentum was a branch before it was a select).
#include <cmath>

#include "kernels/cpu/reduce_loops.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/elementwise_math.h"
#include "kernels/optim_math.h"
#include "kernels/recurrent_math.h"

namespace wick::cpu {

template <UnaryOp Op>
void unary_loop(float* o, const float* x, long n, const UnaryParams& p);

#define WICK_PROBE(op)                                                                            \
  template <>                                                                                     \
  void unary_loop<UnaryOp::op>(float* o, const float* x, long n, const UnaryParams& p) {          \
    for (long i = 0; i < n; ++i) o[i] = unary_fn<UnaryOp::op, float, VecMath>(x[i], p);            \
  }

// One probe per line, so that the compiler's report names each op's loop by its line.
WICK_PROBE(Exp)  // [simd]
WICK_PROBE(Expm1)  // [simd]
WICK_PROBE(Tanh)  // [simd]
WICK_PROBE(Sigmoid)  // [simd]
WICK_PROBE(Erf)  // [simd]
WICK_PROBE(GeluTanh)  // [simd]
WICK_PROBE(GeluErf)  // [simd]
WICK_PROBE(Silu)  // [simd]
WICK_PROBE(SigmoidGrad)  // [simd]
WICK_PROBE(TanhGrad)  // [simd]
WICK_PROBE(GeluTanhGrad)  // [simd]
WICK_PROBE(GeluErfGrad)  // [simd]
WICK_PROBE(SiluGrad)  // [simd]

// The macro's line is the loop's line in the report, so each probe is one line.
#define WICK_RECURRENT_PROBE(name, Args, ...)                                          \
  void name(const recurrent_math::Args<float>& a) {                                   \
    _Pragma("GCC ivdep") for (long j = 0; j < a.hidden; ++j) recurrent_math::__VA_ARGS__(a, 0, j); \
  }

WICK_RECURRENT_PROBE(lstm_forward, ForwardArgs, forward_at<RecurrentCell::Lstm, float, VecMath, true>)  // [simd]
WICK_RECURRENT_PROBE(gru_forward, ForwardArgs, forward_at<RecurrentCell::Gru, float, VecMath, true>)  // [simd]
WICK_RECURRENT_PROBE(lstm_backward, BackwardArgs, backward_at<RecurrentCell::Lstm, float, VecMath>)  // [simd]
WICK_RECURRENT_PROBE(gru_backward, BackwardArgs, backward_at<RecurrentCell::Gru, float, VecMath>)  // [simd]

#define WICK_FUSED_PROBE(Hyper)                                                                \
  void fused_##Hyper(const Hyper& h, float* p, const float* g, float* const* state, long n) {         \
    const optim_math::FusedUpdate<float, Hyper> u(h);                                                \
    float* s[kFusedStates<Hyper>];                                                                    \
    for (size_t k = 0; k < kFusedStates<Hyper>; ++k) s[k] = state[k];                                 \
    for (long i = 0; i < n; ++i) {                                                                    \
      float pi = p[i], si[kFusedStates<Hyper>];                                                       \
      for (size_t k = 0; k < kFusedStates<Hyper>; ++k) si[k] = s[k][i];                               \
      u(pi, g[i], si);                                                                                \
      p[i] = pi;                                                                                      \
      for (size_t k = 0; k < kFusedStates<Hyper>; ++k) s[k][i] = si[k];                               \
    }                                                                                                 \
  }

WICK_FUSED_PROBE(SgdHyper)  // [simd]
WICK_FUSED_PROBE(AdamHyper)  // [simd]
WICK_FUSED_PROBE(RMSpropHyper)  // [simd]

float fold_max(const float* p, int64_t n) {
  return fold_run(Reducer<ExtremumFn<Fixed<true>, float>, float>{}, -INFINITY, p, n, 1, 0);
}

}  // namespace wick::cpu
