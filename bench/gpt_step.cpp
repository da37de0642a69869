// wick_bench_gpt_step: the time of one training step (forward, backward, AdamW) of
// examples/gpt's model, one configuration per process. bench/gpt_compare.py runs it
// interleaved with the same model in PyTorch: on the CPU against torch.nn's layers
// (tests/support/torch_gpt.py), on a GPU against eager AMP with SDPA and fused AdamW, and
// torch.compile.
//
//   wick_bench_gpt_step [--batch 32] [--block 128] [--layers 4] [--heads 4] [--embd 128]
//                       [--steps 10] [--warmup 2] [--vocab 256] [--device cpu|cuda]
//                       [--autocast off|bf16|fp16] [--cuda-graphs 0|1]
// GPT-2 small on a GPU: --device cuda --autocast bf16 --layers 12 --heads 12 --embd 768
// --block 1024 --vocab 50257 --batch 8.
//
// prints one JSON line: the sizes, "seconds" (the median step), "tokens_per_second",
// "host_seconds" (the median time the host spent in a step's calls), "peak_bytes" (the
// caching allocator's peak during the timed steps on a GPU, else 0) and "loss" (the last
// step's, read after the timing).
//
// The forward runs under autocast as the Trainer runs it (Precision::BFloat16: parameters
// float32, the forward's products 16-bit); AdamW is wick's fused multi-tensor step (the only
// one it has without amsgrad). On a GPU each step ends with an event on the stream and
// nothing waits between steps, so the host queues the next step while the GPU runs this one,
// as in training; the per-step times are the differences of consecutive events. With
// --cuda-graphs 1 (GPU only) AdamW is capturable, one step after the warm-up is captured in
// a CUDA graph and every timed step replays it (the same batch: the tokens do not change the
// work); the model's dropout must be 0 (a graph would repeat one mask).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <wick/wick.h>

#include "examples/gpt/model.h"

namespace {

struct Flags {
  int64_t batch = 32, block = 128, layers = 4, heads = 4, embd = 128, steps = 10, warmup = 2, vocab = 256;
  int64_t cuda_graphs = 0;
  std::string device = "cpu", autocast = "off";
};

bool parse(int argc, char** argv, Flags& f) {
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return false;
    }
    const std::string value = argv[i + 1];
    int64_t* number = flag == "--batch"         ? &f.batch
                      : flag == "--block"       ? &f.block
                      : flag == "--layers"      ? &f.layers
                      : flag == "--heads"       ? &f.heads
                      : flag == "--embd"        ? &f.embd
                      : flag == "--steps"       ? &f.steps
                      : flag == "--warmup"      ? &f.warmup
                      : flag == "--vocab"       ? &f.vocab
                      : flag == "--cuda-graphs" ? &f.cuda_graphs
                                                : nullptr;
    if (number) *number = std::stoll(value);
    else if (flag == "--device") f.device = value;
    else if (flag == "--autocast") f.autocast = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  if (f.device != "cpu" && f.device != "cuda") {
    std::fprintf(stderr, "--device must be cpu or cuda, got %s\n", f.device.c_str());
    return false;
  }
  if (f.autocast != "off" && f.autocast != "bf16" && f.autocast != "fp16") {
    std::fprintf(stderr, "--autocast must be off, bf16 or fp16, got %s\n", f.autocast.c_str());
    return false;
  }
  if (f.cuda_graphs && (f.device != "cuda" || f.warmup < 1)) {
    std::fprintf(stderr,
                 "--cuda-graphs 1 needs --device cuda and at least one warm-up step (the first runs eagerly)\n");
    return false;
  }
  return f.steps >= 1 && f.warmup >= 0;
}

int run(const Flags& f) {
  using namespace wick;
  const bool gpu = f.device == "cuda";
  const Device device = gpu ? Device::cuda() : Device::cpu();
  Generator g(1);
  examples::GPT model(
      {.vocab_size = f.vocab, .block_size = f.block, .n_layer = f.layers, .n_head = f.heads, .n_embd = f.embd},
      Options{}, &g);
  model.to(device);
  AdamW opt(model.named_parameters(), AdamOptions{.lr = 1e-3, .weight_decay = 0.01, .capturable = f.cuda_graphs != 0});
  const Tensor idx = randint(0, f.vocab, {f.batch, f.block}, DType::Int64, &g).to(device);
  const Tensor targets = randint(0, f.vocab, {f.batch, f.block}, DType::Int64, &g).to(device);

  Variable loss;
  auto step = [&] {
    opt.zero_grad();
    {
      std::optional<AutocastGuard> autocast;
      if (f.autocast != "off") autocast.emplace(device, f.autocast == "bf16" ? DType::BFloat16 : DType::Float16);
      loss = model.loss(idx, targets);
    }
    loss.backward();
    opt.step();
  };
  for (int64_t s = 0; s < f.warmup; ++s) step();
  std::optional<cuda::Graph> graph;
  if (f.cuda_graphs) {
    graph.emplace();
    graph->capture(step);
  }

  // host: the time of the step() call itself. On a GPU, where the host only queues work
  // (but for a sync inside a step), a host time close to the step's time says the step is
  // bound by launches, which CUDA graphs remove.
  std::vector<double> times, host;
  auto timed_step = [&] {
    const auto start = std::chrono::steady_clock::now();
    if (graph) graph->replay();
    else step();
    host.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  if (gpu) {
    cuda::synchronize();
    cuda::reset_peak_memory_stats();
    std::vector<cuda::Event> marks;
    marks.reserve(static_cast<size_t>(f.steps + 1));
    marks.emplace_back(true);
    marks.back().record();
    for (int64_t s = 0; s < f.steps; ++s) {
      timed_step();
      marks.emplace_back(true);
      marks.back().record();
    }
    marks.back().synchronize();
    for (size_t i = 1; i < marks.size(); ++i) times.push_back(marks[i - 1].elapsed_ms(marks[i]) * 1e-3);
  } else {
    for (int64_t s = 0; s < f.steps; ++s) timed_step();
    times = host;
  }
  const size_t peak = gpu ? cuda::memory_stats().peak_allocated : 0;
  const double last_loss = loss.data().item<double>();
  std::sort(times.begin(), times.end());
  std::sort(host.begin(), host.end());
  const double median = times[times.size() / 2], host_median = host[host.size() / 2];
  std::printf(
      "{\"batch\": %lld, \"block\": %lld, \"layers\": %lld, \"heads\": %lld, \"embd\": %lld, \"vocab\": %lld, "
      "\"device\": \"%s\", \"autocast\": \"%s\", \"graphs\": %s, \"steps\": %lld, \"seconds\": %.6f, "
      "\"tokens_per_second\": %.1f, \"host_seconds\": %.6f, \"peak_bytes\": %zu, \"loss\": %.4f}\n",
      static_cast<long long>(f.batch), static_cast<long long>(f.block), static_cast<long long>(f.layers),
      static_cast<long long>(f.heads), static_cast<long long>(f.embd), static_cast<long long>(f.vocab),
      f.device.c_str(), f.autocast.c_str(), f.cuda_graphs ? "true" : "false", static_cast<long long>(f.steps), median,
      median > 0 ? static_cast<double>(f.batch * f.block) / median : 0.0, host_median, peak, last_loss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!parse(argc, argv, f)) return 2;
  // The comparison script records the message as this configuration's result (an
  // out-of-memory batch, a missing kernel) and goes on with the others.
  try {
    return run(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wick_bench_gpt_step: %s\n", e.what());
    return 1;
  }
}
