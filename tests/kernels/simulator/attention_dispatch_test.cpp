// Which attention kernels an op runs, asked of the CUDA simulator (cudasimLastLaunchName):
// bfloat16 and float16 at the tensor-core kernels' head dims must not fall back to the
// CUDA-core kernels (issue 44); float32, float64 and the other 16-bit head dims take the
// CUDA-core kernels; with dropout or without. Built only with -DWICK_CUDA=SIM.
#include <cudasim/cudasim.h>

#include <string>

#include <wick/tensor/attention.h>
#include <wick/tensor/cuda.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

struct Launched {
  std::string forward, backward;  // the last kernel each launched
};

Launched run(DType dt, int64_t e, int64_t ev, double dropout) {
  const Device cuda = Device::cuda();
  const Tensor q = random({1, 2, 20, e}, dt, 1, -1, 1).to(cuda), k = random({1, 2, 30, e}, dt, 2, -1, 1).to(cuda);
  const Tensor v = random({1, 2, 30, ev}, dt, 3, -1, 1).to(cuda), dout = random({1, 2, 20, ev}, dt, 4, -1, 1).to(cuda);
  const AttentionParams p{0.25, true, dropout, PhiloxState{9, 0}};
  Launched l;
  const AttentionResult r = attention_forward(q, k, v, Tensor(), p);
  l.forward = cudasimLastLaunchName();
  // The backward's delta (dout . out) is computed first; its last launch is dk/dv.
  (void)attention_backward(dout, q, k, v, Tensor(), r, p);
  l.backward = cudasimLastLaunchName();
  cuda::synchronize();
  return l;
}

TEST(CudaAttentionDispatch, SixteenBitInputsUseTheTensorCoreKernels) {
  WICK_REQUIRE_CUDA();
  for (DType dt : {DType::BFloat16, DType::Float16})
    for (int64_t d : {32, 64, 96, 128})
      for (double dropout : {0.0, 0.1}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " head dim " + std::to_string(d) + " dropout " +
                     std::to_string(dropout));
        const Launched l = run(dt, d, d, dropout);
        EXPECT_EQ(l.forward, "flash_forward_kernel");
        EXPECT_EQ(l.backward, "flash_dkdv_kernel");
      }
}

TEST(CudaAttentionDispatch, OtherCasesUseTheCudaCoreKernels) {
  WICK_REQUIRE_CUDA();
  struct Case {
    DType dt;
    int64_t e, ev;
  };
  for (const Case& c : {Case{DType::Float32, 64, 64}, Case{DType::Float64, 64, 64}, Case{DType::BFloat16, 256, 256},
                        Case{DType::Float16, 64, 32}, Case{DType::BFloat16, 40, 40}})
    for (double dropout : {0.0, 0.1}) {
      SCOPED_TRACE(std::string(dtype_name(c.dt)) + " E " + std::to_string(c.e) + " Ev " + std::to_string(c.ev) +
                   " dropout " + std::to_string(dropout));
      const Launched l = run(c.dt, c.e, c.ev, dropout);
      EXPECT_EQ(l.forward, "attention_forward_kernel");
      EXPECT_EQ(l.backward, "attention_dkdv_kernel");
    }
}

}  // namespace
}  // namespace wick::test
