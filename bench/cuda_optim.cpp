// The AdamW step of a GPT-2-small training step on CUDA: wick's fused multi-tensor AdamW
// (wick/tensor/optim_step.h) over float32 parameters shaped as examples/gpt's model at
// 12 layers, width 768, context 1024 and GPT-2's 50257-token vocabulary (lm_head tied to
// wte): 148 tensors, 124,439,808 elements. Gradients are set once; the state buffers are
// made by one step before the timing. Bandwidth counts what the update must move: parameter,
// exp_avg and exp_avg_sq read and written, the gradient read (28 bytes per element).
// PyTorch's twin (bench/torch_twins.py, adamw_step): torch.optim.AdamW(fused=True) on the
// same shapes, rebuilt from the label's layers/width/vocab/block fields. No target of its
// own: shown as % of copy bandwidth, and the step's share of the GPT step (gpt_compare.py).
#include <string>

#include <wick/wick.h>

#include "bench/bench_support.h"
#include "bench/cuda_timing.h"

namespace wick::bench {
namespace {

struct Gpt {
  int64_t layers, width, vocab, block;
};

// examples/gpt's named_parameters() order and shapes (a TransformerEncoderLayer per block).
std::vector<Shape> gpt_parameter_shapes(const Gpt& g) {
  const int64_t c = g.width;
  std::vector<Shape> shapes{{g.vocab, c}, {g.block, c}};
  for (int64_t i = 0; i < g.layers; ++i)
    for (const Shape& s :
         std::vector<Shape>{{3 * c, c}, {3 * c}, {c, c}, {c}, {4 * c, c}, {4 * c}, {c, 4 * c}, {c}, {c}, {c}, {c}, {c}})
      shapes.push_back(s);
  shapes.push_back({c});
  shapes.push_back({c});
  return shapes;
}

void adamw_step(benchmark::State& s, const Gpt& gpt) {
  guarded(s, [&] {
    manual_seed(0);
    NamedParameters params;
    int64_t numel = 0;
    for (const Shape& shape : gpt_parameter_shapes(gpt)) {
      Variable p(randn(shape, Device::cuda()), /*requires_grad=*/true);
      p.set_grad(Variable(randn(shape, Device::cuda())));
      numel += p.data().numel();
      // Named by index alone: GCC 12 warns (-Wrestrict, a false positive) on "p" + to_string(...).
      params.emplace_back(std::to_string(params.size()), p);
    }
    AdamW opt(params, AdamOptions{.lr = 1e-3, .weight_decay = 0.01});
    opt.step();
    time_on_gpu(s, static_cast<int>(sized(10, 1)), [&] { opt.step(); });
    report_bytes(s, 7.0 * sizeof(float) * static_cast<double>(numel));
    s.SetLabel("op=adamw_step dtype=float32 shape=" + std::to_string(numel) +
               " tensors=" + std::to_string(params.size()) + " layers=" + std::to_string(gpt.layers) +
               " width=" + std::to_string(gpt.width) + " vocab=" + std::to_string(gpt.vocab) +
               " block=" + std::to_string(gpt.block));
  });
}

bool register_all() {
  const Gpt gpt = smoke_run() ? Gpt{1, 64, 300, 32} : Gpt{12, 768, 50257, 1024};
  register_gpu_case("cuda/adamw_step/float32/gpt2_small", [gpt](benchmark::State& s) { adamw_step(s, gpt); });
  return true;
}

const bool registered = register_all();

}  // namespace
}  // namespace wick::bench
