// CUDA layer norm forward + backward at a transformer's shape: [8192, 768] (GPT-2 small's
// width, 8 sequences of 1024 tokens), bfloat16, with weight and bias; the backward gives
// dx, dweight and dbias (kernels/cuda/layer_norm.cu). Bandwidth counts what a fused pair must
// move: x read and y written by the forward, dy and x read and dx written by the backward
// (five passes over the [8192, 768] tensor; the statistics and parameters are < 1% of it).
// PyTorch's twin (bench/torch_compare.py, layer_norm_fwdbwd): F.layer_norm then
// torch.autograd.grad of x, weight and bias. Target (issue 45): >= 80% of copy bandwidth and
// no slower than PyTorch.
#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"

namespace wick::bench {
namespace {

const int kBatch = static_cast<int>(sized(20, 1));

void layer_norm_fwdbwd(benchmark::State& s, const Shape& shape, DType dtype) {
  guarded(s, [&] {
    manual_seed(0);
    const Shape normalized{shape.back()};
    Tensor x = randn(shape, Device::cuda()).to(dtype), dy = randn(shape, Device::cuda()).to(dtype);
    Tensor w = randn(normalized, Device::cuda()).to(dtype), b = randn(normalized, Device::cuda()).to(dtype);
    time_on_gpu(s, kBatch, [&] {
      NormResult r = layer_norm(x, normalized, w, b);
      NormGrads g = layer_norm_backward(dy, x, normalized, w, r.mean, r.invstd);
      benchmark::DoNotOptimize(g.input.data_ptr());
    });
    report_bytes(s, 5.0 * static_cast<double>(x.numel()) * static_cast<double>(element_size(dtype)));
    s.SetLabel("op=layer_norm_fwdbwd dtype=" + std::string(dtype_name(dtype)) + " shape=" + dims_str(shape));
  });
}

bool register_all() {
  const Shape shape{sized(8192, 64), 768};
  for (const DType dtype : {DType::BFloat16}) {
    const std::string id = std::string("cuda/layer_norm_fwdbwd/") + dtype_name(dtype) + "/" + dims_str(shape);
    register_gpu_case(id, [shape, dtype](benchmark::State& s) { layer_norm_fwdbwd(s, shape, dtype); });
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
