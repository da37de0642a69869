// Host synchronisations an op makes, counted by the CUDA simulator
// (cudasimHostSynchronizations: stream, device and event synchronize, and the copies that
// return once done): a wait inside a training step drains the GPU's queue and makes the
// step impossible to capture in a CUDA graph. Built only with -DWICK_CUDA=SIM.
#include <cudasim/cudasim.h>

#include <functional>
#include <string>

#include <wick/tensor/cuda.h>

#include "tests/support/reference.h"

namespace wick::test {
namespace {

// Host synchronisations made by f(), after a first call (which may make per-device state).
unsigned long long synchronizations(const std::function<void()>& f) {
  f();
  cuda::synchronize();
  const unsigned long long before = cudasimHostSynchronizations();
  f();
  const unsigned long long made = cudasimHostSynchronizations() - before;
  cuda::synchronize();
  return made;
}

TEST(CudaSynchronizations, CounterSeesTheWaits) {
  WICK_REQUIRE_CUDA();
  const Tensor x = ones({4}, Device::cuda());
  EXPECT_EQ(synchronizations([] { cuda::synchronize(); }), 1u);
  EXPECT_GE(synchronizations([&] { (void)sum(x).item<float>(); }), 1u);  // the copy, and the stream's
  EXPECT_EQ(synchronizations([&] { (void)sum(x); }), 0u);
}

TEST(CudaSynchronizations, CrossEntropyForwardAndBackwardMakeNone) {
  WICK_REQUIRE_CUDA();
  const int64_t N = 24, C = 1000;
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    const Tensor x = random({N, C}, dt, 81).cuda();
    const Tensor weight = random({C}, dt, 82, 0.5, 2).cuda();
    const Tensor probs = softmax(random({N, C}, dt, 83), 1).cuda();
    const Tensor g = random({N}, dt, 84).cuda();
    Tensor target = random({N}, DType::Int64, 85, 0, C - 1);
    target.data<int64_t>()[2] = -100;
    target = target.cuda();
    for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      for (int options = 0; options < 3; ++options) {
        CrossEntropyOptions o;
        o.reduction = red;
        if (options >= 1) {
          o.weight = weight;
          o.label_smoothing = 0.1;
        }
        const std::string what = std::string(dtype_name(dt)) + " reduction " + std::to_string(static_cast<int>(red)) +
                                 " options " + std::to_string(options);
        const Tensor& t = options == 2 ? probs : target;
        EXPECT_EQ(synchronizations([&] {
                    Variable v(x, true);
                    Variable loss = cross_entropy(v, t, o);
                    if (red == Reduction::None) {
                      loss.backward(g);
                    } else if (red == Reduction::Mean) {
                      loss.backward();
                    } else {
                      (loss * 2.0).backward();
                    }
                  }),
                  0u)
            << what << ": forward + backward";
        EXPECT_EQ(synchronizations([&] { (void)cross_entropy(x, t, o); }), 0u) << what << ": forward without gradient";
      }
    }
  }
}

}  // namespace
}  // namespace wick::test
