// Scaled dot-product attention on CUDA (issue 44): wick's fused attention (the tensor-core
// kernels of kernels/cuda/flash_attention.cu for these dtypes and head dims), forward and
// forward + backward, bfloat16 and float16, causal and not, at B x H x T x d in
// {4x16x1024x64, 2x16x4096x64, 4x12x1024x128, 1x16x8192x128}. FLOP/s by FlashAttention's
// count: the forward's two products are 4 B H T^2 d (half when causal), the backward 2.5x
// the forward. bench/torch_compare.py times PyTorch's SDPA on the same cases with its flash
// and its cuDNN backends.
#include <wick/wick.h>

#include <cmath>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"

namespace wick::bench {
namespace {

struct Case {
  DType dtype;
  int64_t b, h, t, d;
  bool causal, backward;
};

void sdpa_case(benchmark::State& s, const Case& c) {
  guarded(s, [&] {
    const int64_t t = sized(c.t, 96), b = sized(c.b, 1), h = sized(c.h, 2);
    const Shape shape{b, h, t, c.d};
    manual_seed(0);
    const Tensor q = randn(shape, Device::cuda()).to(c.dtype), k = randn(shape, Device::cuda()).to(c.dtype);
    const Tensor v = randn(shape, Device::cuda()).to(c.dtype), dout = randn(shape, Device::cuda()).to(c.dtype);
    const AttentionParams p{1.0 / std::sqrt(static_cast<double>(c.d)), c.causal};
    const int batch = static_cast<int>(sized(c.t >= 4096 ? 3 : 10, 1));
    time_on_gpu(s, batch, [&] {
      const AttentionResult r = attention_forward(q, k, v, Tensor(), p);
      if (c.backward) {
        const AttentionGrads g = attention_backward(dout, q, k, v, Tensor(), r, p);
        benchmark::DoNotOptimize(g.k.data_ptr());
      }
      benchmark::DoNotOptimize(r.out.data_ptr());
    });
    const double forward = 4.0 * b * h * t * t * c.d / (c.causal ? 2.0 : 1.0);
    report_flops(s, c.backward ? 3.5 * forward : forward);
    s.SetLabel(std::string("op=sdpa_") + (c.backward ? "fwdbwd" : "fwd") + (c.causal ? "_causal" : "") +
               " dtype=" + dtype_name(c.dtype) + " shape=" + dims_str(shape));
  });
}

bool register_all() {
  const int64_t shapes[][4] = {{4, 16, 1024, 64}, {2, 16, 4096, 64}, {4, 12, 1024, 128}, {1, 16, 8192, 128}};
  for (DType dtype : {DType::BFloat16, DType::Float16})
    for (const auto& sh : shapes)
      for (bool backward : {false, true})
        for (bool causal : {false, true}) {
          const Case c{dtype, sh[0], sh[1], sh[2], sh[3], causal, backward};
          const std::string id = std::string("cuda/sdpa_") + (backward ? "fwdbwd" : "fwd") + (causal ? "_causal" : "") +
                                 "/" + dtype_name(dtype) + "/" + dims_str({sh[0], sh[1], sh[2], sh[3]});
          register_gpu_case(id, [c](benchmark::State& s) { sdpa_case(s, c); });
        }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
