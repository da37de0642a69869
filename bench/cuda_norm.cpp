// CUDA layer norm at a transformer's shape: [8192, 768] (GPT-2 small's width, 8 sequences of
// 1024 tokens), bfloat16, with weight and bias (kernels/cuda/layer_norm.cu), three cases:
// - layer_norm_fwdbwd: the forward, then the backward's dx, dweight and dbias; bandwidth
//   counts what a fused pair must move: x read and y written by the forward, dy and x read
//   and dx written by the backward (five passes over the [8192, 768] tensor; the statistics
//   and parameters are < 1% of it);
// - layer_norm_fwd: the forward alone (two passes: x read, y written), the statistics saved
//   as training saves them;
// - layer_norm_bwd: the backward alone from the forward's saved statistics (three passes:
//   dy and x read, dx written), so a slow fwdbwd says which half is slow.
// PyTorch's twins (bench/torch_twins.py): F.layer_norm, then torch.autograd.grad of x,
// weight and bias; the forward under no_grad; the gradients of one saved forward
// (retain_graph). Target (issue 45): each >= 80% of copy bandwidth and no slower than
// PyTorch.
#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"

namespace wick::bench {
namespace {

const int kBatch = static_cast<int>(sized(20, 1));

enum class Pass { Forward, Backward, Both };

const char* op_name(Pass p) {
  return p == Pass::Forward ? "layer_norm_fwd" : p == Pass::Backward ? "layer_norm_bwd" : "layer_norm_fwdbwd";
}

void layer_norm_case(benchmark::State& s, const Shape& shape, DType dtype, Pass pass) {
  guarded(s, [&] {
    manual_seed(0);
    const Shape normalized{shape.back()};
    Tensor x = randn(shape, Device::cuda()).to(dtype), dy = randn(shape, Device::cuda()).to(dtype);
    Tensor w = randn(normalized, Device::cuda()).to(dtype), b = randn(normalized, Device::cuda()).to(dtype);
    const NormResult saved = layer_norm(x, normalized, w, b);
    time_on_gpu(s, kBatch, [&] {
      if (pass == Pass::Forward) {
        benchmark::DoNotOptimize(layer_norm(x, normalized, w, b).out.data_ptr());
        return;
      }
      const NormResult r = pass == Pass::Both ? layer_norm(x, normalized, w, b) : saved;
      NormGrads g = layer_norm_backward(dy, x, normalized, w, r.mean, r.invstd);
      benchmark::DoNotOptimize(g.input.data_ptr());
    });
    const double passes = pass == Pass::Forward ? 2.0 : pass == Pass::Backward ? 3.0 : 5.0;
    report_bytes(s, passes * static_cast<double>(x.numel()) * static_cast<double>(element_size(dtype)));
    s.SetLabel(std::string("op=") + op_name(pass) + " dtype=" + dtype_name(dtype) + " shape=" + dims_str(shape));
  });
}

bool register_all() {
  const Shape shape{sized(8192, 64), 768};
  for (const Pass pass : {Pass::Both, Pass::Forward, Pass::Backward})
    for (const DType dtype : {DType::BFloat16}) {
      const std::string id = std::string("cuda/") + op_name(pass) + "/" + dtype_name(dtype) + "/" + dims_str(shape);
      register_gpu_case(id, [shape, dtype, pass](benchmark::State& s) { layer_norm_case(s, shape, dtype, pass); });
    }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
