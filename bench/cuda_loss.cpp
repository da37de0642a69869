// CUDA cross-entropy at a language model's head: logits [8192, 50257] (GPT-2's vocabulary,
// 8 sequences of 1024 tokens), bfloat16, class-index targets, Mean (kernels/cuda/loss.cu).
// - cross_entropy_fwdbwd: through autograd as a training step runs it, loss =
//   cross_entropy(logits, target), loss.backward(): the forward's kernel writes d loss /
//   d logits while it reads the logits, and the backward's scale by the incoming 1 costs a
//   launch. Bandwidth counts what a fused pair must move: the logits read once and their
//   gradient written once.
// - cross_entropy: the forward alone (no gradient wanted), the logits read once.
// PyTorch's twins (bench/torch_compare.py): F.cross_entropy then torch.autograd.grad of the
// logits; F.cross_entropy under no_grad. Target (issue 45): fwdbwd >= 80% of copy bandwidth
// and no slower than PyTorch.
#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"

namespace wick::bench {
namespace {

const int kBatch = static_cast<int>(sized(10, 1));

void cross_entropy_case(benchmark::State& s, const Shape& shape, DType dtype, bool backward) {
  guarded(s, [&] {
    manual_seed(0);
    const Tensor x = randn(shape, Device::cuda()).to(dtype);
    const Tensor target = randint(0, shape[1], {shape[0]}, Options(DType::Int64, Device::cuda()));
    time_on_gpu(s, kBatch, [&] {
      if (backward) {
        Variable logits(x, true);
        cross_entropy(logits, target).backward();
        benchmark::DoNotOptimize(logits.grad().data().data_ptr());
      } else {
        NoGradGuard no_grad;
        benchmark::DoNotOptimize(cross_entropy(Variable(x), target).data().data_ptr());
      }
    });
    report_bytes(s, (backward ? 2.0 : 1.0) * static_cast<double>(x.numel()) * static_cast<double>(element_size(dtype)));
    s.SetLabel(std::string("op=") + (backward ? "cross_entropy_fwdbwd" : "cross_entropy") +
               " dtype=" + dtype_name(dtype) + " shape=" + dims_str(shape));
  });
}

bool register_all() {
  const Shape shape{sized(8192, 16), sized(50257, 1031)};
  for (const bool backward : {true, false}) {
    const std::string id = std::string("cuda/") + (backward ? "cross_entropy_fwdbwd/" : "cross_entropy/") +
                           dtype_name(DType::BFloat16) + "/" + dims_str(shape);
    register_gpu_case(id, [shape, backward](benchmark::State& s) {
      cross_entropy_case(s, shape, DType::BFloat16, backward);
    });
  }
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
